"""Each rule of ``ptrport lint`` on small sources, with the near misses it must leave alone;
the reinterpretation check on the boundary values, and with Hypothesis."""

from __future__ import annotations

import ast
import struct
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptrport.lint import reinterpret
from ptrport.lint.checker import LintRun, lint_paths
from ptrport.lint.library import opens_ipc_memory
from ptrport.lint.reinterpret import Reading
from tests.lint_markers import compare, describe, labels

HEADER = """\
import array
import ctypes
import struct

import numpy as np
import torch
import triton
import triton.language as tl
"""

CASES = {
    "signed-storage": """
        PTR_DTYPE = torch.int64

        def stage(ts, n):
            ptrs = [t.data_ptr() for t in ts]
            table = torch.zeros(n, dtype=PTR_DTYPE)
            table[0] = ptrs[0]  # expect: signed-storage
            table[1] = ptrs[1] - ptrs[0]  # clean
            a = torch.tensor(ptrs, dtype=torch.long)  # expect: signed-storage
            b = np.array(ptrs, dtype=int)  # expect: signed-storage
            c = np.fromiter(ptrs, dtype="int64")  # expect: signed-storage
            d = np.int64(ptrs[0])  # expect: signed-storage
            e = torch.LongTensor(ptrs)  # expect: signed-storage
            f = torch.full((4,), ptrs[0], dtype=torch.int64)  # expect: signed-storage
            g = array.array("q", ptrs)  # expect: signed-storage
            h = struct.pack("<qi", ptrs[0], 5)  # expect: signed-storage
            table.fill_(ptrs[0])  # expect: signed-storage
            ok = torch.tensor(ptrs, dtype=torch.uint64)  # clean
            table[:] = ok  # clean
            k = array.array("Q", ptrs)  # clean
            m = struct.pack("<Qi", ptrs[0], 5)  # clean
    """,
    "descriptors and attributes": """
        class Buffers:
            def __init__(self, n):
                self.src = self._make_buffer(n, dtype=torch.int64)
                self.dst = self._make_buffer(n, dtype=torch.uint64)
                self.src_np = torch.zeros(n, dtype=torch.int64).numpy()

            def _make_buffer(self, n, dtype):
                return torch.zeros(n, dtype=dtype)

            def stage(self, ts):
                for i, t in enumerate(ts):
                    self.src.np[i] = t.data_ptr()  # expect: signed-storage
                    self.dst.np[i] = t.data_ptr()  # clean
                    self.src_np[i] = t.data_ptr()  # expect: signed-storage
                self.src.np[: len(ts)] = [t.data_ptr() for t in ts]  # expect: signed-storage

        def descriptors(ts):
            descs = [(t.data_ptr(), t.nbytes) for t in ts]
            table = torch.tensor(descs, dtype=torch.long)  # expect: signed-storage
            lengths = torch.tensor([n for _, n in descs], dtype=torch.int64)  # clean
            addrs = [p for p, _ in descs]
            sizes = torch.zeros(len(ts), dtype=torch.int32)
            for i, (p, n) in enumerate(descs):
                sizes[i] = n  # clean
            return torch.tensor(addrs, dtype=torch.uint64), table, lengths  # clean
    """,
    "a class of the module built with a dtype": """
        class CpuGpuBuffer:
            def __init__(self, size, dtype, device="cpu"):
                self.cpu = torch.zeros(size, dtype=dtype, pin_memory=True)
                self.gpu = torch.zeros(size, dtype=dtype, device=device)
                self.np = self.cpu.numpy()

        class Runner:
            def __init__(self, n):
                self.src_ptrs = CpuGpuBuffer(n, dtype=torch.int64)
                self.dst_ptrs = CpuGpuBuffer(n, dtype=torch.uint64)
                self.sizes = CpuGpuBuffer(n, dtype=torch.int32)

            def stage(self, srcs, dsts):
                for i, (s, d) in enumerate(zip(srcs, dsts)):
                    self.src_ptrs.np[i] = s.data_ptr()  # expect: signed-storage
                    self.dst_ptrs.np[i] = d.data_ptr()  # clean
                    self.sizes.np[i] = s.nbytes  # clean

        def local_table(ts):
            buf = CpuGpuBuffer(len(ts), torch.long)
            buf.np[: len(ts)] = [t.data_ptr() for t in ts]  # expect: signed-storage
    """,
    "inferred-int64": """
        def table(ts):
            ptrs = []
            for t in ts:
                ptrs.append(t.data_ptr())
            a = torch.tensor(ptrs)  # expect: inferred-int64
            storages = [t.untyped_storage() for t in ts]
            b = torch.as_tensor([s.data_ptr() for s in storages])  # expect: inferred-int64
            c = torch.tensor([t.nbytes for t in ts])  # clean
            d = np.array(ptrs)  # clean
    """,
    "narrow-storage and float-storage": """
        def narrow(ts):
            p = ts[0].data_ptr()
            a = torch.tensor([p], dtype=torch.int32)  # expect: narrow-storage
            b = ctypes.c_uint32(p)  # expect: narrow-storage
            c = np.array([p], dtype=np.float64)  # expect: float-storage
            d = float(p)  # expect: float-storage
            e = torch.tensor([p], dtype=torch.uint64).to(torch.float32)  # expect: float-storage
            sizes = torch.tensor([t.nbytes for t in ts], dtype=torch.int32)  # clean
            f = float(ts[0].nbytes)  # clean
            buf = torch.zeros(4)
            buf[0] = p  # expect: float-storage
    """,
    "triton-signed-param": """
        @triton.jit
        def copy_kernel(src_ptrs, base: tl.int64, ubase: tl.uint64, n: tl.int32):
            pass

        def to_bits(p):
            return p - (1 << 64) if p >= 1 << 63 else p

        def launch(t, ts):
            p = t.data_ptr()
            copy_kernel[(1,)](
                ts,
                p,  # expect: triton-signed-param
                p,  # clean
                len(ts),  # clean
            )
            copy_kernel[(1,)](ts, to_bits(p), p, 4)  # clean
            copy_kernel[(1,)](ts, 0, p, n=p)  # expect: triton-signed-param
    """,
    "mixed-sign-numpy": """
        def blocks(t, ids, n, block):
            base = np.uint64(t.data_ptr())
            idx = np.arange(n)
            a = base + idx * block  # expect: mixed-sign-numpy
            b = base + idx.astype(np.uint64) * np.uint64(block)  # clean
            c = base + 4096  # clean
            d = base + np.asarray(ids, dtype=np.int32)  # expect: mixed-sign-numpy
            e = base + np.asarray(ids, dtype=np.uint32)  # clean
            f = base + np.asarray(ids, dtype="u4")  # clean
            g = base + np.asarray(ids, dtype="i2")  # expect: mixed-sign-numpy
            lens = np.arange(n) * 2  # clean
    """,
    "signed-compare": """
        def check(ts):
            ptrs = [t.data_ptr() for t in ts]
            u = torch.tensor(ptrs, dtype=torch.uint64)
            assert u.tolist() == ptrs  # clean
            s = u.view(torch.int64)
            assert s.tolist() == ptrs  # expect: signed-compare
            assert [v & 0xFFFF_FFFF_FFFF_FFFF for v in s.tolist()] == ptrs  # clean
            assert s.view(torch.uint64).tolist() == ptrs  # clean
            assert ptrs[0] in s.tolist()  # expect: signed-compare
            assert int(s[0]) == ptrs[0]  # expect: signed-compare
            assert ptrs[0] % 256 == 0  # clean
            assert ts[0].data_ptr() == ts[1].data_ptr()  # clean
    """,
    "bad-bitcast": """
        SIGN = 1 << 63

        def to_i64(p):
            return p - (1 << 64) if p >= SIGN else p

        def stmt_i64(x):
            if x >= 1 << 63:
                x -= 1 << 64
            return x

        def two_returns(x):
            if x > 2**63 - 1:
                return x - 2**63  # expect: bad-bitcast
            return x

        def wrong_i64(p):
            return p - 2**63  # expect: bad-bitcast

        def stage(ts):
            ptrs = [t.data_ptr() for t in ts]
            a = torch.tensor([to_i64(p) for p in ptrs], dtype=torch.int64)  # clean
            b = torch.tensor([stmt_i64(p) for p in ptrs], dtype=torch.int64)  # clean
            c = [two_returns(p) for p in ptrs]
            d = [wrong_i64(p) for p in ptrs]
            e = [ctypes.c_int64(p).value for p in ptrs]
            f = torch.tensor(e, dtype=torch.int64)  # clean
            g = [struct.unpack("q", struct.pack("Q", p))[0] for p in ptrs]
            h = torch.tensor(g, dtype=torch.int64)  # clean
            i = [int.from_bytes(p.to_bytes(8, "little"), "little", signed=True) for p in ptrs]
            j = torch.tensor(i, dtype=torch.int64)  # clean
            k = [(p ^ (1 << 63)) - (1 << 63) for p in ptrs]
            m = torch.tensor(k, dtype=torch.int64)  # clean
            n = ptrs[0] & 0x7FFF_FFFF_FFFF_FFFF  # expect: bad-bitcast
            o = ptrs[0] % 2**64  # clean
            q = ptrs[0] & 0x00FF_FFFF_FFFF_FFFF  # clean
            r = ptrs[0] if ptrs[0] < 2**63 else ptrs[0] - 2**63  # expect: bad-bitcast
    """,
    "masks and offsets": """
        def page(ts, n):
            table = torch.zeros(n, dtype=torch.int64)
            aligned = ts[0].data_ptr() & ~0xFFF
            table[0] = aligned  # expect: signed-storage
            offset = ts[0].data_ptr() & 0xFFF
            table[1] = offset  # clean
            tagged = ts[0].data_ptr() >> 56
            table[2] = tagged  # clean
            seen = {t.data_ptr(): t for t in ts}  # clean
            print(f"{ts[0].data_ptr():#x}", hex(ts[0].data_ptr()))  # clean
    """,
    "an address offset by int64 arrays": """
        def descriptors(t, blocks, n):
            offsets = np.asarray(blocks, dtype=np.int64)
            table = np.zeros(n, dtype=np.int64)
            table[0:n] = t.data_ptr() + offsets * 4096  # expect: signed-storage
            bits = np.zeros(n, dtype=np.int64)
            bits[0:n] = table + offsets  # clean
            unsigned = np.zeros(n, dtype=np.uint64)
            unsigned[0:n] = np.uint64(t.data_ptr()) + offsets.astype(np.uint64)  # clean
    """,
    "a dict of addresses looked up by a computed key": """
        def arguments(ts, names, sizes):
            ptrs = {"a": ts[0].data_ptr(), "b": ts[1].data_ptr()}
            lens = {"a": sizes[0], "b": sizes[1]}
            chosen = [ptrs[k] for k in names]
            signed = torch.tensor(chosen, dtype=torch.int64)  # expect: signed-storage
            unsigned = torch.tensor(chosen, dtype=torch.uint64)  # clean
            counts = torch.tensor([lens[k] for k in names], dtype=torch.int64)  # clean
            return signed, unsigned, counts
    """,
    "cuda array interface and addressof": """
        def sources(t, obj, n):
            table = np.zeros(n, dtype=np.int64)
            table[0] = t.__cuda_array_interface__["data"][0]  # expect: signed-storage
            table[1] = ctypes.addressof(obj)  # expect: signed-storage
            table[2] = t.__cuda_array_interface__["shape"][0]  # clean
    """,
    "torch symmetric memory": """
        import torch.distributed._symmetric_memory as symm_mem
        from torch._C._distributed_c10d import _SymmetricMemory

        def peer_tables(t, group, n):
            handle = symm_mem.rendezvous(t, group)
            peers = torch.tensor(handle.buffer_ptrs, dtype=torch.int64)  # expect: signed-storage
            same = torch.tensor(handle.buffer_ptrs, dtype=torch.uint64)  # clean
            pads = torch.tensor(handle.signal_pad_ptrs)  # expect: inferred-int64
            table = torch.zeros(n, dtype=torch.int64)
            table[0] = handle.multicast_ptr  # expect: signed-storage
            table[1] = handle.buffer_ptrs_dev  # expect: signed-storage
            table[2] = handle.signal_pad_ptrs_dev  # expect: signed-storage
            table[3] = handle.world_size  # clean
            unsigned = torch.zeros(n, dtype=torch.uint64)
            unsigned[0] = handle.multicast_ptr  # clean
            unsigned[1] = handle.signal_pad_ptrs_dev  # clean
            return peers, same, pads

        def multicast(t):
            ptrs = _SymmetricMemory.rendezvous(t).buffer_ptrs
            a = np.array(ptrs, dtype=np.int64)  # expect: signed-storage
            b = np.array(ptrs, dtype=np.uint64)  # clean
            return a, b
    """,
    "IPC open calls": """
        from cuda import cudart

        def open_peers(lib, heap, handles, n):
            table = torch.zeros(n, dtype=torch.int64)
            unsigned = torch.zeros(n, dtype=torch.uint64)
            pointer = lib.cudaIpcOpenMemHandle(handles[0])
            table[0] = pointer.value  # expect: signed-storage
            unsigned[0] = pointer.value  # clean
            table[1] = lib.hipIpcOpenMemHandle(handles[1]).value  # expect: signed-storage
            table[2] = open_ipc_handle(handles[2])  # expect: signed-storage
            table[3] = ipc_open(handles[3])  # expect: signed-storage
            table[9] = heap.open_mem_handle(handles[8])  # expect: signed-storage
            unsigned[9] = heap.open_mem_handle(handles[8])  # clean
            err, ptr = cudart.cudaIpcOpenMemHandle(handles[4], 1)
            table[4] = ptr  # expect: signed-storage
            unsigned[4] = ptr  # clean
            table[5] = err  # clean
            table[6] = lib.cudaIpcOpenEventHandle(handles[5])  # clean
            table[7] = lib.is_ipc_open(handles[6])  # clean
            status = libcudart.cudaIpcOpenMemHandle(ctypes.byref(ctypes.c_void_p()), handles[7], 1)
            table[8] = status  # clean
    """,
    "numpy and ctypes addresses": """
        def host_addresses(arr, obj, n):
            table = np.zeros(n, dtype=np.int64)
            unsigned = np.zeros(n, dtype=np.uint64)
            table[0] = arr.ctypes.data  # expect: signed-storage
            unsigned[0] = arr.ctypes.data  # clean
            table[1] = arr.__array_interface__["data"][0]  # expect: signed-storage
            unsigned[1] = arr.__array_interface__["data"][0]  # clean
            table[2] = arr.__array_interface__["shape"][0]  # clean
            pointer = ctypes.cast(ctypes.byref(obj), ctypes.c_void_p)
            table[3] = pointer.value  # expect: signed-storage
            unsigned[3] = ctypes.cast(ctypes.byref(obj), ctypes.c_void_p).value  # clean
            table[4] = ctypes.cast(obj, ctypes.POINTER(ctypes.c_int)).contents.value  # clean
            table[5] = arr.ctypes.shape[0]  # clean
            b = torch.tensor([arr.ctypes.data], dtype=torch.int32)  # expect: narrow-storage
            return b
    """,
    "bit tests": """
        KERNEL_BIT = 1 << 63

        def describe(t, ts):
            ptr = t.data_ptr()
            if ptr & (1 << 63):  # clean
                kind = "kernel"
            while ptr >> 63 and ts:  # clean
                ts.pop()
            assert not ptr & KERNEL_BIT  # clean
            tag = "kernel" if ptr & KERNEL_BIT else "user"  # clean
            flag = bool(ptr & 0x7FFF_FFFF_FFFF_FFFF)  # clean
            if (ptr & (1 << 63)) != 0 and ptr >> 63 == 1:  # clean
                kind = "both"
            kernels = [t for t in ts if t.data_ptr() & KERNEL_BIT]  # clean
            bits = ptr - 2**64 if ptr & (1 << 63) else ptr  # clean
            wrong = ptr - 2**63 if ptr & (1 << 63) else ptr  # expect: bad-bitcast
            if (ptr - 2**63) & 0xFFF:  # expect: bad-bitcast
                kind = "offset"
            low = ptr & 0x7FFF_FFFF_FFFF_FFFF  # expect: bad-bitcast
            table = torch.tensor([bits], dtype=torch.int64)  # clean
            return kind, tag, flag, kernels, wrong, low, table
    """,
}


