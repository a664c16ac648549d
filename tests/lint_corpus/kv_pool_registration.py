"""A connector hands its KV caches to the pool registry of another module: the tables it
passes, with no annotation on the registry it is given, are stored there
(``kv_pool_registry``)."""

from __future__ import annotations

import torch
from kv_pool_registry import pack_layer_bases, pack_layer_lengths


def register_caches(registry, group_id: int, caches: list[torch.Tensor]) -> None:
    bases = [cache.data_ptr() for cache in caches]
    counts = [cache.shape[0] for cache in caches]
    registry.register_group_bases(group_id, bases, counts)


def layer_table(caches: list[torch.Tensor]):
    bases = [cache.data_ptr() for cache in caches]
    lengths = [cache.nbytes for cache in caches]
    return pack_layer_bases(bases, lengths), pack_layer_lengths(lengths)
