"""Per-layer pointer tables kept as lists of lists (one row per layer, appended to), and rows
chained into one flat table, the way MoE-offload and KV-pool code builds them."""

from __future__ import annotations

import itertools
from itertools import chain

import numpy as np
import torch


def layer_rows(layers: list[list[torch.Tensor]]) -> torch.Tensor:
    rows: list[list[int]] = [[] for _ in layers]
    for i, layer in enumerate(layers):
        for expert in layer:
            rows[i].append(expert.data_ptr())
    return torch.tensor(rows, dtype=torch.int64)  # expect: signed-storage


def layer_rows_unsigned(layers: list[list[torch.Tensor]]) -> torch.Tensor:
    rows: list[list[int]] = [[] for _ in layers]
    for i, layer in enumerate(layers):
        for expert in layer:
            rows[i].append(expert.data_ptr())
    return torch.tensor(rows, dtype=torch.uint64)  # clean


def layer_block_counts(layers: list[list[torch.Tensor]]) -> torch.Tensor:
    counts: list[list[int]] = [[] for _ in layers]
    for i, layer in enumerate(layers):
        for expert in layer:
            counts[i].append(expert.shape[0])
    return torch.tensor(counts, dtype=torch.int64)  # clean


def chained_kv(k_caches: list[torch.Tensor], v_caches: list[torch.Tensor]) -> torch.Tensor:
    rows = [[k.data_ptr() for k in k_caches], [v.data_ptr() for v in v_caches]]
    flat = list(itertools.chain(*rows))
    return torch.tensor(flat, dtype=torch.int64)  # expect: signed-storage


def chained_kv_from_rows(rows: list[list[torch.Tensor]]) -> np.ndarray:
    pointers = [[t.data_ptr() for t in row] for row in rows]
    return np.array(list(chain.from_iterable(pointers)), dtype=np.int64)  # expect: signed-storage


def chained_kv_unsigned(rows: list[list[torch.Tensor]]) -> np.ndarray:
    pointers = [[t.data_ptr() for t in row] for row in rows]
    return np.array(list(chain.from_iterable(pointers)), dtype=np.uint64)  # clean


def fromiter_kv(k_caches: list[torch.Tensor], v_caches: list[torch.Tensor]) -> np.ndarray:
    both = chain((k.data_ptr() for k in k_caches), (v.data_ptr() for v in v_caches))
    return np.fromiter(both, dtype=np.int64)  # expect: signed-storage


def fromiter_sizes(k_caches: list[torch.Tensor], v_caches: list[torch.Tensor]) -> np.ndarray:
    both = chain((k.numel() for k in k_caches), (v.numel() for v in v_caches))
    return np.fromiter(both, dtype=np.int64)  # clean