def _lint(tmp_path: Path, source: str) -> tuple[Path, LintRun]:
    path = tmp_path / "case.py"
    path.write_text(HEADER + textwrap.dedent(source), encoding="utf-8")
    return path, lint_paths([path])


@pytest.mark.parametrize("name", list(CASES))
def test_each_rule_finds_its_sites_and_only_those(tmp_path: Path, name: str) -> None:
    path, run = _lint(tmp_path, CASES[name])
    expected = labels([path])
    result = compare(run, expected)
    assert not result.missing, "missing:\n" + describe(run, result.missing)
    assert not result.unexpected, "unexpected:\n" + describe(run, result.unexpected)
    assert expected.expected and expected.clean


def test_every_rule_has_a_case() -> None:
    from ptrport.lint.rules import RULES

    marked = {rule for source in CASES.values() for rule in RULES if f"expect: {rule}" in source}
    assert marked == set(RULES)


# The reinterpretation check.


def _expression(text: str) -> ast.expr:
    node = ast.parse(text, mode="eval").body
    return node


def _classify(text: str, *, signed_input: bool = False) -> Reading | None:
    node = _expression(text)
    verdict = reinterpret.classify(
        node, lambda n: isinstance(n, ast.Name) and n.id == "p", {}, signed_input=signed_input
    )
    return verdict.reading if verdict else None


