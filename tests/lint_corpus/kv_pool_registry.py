"""A KV pool registry that other modules hand their buffer tables to: base addresses kept in
dicts keyed by group id and read back as numpy tables for the transfer engine. This module
holds no address source of its own: the addresses come from ``kv_pool_registration``."""

from __future__ import annotations

import numpy as np


class KVPoolRegistry:
    def __init__(self) -> None:
        self.group_bases: dict[int, list[int]] = {}
        self.group_block_counts: dict[int, list[int]] = {}
        self.unsigned_bases: dict[int, list[int]] = {}

    def register_group_bases(self, group_id: int, bases: list[int], counts: list[int]) -> None:
        self.group_bases[group_id] = bases
        self.group_block_counts[group_id] = counts
        self.unsigned_bases[group_id] = bases

    def base_table(self, group_id: int) -> np.ndarray:
        return np.asarray(self.group_bases[group_id], dtype=np.int64)  # expect: signed-storage

    def unsigned_base_table(self, group_id: int) -> np.ndarray:
        return np.asarray(self.unsigned_bases[group_id], dtype=np.uint64)  # clean

    def count_table(self, group_id: int) -> np.ndarray:
        return np.asarray(self.group_block_counts[group_id], dtype=np.int64)  # clean


def pack_layer_bases(bases: list[int], lengths: list[int]) -> np.ndarray:
    table = np.zeros((len(bases), 2), dtype=np.int64)
    table[:, 0] = bases  # expect: signed-storage
    table[:, 1] = lengths  # clean
    return table


def pack_layer_lengths(lengths: list[int]) -> np.ndarray:
    return np.array(lengths, dtype=np.int64)  # clean
