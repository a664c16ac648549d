"""Addresses handed to native operators: ``torch.ops`` operators defined in this tree (their
schemas read here), operators whose schemas live in a compiled extension (every ``int`` is an
``int64_t``), the thin wrappers engines keep over them, and a torch function that takes an
address as ``int64_t``."""

from __future__ import annotations

import torch

torch.library.define(
    "kvcopy::copy_blocks", "(int src_base, int dst_base, Tensor block_ids, int block_bytes) -> ()"
)
torch.library.define("kvcopy::copy_table", "(Tensor src_ptrs, Tensor dst_ptrs, int n) -> ()")


@torch.library.custom_op("kvcopy::zero_region", mutates_args=())
def zero_region(base: int, nbytes: int) -> None:
    return None


def copy_blocks(src: torch.Tensor, dst: torch.Tensor, ids: torch.Tensor, size: int) -> None:
    s, d = src.data_ptr(), dst.data_ptr()
    torch.ops.kvcopy.copy_blocks(s, d, ids, size)  # expect: signed-storage


def copy_blocks_bits(src: torch.Tensor, dst: torch.Tensor, ids: torch.Tensor, size: int) -> None:
    s, d = src.data_ptr(), dst.data_ptr()
    s = s - 2**64 if s >= 2**63 else s  # clean
    d = d - 2**64 if d >= 2**63 else d  # clean
    torch.ops.kvcopy.copy_blocks(s, d, ids, size)  # clean


def copy_table(srcs: list[torch.Tensor], dsts: list[torch.Tensor]) -> None:
    src_ptrs = torch.tensor([t.data_ptr() for t in srcs], dtype=torch.uint64)  # clean
    dst_ptrs = torch.tensor([t.data_ptr() for t in dsts], dtype=torch.uint64)  # clean
    torch.ops.kvcopy.copy_table(src_ptrs, dst_ptrs, len(srcs))  # clean


def zero(buffer: torch.Tensor) -> None:
    torch.ops.kvcopy.zero_region(buffer.data_ptr(), buffer.nbytes)  # expect: signed-storage


def swap_blocks(src: torch.Tensor, dst: torch.Tensor, mapping: torch.Tensor) -> None:
    torch.ops._C_cache_ops.swap_blocks_ptr(  # expect: signed-storage
        src.data_ptr(), dst.data_ptr(), mapping
    )


def swap_blocks_tensors(src: torch.Tensor, dst: torch.Tensor, mapping: torch.Tensor) -> None:
    torch.ops._C_cache_ops.swap_blocks(src, dst, mapping)  # clean


def all_reduce(fa: int, x: torch.Tensor, out: torch.Tensor, reg_buffer: int, n: int) -> None:
    torch.ops._C_custom_ar.all_reduce.default(fa, x, out, reg_buffer, n)  # expect: signed-storage


def register_buffer(fa: int, peer_ptrs: list[int]) -> None:
    torch.ops._C_custom_ar.register_buffer(fa, peer_ptrs)  # expect: signed-storage


def launch_on_stream(fa: int, inp: torch.Tensor, cuda_stream: int, num_ctas: int) -> None:
    torch.ops._C_custom_ar.launch(fa, inp, cuda_stream, num_ctas)  # clean


def tensor_over(pointer: int, nbytes: int, device: torch.device) -> torch.Tensor:
    storage = torch._C._construct_storage_from_data_pointer(  # expect: signed-storage
        pointer, device, nbytes
    )
    return torch.empty(0, dtype=torch.uint8, device=device).set_(storage)


def host_register(ptr: int, num_bytes: int) -> bool:
    return bool(torch.ops._C.xpu_host_register(ptr, num_bytes))  # clean


def register_rdma_buffer(runtime, group_size: int) -> torch.Tensor:
    raddr, rkey = runtime.get_mr_info()
    keys = torch.tensor([rkey], dtype=torch.int32)  # clean
    prefix, _ = runtime.get_gid()
    prefixes = torch.tensor([prefix] * group_size, dtype=torch.int64)  # clean
    addresses = torch.tensor([raddr], dtype=torch.int64)  # expect: signed-storage
    return torch.cat([addresses, keys, prefixes])