@pytest.mark.parametrize(
    ("text", "reading"),
    [
        ("p - 2**64 if p >= 2**63 else p", Reading.SIGNED),
        ("p - (1 << 64) if p > (1 << 63) - 1 else p", Reading.SIGNED),
        ("p if p < 0x8000_0000_0000_0000 else p - 0x1_0000_0000_0000_0000", Reading.SIGNED),
        ("(p ^ (1 << 63)) - (1 << 63)", Reading.SIGNED),
        ("p & 0xFFFF_FFFF_FFFF_FFFF", Reading.UNSIGNED),
        ("p % 2**64", Reading.UNSIGNED),
        ("p - 2**63", Reading.WRONG),
        ("p - 2**64 if p > 2**63 else p", Reading.WRONG),
        ("p % 2**63", Reading.WRONG),
        ("p & 0x7FFF_FFFF_FFFF_FFFF", Reading.WRONG),
        ("min(p, 2**63 - 1)", Reading.WRONG),
        ("p - 2**64", Reading.WRONG),
    ],
)
def test_a_reinterpretation_is_judged_at_the_boundaries(text: str, reading: Reading) -> None:
    assert _classify(text) is reading


@pytest.mark.parametrize(
    ("text", "reading"),
    [
        ("p + 2**64 if p < 0 else p", Reading.UNSIGNED),
        ("p & (2**64 - 1)", Reading.UNSIGNED),
        ("p % 2**64", Reading.UNSIGNED),
        ("p + 2**63 if p < 0 else p", Reading.WRONG),
        ("abs(p) if p < 0 else p", None),
    ],
)
def test_int64_bits_read_back_are_judged_too(text: str, reading: Reading | None) -> None:
    judged = _classify(text, signed_input=True)
    assert judged is reading or (reading is None and judged is not Reading.UNSIGNED)


