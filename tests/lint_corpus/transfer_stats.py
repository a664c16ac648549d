"""Recording which buffers each KV transfer moved, for tracing and metrics; modelled on the shape
of the transfer-stats hooks of KV connectors, which keep numeric records next to timings."""

from __future__ import annotations

import time

import numpy as np
import torch


class TransferStats:
    """One row per transfer: source address, bytes, milliseconds."""

    def __init__(self, capacity: int) -> None:
        self.rows = np.zeros((capacity, 3), dtype=np.float64)
        self.labels: list[str] = []
        self.n = 0

    def record(self, src: torch.Tensor, started: float) -> None:
        elapsed_ms = (time.perf_counter() - started) * 1e3
        self.rows[self.n] = (src.data_ptr(), src.nbytes, elapsed_ms)  # expect: float-storage
        self.labels.append(f"{src.data_ptr():#x}")  # clean
        self.n += 1

    def record_offset(self, src: torch.Tensor, pool: torch.Tensor, started: float) -> None:
        """The source as an offset into its pool: a byte count, which float64 holds exactly."""
        elapsed_ms = (time.perf_counter() - started) * 1e3
        offset = src.data_ptr() - pool.data_ptr()
        self.rows[self.n] = (offset, src.nbytes, elapsed_ms)  # clean
        self.n += 1


def trace_event(src: torch.Tensor, dst: torch.Tensor, op: str) -> dict[str, object]:
    return {
        "op": op,
        "src": float(src.data_ptr()),  # expect: float-storage
        "dst": hex(dst.data_ptr()),  # clean
        "bytes": float(src.nbytes),  # clean
    }


def address_histogram(kv_caches: list[torch.Tensor]) -> np.ndarray:
    bases = np.array([t.data_ptr() for t in kv_caches], dtype=float)  # expect: float-storage
    return np.histogram(bases, bins=16)[0]


def address_gauge(t: torch.Tensor) -> np.float64:
    return np.float64(t.data_ptr())  # expect: float-storage


def transfer_matrix(srcs: list[torch.Tensor], dsts: list[torch.Tensor]) -> torch.Tensor:
    """Source and destination per transfer, exported with the timing tensor as float32."""
    pairs = [(s.data_ptr(), d.data_ptr()) for s, d in zip(srcs, dsts, strict=True)]
    return torch.tensor(pairs, dtype=torch.float32)  # expect: float-storage


def transfer_matrix_u64(srcs: list[torch.Tensor], dsts: list[torch.Tensor]) -> torch.Tensor:
    pairs = [(s.data_ptr(), d.data_ptr()) for s, d in zip(srcs, dsts, strict=True)]
    return torch.tensor(pairs, dtype=torch.uint64)  # clean


def legacy_export(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    """``torch.Tensor`` of a list builds the default float dtype (float32)."""
    return torch.Tensor([t.data_ptr() for t in kv_caches])  # expect: float-storage


def throughput(nbytes: list[int], elapsed_s: float) -> torch.Tensor:
    return torch.tensor(nbytes, dtype=torch.float64) / elapsed_s  # clean