@pytest.mark.parametrize("address", [0, 2**63 - 1, 2**63, 0xFFFF_85AB_D4E0_0000, 2**64 - 1])
def test_the_boundaries_are_among_the_samples(address: int) -> None:
    assert address in reinterpret.SAMPLES
    assert reinterpret.as_signed(address) == struct.unpack("<q", struct.pack("<Q", address))[0]


@given(
    shift=st.sampled_from([1 << 64, (1 << 64) - 1, (1 << 64) + 1, 1 << 63, (1 << 63) + 1])
    | st.integers(1, 1 << 65),
    threshold=st.sampled_from([1 << 63, (1 << 63) - 1, (1 << 63) + 1, 1 << 62])
    | st.integers(0, 1 << 64),
)
def test_a_conditional_shift_is_right_exactly_when_it_is_the_twos_complement(
    shift: int, threshold: int
) -> None:
    """``p - shift if p >= threshold else p`` is the int64 reading of every address only for
    shift 2**64 at threshold 2**63, and the check says so for every such pair."""
    text = f"p - {shift} if p >= {threshold} else p"
    right = shift == 1 << 64 and threshold == 1 << 63
    assert (_classify(text) is Reading.SIGNED) == right


@given(st.integers(0, 2**64 - 1))
def test_a_reinterpretation_judged_right_is_right_for_every_address(address: int) -> None:
    node = _expression("p - (1 << 64) if p > 0x7FFF_FFFF_FFFF_FFFF else p")
    assert _classify(ast.unparse(node)) is Reading.SIGNED
    value = eval(compile(ast.Expression(node), "<check>", "eval"), {"p": address})
    assert value == struct.unpack("<q", struct.pack("<Q", address))[0]


def test_the_fix_names_the_storage_where_it_is_made(tmp_path: Path) -> None:
    # A NumPy view of an int64 tensor is fixed where the tensor is made, in torch's dtype.
    _, run = _lint(
        tmp_path,
        """
        class Table:
            def __init__(self, n):
                self.direct = np.zeros(n, dtype=np.int64)
                self.buffer = make_buffer(n, dtype=torch.int64)
                self.ptrs = torch.zeros(n, dtype=torch.int64)
                self.ptrs_np = self.ptrs.numpy()

            def fill(self, ts):
                for i, t in enumerate(ts):
                    self.direct[i] = t.data_ptr()
                    self.buffer.np[i] = t.data_ptr()
                    self.ptrs_np[i] = t.data_ptr()
        """,
    )
    fixes = [finding.fix.split(", or ")[0] for finding in run.reported]
    assert fixes == [
        "create `self.direct` with dtype=np.uint64 (at line 12)",
        "create `self.buffer` with dtype=torch.uint64 (at line 13)",
        "create the tensor it views with dtype=torch.uint64 (at line 14)",
    ]


# The address sources a file may name alone.

ONLY_SOURCE = {
    "arr.ctypes.data": "arr.ctypes.data",
    "__array_interface__": 'arr.__array_interface__["data"][0]',
    "ctypes.cast": "ctypes.cast(arr, ctypes.c_void_p).value",
    "rendezvous": "symm_mem.rendezvous(arr, group).multicast_ptr",
    "cudaIpcOpenMemHandle": "lib.cudaIpcOpenMemHandle(handle).value",
    "ipc_open": "ipc_open(handle)",
    "open_ipc": "lib.open_ipc_handle(handle)",
    "open_mem_handle": "lib.open_mem_handle(handle)",
}


@pytest.mark.parametrize("name", list(ONLY_SOURCE))
def test_a_file_whose_only_address_source_is_a_new_one_is_read(tmp_path: Path, name: str) -> None:
    path = tmp_path / "only.py"
    path.write_text(
        "import ctypes\n\nimport numpy as np\nimport torch.distributed._symmetric_memory as "
        f"symm_mem\n\n\ndef stage(arr, lib, handle, group):\n    table = np.zeros(4, "
        f"dtype=np.int64)\n    table[0] = {ONLY_SOURCE[name]}\n",
        encoding="utf-8",
    )
    assert [(f.line, f.rule) for f in lint_paths([path]).findings] == [(9, "signed-storage")]


@pytest.mark.parametrize(
    ("name", "opens"),
    [
        ("cudaIpcOpenMemHandle", True),
        ("hipIpcOpenMemHandle", True),
        ("cuIpcOpenMemHandle", True),
        ("ipc_open", True),
        ("ipc_open_mem_handle", True),
        ("open_ipc_handle", True),
        ("open_mem_handle", True),
        ("OpenMemHandle", True),
        ("_open_ipc_buffer", True),
        ("IPC_OPEN", True),
        ("cudaIpcOpenEventHandle", False),
        ("open_ipc_event", False),
        ("is_ipc_open", False),
        ("reopen_ipc", False),
        ("cudaIpcGetMemHandle", False),
        ("open", False),
        ("reopen_mem_handle", False),
        ("open_memory", False),
    ],
)
def test_ipc_open_calls_are_named_as_such(name: str, opens: bool) -> None:
    assert opens_ipc_memory(name) is opens


def test_a_method_is_run_again_where_what_it_took_from_a_helper_has_changed(
    tmp_path: Path,
) -> None:
    """The table is made in the last method; ``record`` reaches it only through ``_slot``,
    which ``first`` ran before it (``record`` took the remembered result): what ``_slot`` read
    counts as read by ``record``, which is run again once the table is known."""
    path, run = _lint(
        tmp_path,
        """
        class Pointers:
            def __init__(self, n):
                self.n = n

            def first(self, t):
                return self._slot(), t

            def record(self, t):
                self._slot()[0] = t.data_ptr()  # expect: signed-storage

            def untouched(self, t):
                local = torch.zeros(1, dtype=torch.uint64)
                local[0] = t.data_ptr()  # clean

            def _slot(self):
                return self.table

            def allocate(self):
                self.table = torch.zeros(self.n, dtype=torch.int64)
        """,
    )
    expected = labels([path])
    result = compare(run, expected)
    assert not result.missing, "missing:\n" + describe(run, result.missing)
    assert not result.unexpected, "unexpected:\n" + describe(run, result.unexpected)
