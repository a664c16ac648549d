"""The idioms engines build their pointer tables with, followed by ``ptrport lint``: dataclass
and NamedTuple fields bound in ``cls(...)`` and factories, parameters and attributes annotated
with a class of the tree, buffers made by a factory passed in, and all of these across the
modules of one tree. Each idiom is flagged with an int64 buffer and left alone with uint64."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from ptrport.lint import file_lint
from ptrport.lint.checker import LintRun, lint_paths
from tests.lint_markers import compare, describe, labels

HEADER = """\
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

import numpy as np
import torch
"""

HOST_DEVICE_BUFFER = """
class HostDeviceBuffer:
    def __init__(self, n, dtype):
        self.cpu = torch.zeros(n, dtype=dtype)
        self.gpu = torch.zeros(n, dtype=dtype, device="cuda")
        self.np = self.cpu.numpy()
"""

# One module each: the idiom with its int64 buffer, and its twin with uint64.
CASES = {
    "dataclass fields bound by keyword in a classmethod": """
        @dataclass
        class CopyBuffers:
            src_ptrs: HostDeviceBuffer
            sizes: HostDeviceBuffer

            @classmethod
            def create(cls, n: int, make_buffer: Callable[..., HostDeviceBuffer]) -> "CopyBuffers":
                return cls(
                    src_ptrs=make_buffer(n, dtype=torch.int64),
                    sizes=make_buffer(n, dtype=torch.int32),
                )

        @dataclass
        class Uint64CopyBuffers:
            src_ptrs: HostDeviceBuffer
            sizes: HostDeviceBuffer

            @classmethod
            def create(cls, n: int, make_buffer: Callable[..., HostDeviceBuffer]):
                return cls(
                    src_ptrs=make_buffer(n, dtype=torch.uint64),
                    sizes=make_buffer(n, dtype=torch.int32),
                )

        def collect_meta(copy_bufs: CopyBuffers, state, blocks, offset):
            src_ptrs_np = copy_bufs.src_ptrs.np
            for block in blocks:
                src_ptrs_np[offset] = state[block].data_ptr()  # expect: signed-storage
                copy_bufs.sizes.np[offset] = state[block].nbytes  # clean
                offset += 1

        def collect_uint64(copy_bufs: Uint64CopyBuffers, state, blocks, offset):
            src_ptrs_np = copy_bufs.src_ptrs.np
            for block in blocks:
                src_ptrs_np[offset] = state[block].data_ptr()  # clean
                copy_bufs.sizes.np[offset] = state[block].nbytes  # clean
    """,
    "a dataclass of device tensors made in a classmethod, filled in a method": """
        @dataclass
        class StateAddresses:
            state_base_addrs: torch.Tensor
            num_layers: int = 0

            @classmethod
            def build(cls, n: int, device: str) -> StateAddresses:
                return cls(state_base_addrs=torch.zeros(n, dtype=torch.int64, device=device))

            def fill(self, states):
                for i, t in enumerate(states):
                    self.state_base_addrs[i] = t.data_ptr()  # expect: signed-storage

        @dataclass
        class Uint64StateAddresses:
            state_base_addrs: torch.Tensor
            num_layers: int = 0

            @classmethod
            def build(cls, n: int, device: str) -> Uint64StateAddresses:
                return cls(torch.zeros(n, dtype=torch.uint64, device=device), n)

            def fill(self, states):
                for i, t in enumerate(states):
                    self.state_base_addrs[i] = t.data_ptr()  # clean
    """,
    "NamedTuple fields bound by position in static factories": """
        class PointerColumns(NamedTuple):
            src: torch.Tensor
            lengths: torch.Tensor

            @staticmethod
            def empty(n: int) -> PointerColumns:
                lengths = torch.zeros(n, dtype=torch.int32)
                return PointerColumns(torch.zeros(n, dtype=torch.long), lengths)

        class Uint64PointerColumns(NamedTuple):
            src: torch.Tensor
            lengths: torch.Tensor

        def uint64_columns(n: int) -> Uint64PointerColumns:
            lengths = torch.zeros(n, dtype=torch.int32)
            return Uint64PointerColumns(torch.zeros(n, dtype=torch.uint64), lengths)

        def stage(columns: PointerColumns, same: Uint64PointerColumns, ts):
            for i, t in enumerate(ts):
                columns.src[i] = t.data_ptr()  # expect: signed-storage
                columns.lengths[i] = t.nbytes  # clean
                same.src[i] = t.data_ptr()  # clean

        def local(ts):
            columns = PointerColumns.empty(len(ts))
            columns.src[0] = ts[0].data_ptr()  # expect: signed-storage
            same = uint64_columns(len(ts))
            same.src[0] = ts[0].data_ptr()  # clean
    """,
    "annotated parameters, variables and attributes, and attributes reached through them": """
        class Tables:
            def __init__(self, n: int):
                self.ptrs = torch.zeros(n, dtype=torch.int64)
                self.uptrs = torch.zeros(n, dtype=torch.uint64)

        class Runner:
            tables: Tables
            spare: Optional[Tables] = None

        def stage(runner: Runner, ts, lookup):
            runner.tables.ptrs[0] = ts[0].data_ptr()  # expect: signed-storage
            runner.tables.uptrs[0] = ts[0].data_ptr()  # clean
            runner.spare.ptrs[1] = ts[1].data_ptr()  # expect: signed-storage
            tables: Tables = lookup("tables")
            tables.ptrs[2] = ts[2].data_ptr()  # expect: signed-storage
            tables.uptrs[2] = ts[2].data_ptr()  # clean

        def stage_later(tables: "Tables | None", ts):
            tables.ptrs[:] = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)  # clean
            tables.ptrs.fill_(ts[0].data_ptr())  # expect: signed-storage
    """,
    "buffers made by a factory passed in": """
        def make_table(n, make_buffer, allocator):
            ptrs = make_buffer(n, dtype=torch.int64)
            uptrs = make_buffer(n, dtype=torch.uint64)
            host = allocator.empty(n, dtype=np.int64)
            uhost = allocator.empty(n, dtype=np.uint64)
            return ptrs, uptrs, host, uhost

        def stage(ts, make_buffer, allocator):
            ptrs, uptrs, host, uhost = make_table(len(ts), make_buffer, allocator)
            ptrs[0] = ts[0].data_ptr()  # expect: signed-storage
            uptrs[0] = ts[0].data_ptr()  # clean
            host[0] = ts[0].data_ptr()  # expect: signed-storage
            uhost[0] = ts[0].data_ptr()  # clean
    """,
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _check(run: LintRun, files: list[Path]) -> None:
    __tracebackhide__ = True
    expected = labels(files)
    result = compare(run, expected)
    assert not result.missing, "missing:\n" + describe(run, result.missing)
    assert not result.unexpected, "unexpected:\n" + describe(run, result.unexpected)
    assert expected.expected and expected.clean


def _check_tree(root: Path, files: dict[str, str]) -> LintRun:
    """The package ``engine`` of ``files`` under ``root``, linted and checked against its
    expect/clean comments."""
    _write(root, {"engine/__init__.py": "", **files})
    run = lint_paths([root])
    _check(run, sorted(root.rglob("*.py")))
    return run


@pytest.mark.parametrize("name", list(CASES))
def test_each_idiom_is_followed_into_int64_and_not_into_uint64(tmp_path: Path, name: str) -> None:
    path = tmp_path / "case.py"
    path.write_text(HEADER + HOST_DEVICE_BUFFER + textwrap.dedent(CASES[name]), encoding="utf-8")
    _check(lint_paths([path]), [path])


def test_the_finding_is_at_the_store_and_its_fix_names_where_the_dtype_is_given(
    tmp_path: Path,
) -> None:
    path = tmp_path / "case.py"
    source = HEADER + HOST_DEVICE_BUFFER + textwrap.dedent(CASES[next(iter(CASES))])
    path.write_text(source, encoding="utf-8")
    [finding] = lint_paths([path]).reported
    lines = source.splitlines()
    assert "src_ptrs_np[offset] = state[block].data_ptr()" in lines[finding.line - 1]
    made = next(n for n, text in enumerate(lines, 1) if "dtype=torch.int64" in text)
    assert f"made at line {made}" in finding.message
    assert finding.fix.startswith(f"create `src_ptrs_np` with dtype=torch.uint64 (at line {made})")


# Across the modules of one tree.

BUFFERS = (
    HEADER
    + HOST_DEVICE_BUFFER
    + """

@dataclass
class CopyBuffers:
    src_ptrs: HostDeviceBuffer
    dst_ptrs: HostDeviceBuffer
    sizes: HostDeviceBuffer

    @classmethod
    def create(cls, n: int, make_buffer: Callable[..., HostDeviceBuffer]) -> CopyBuffers:
        return cls(
            src_ptrs=make_buffer(n, dtype=torch.int64),
            dst_ptrs=make_buffer(n, dtype=torch.uint64),
            sizes=make_buffer(n, dtype=torch.int32),
        )


@dataclass
class DeviceTable:
    addrs: torch.Tensor
    lengths: torch.Tensor


def make_table(n: int) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.int64)


def make_uint64_table(n: int) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.uint64)


class PointerPool:
    def __init__(self, buffers):
        self.ptrs = [b.data_ptr() for b in buffers]
        self.sizes = [b.nbytes for b in buffers]
"""
)


def test_a_dataclass_made_in_one_module_is_followed_where_another_stores(tmp_path: Path) -> None:
    run = _check_tree(
        tmp_path,
        {
            "engine/buffers.py": BUFFERS,
            "engine/meta.py": """
                from engine.buffers import CopyBuffers


                def collect_meta(copy_bufs: CopyBuffers, state, blocks, offset):
                    src_ptrs_np = copy_bufs.src_ptrs.np
                    for block in blocks:
                        src_ptrs_np[offset] = state[block].data_ptr()  # expect: signed-storage
                        copy_bufs.dst_ptrs.np[offset] = state[block].data_ptr()  # clean
                        copy_bufs.sizes.np[offset] = state[block].nbytes  # clean
            """,
            "engine/relative.py": """
                import torch

                from . import buffers
                from .buffers import CopyBuffers, DeviceTable


                def stage(copy_bufs: "CopyBuffers", t):
                    copy_bufs.src_ptrs.cpu[0] = t.data_ptr()  # expect: signed-storage
                    copy_bufs.dst_ptrs.cpu[0] = t.data_ptr()  # clean


                def stage_module(copy_bufs: buffers.CopyBuffers, t):
                    copy_bufs.src_ptrs.gpu.fill_(t.data_ptr())  # expect: signed-storage


                def built_here(ts):
                    table = DeviceTable(torch.zeros(len(ts), dtype=torch.int64), lengths=None)
                    table.addrs[0] = ts[0].data_ptr()  # expect: signed-storage
                    same = DeviceTable(addrs=torch.zeros(len(ts), dtype=torch.uint64), lengths=None)
                    same.addrs[0] = ts[0].data_ptr()  # clean
            """,
            "engine/functions.py": """
                from engine.buffers import make_table, make_uint64_table


                def stage(ts):
                    table = make_table(len(ts))
                    table[0] = ts[0].data_ptr()  # expect: signed-storage
                    same = make_uint64_table(len(ts))
                    same[0] = ts[0].data_ptr()  # clean
            """,
        },
    )
    [finding] = [f for f in run.reported if f.path.endswith("meta.py")]
    made = next(
        n for n, text in enumerate(BUFFERS.splitlines(), 1) if "dtype=torch.int64)," in text
    )
    assert f"(at {tmp_path.as_posix()}/engine/buffers.py:{made})" in finding.fix


def test_addresses_held_by_a_class_of_another_module_are_followed_into_storage(
    tmp_path: Path,
) -> None:
    _check_tree(
        tmp_path,
        {
            "engine/buffers.py": BUFFERS,
            "engine/staging.py": """
                import torch

                from engine.buffers import PointerPool


                def stage(pool: PointerPool, extra):
                    table = torch.tensor(pool.ptrs, dtype=torch.int64)  # expect: signed-storage
                    sizes = torch.tensor(pool.sizes, dtype=torch.int64)  # clean
                    same = torch.tensor(pool.ptrs, dtype=torch.uint64)  # clean
                    return table, sizes, same, extra.data_ptr()
            """,
        },
    )


def test_a_module_is_analysed_again_where_it_reads_what_a_class_of_another_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both modules store what they cannot see into int64 and use ``PointerPool``, whose
    ``ptrs`` hold addresses. ``staging`` reads ``ptrs`` on a parameter, and is analysed again
    once the pool is known; ``local`` names ``ptrs`` only as a parameter and as its own class's
    attribute, and is analysed once."""
    analysed: list[str] = []
    lint_file = file_lint.lint_file

    def counted(path: Path, **kwargs: Any) -> file_lint.FileResult:
        analysed.append(path.name)
        return lint_file(path, **kwargs)

    monkeypatch.setattr(file_lint, "lint_file", counted)
    _check_tree(
        tmp_path,
        {
            "engine/buffers.py": BUFFERS,
            "engine/staging.py": """
                import torch

                from engine.buffers import PointerPool


                def stage(pool: PointerPool, sizes):
                    table = torch.tensor(pool.ptrs, dtype=torch.int64)  # expect: signed-storage
                    return table, torch.tensor(sizes, dtype=torch.int64)  # clean
            """,
            "engine/local.py": """
                import torch

                from engine.buffers import PointerPool


                class Local:
                    def __init__(self, ptrs):
                        self.ptrs = list(ptrs)

                    def tables(self, t, sizes):
                        own = torch.tensor([t.data_ptr()], dtype=torch.uint64)  # clean
                        return own, torch.tensor(sizes, dtype=torch.int64)  # clean


                def pool_of(buffers):
                    return PointerPool(buffers)
            """,
        },
    )
    assert analysed.count("staging.py") == 2
    assert analysed.count("local.py") == 1


def test_a_module_is_analysed_again_where_it_reads_storage_a_class_of_another_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both modules store addresses where they cannot see the dtype and use ``Tables``, whose
    ``table`` is int64. ``fill`` reads ``table`` on a parameter, and is analysed again once
    ``Tables`` is known; ``other`` only makes one, and is analysed once."""
    analysed: list[str] = []
    lint_file = file_lint.lint_file

    def counted(path: Path, **kwargs: Any) -> file_lint.FileResult:
        analysed.append(path.name)
        return lint_file(path, **kwargs)

    monkeypatch.setattr(file_lint, "lint_file", counted)
    _check_tree(
        tmp_path,
        {
            "engine/tables.py": """
                import torch


                class Tables:
                    def __init__(self, n):
                        self.table = torch.zeros(n, dtype=torch.int64)
                        self.counts = torch.zeros(n, dtype=torch.int32)
            """,
            "engine/fill.py": """
                from engine.tables import Tables


                def fill(tables: Tables, t):
                    tables.table[0] = t.data_ptr()  # expect: signed-storage
            """,
            "engine/other.py": """
                from engine.tables import Tables


                def make(n):
                    return Tables(n)


                def fill(out, t):
                    out[0] = t.data_ptr()  # clean
            """,
        },
    )
    assert analysed.count("fill.py") == 2
    assert analysed.count("other.py") == 1


def test_what_a_class_of_another_module_gives_later_is_followed_where_it_was_known_before(
    tmp_path: Path,
) -> None:
    """``Pool.b`` is an address once ``first_ptr`` is known (the first analysis again), and
    ``stage`` read it on a ``Pool`` known by then: it is analysed a third time."""
    _check_tree(
        tmp_path,
        {
            "engine/base.py": """
                def first_ptr(tensors):
                    return tensors[0].data_ptr()
            """,
            "engine/pool.py": """
                import torch

                from engine.base import first_ptr


                class Pool:
                    def __init__(self, tensors, counts):
                        self.a = tensors[0].data_ptr()
                        self.b = first_ptr(tensors)
                        self.counts = torch.tensor(counts, dtype=torch.int64)  # clean
            """,
            "engine/stage.py": """
                import torch

                from engine.pool import Pool


                def stage(pool: Pool, extra):
                    firsts = torch.tensor([pool.a], dtype=torch.uint64)  # clean
                    seconds = torch.tensor([pool.b], dtype=torch.int64)  # expect: signed-storage
                    return firsts, seconds, extra.data_ptr()
            """,
        },
    )


def test_a_tree_linted_from_inside_its_package_resolves_its_absolute_imports(
    tmp_path: Path,
) -> None:
    meta = """
        from engine.buffers import CopyBuffers


        def collect(copy_bufs: CopyBuffers, t):
            copy_bufs.src_ptrs.np[0] = t.data_ptr()  # expect: signed-storage
            copy_bufs.dst_ptrs.np[0] = t.data_ptr()  # clean
    """
    _write(tmp_path, {"engine/buffers.py": BUFFERS, "engine/meta.py": meta})
    _check(lint_paths([tmp_path / "engine"]), sorted(tmp_path.rglob("*.py")))


def test_the_index_is_the_same_when_the_run_is_split_across_processes(tmp_path: Path) -> None:
    meta = """
        from engine.buffers import CopyBuffers


        def collect(copy_bufs: CopyBuffers, t):
            copy_bufs.src_ptrs.np[0] = t.data_ptr()
    """
    files = {"engine/__init__.py": "", "engine/buffers.py": BUFFERS}
    files.update({f"engine/meta_{index}.py": meta for index in range(210)})
    _write(tmp_path, files)
    serial = lint_paths([tmp_path], jobs=1)
    parallel = lint_paths([tmp_path], jobs=2)
    assert len(serial.findings) == 210
    assert parallel.findings == serial.findings


# Members of the tree's classes, called or read on what is not followed; handles and chains.

SPECS = """
import torch


class Spec:
    def data_ptrs(self, layers):
        raise NotImplementedError

    @property
    def base_addr(self):
        \"\"\"The first layer's address.\"\"\"


class PerLayer(Spec):
    def data_ptrs(self, layers):
        return [self.caches[i].data_ptr() for i in layers]

    @property
    def base_addr(self):
        return self.caches[0].data_ptr()

    def sizes(self, layers):
        return [self.caches[i].nbytes for i in layers]


class Fused(Spec):
    def data_ptrs(self, layers):
        return [self.cache.data_ptr()]

    @property
    def base_addr(self):
        return self.cache.data_ptr()
"""


def test_a_member_the_tree_defines_only_as_giving_addresses_is_followed_through_helpers(
    tmp_path: Path,
) -> None:
    # utils returns what a method of specs gives; the connectors store what utils returns.
    _check_tree(
        tmp_path,
        {
            "engine/specs.py": SPECS,
            "engine/registry.py": """
                from engine.specs import Fused, PerLayer


                def get_spec(caches, fmt):
                    return (PerLayer if fmt else Fused)(caches)
            """,
            "engine/utils.py": """
                from engine.registry import get_spec


                def group_data_ptrs(caches, fmt, layers) -> list[int]:
                    return get_spec(caches, fmt).data_ptrs(layers)


                def group_sizes(caches, fmt, layers) -> list[int]:
                    return get_spec(caches, fmt).sizes(layers)
            """,
            "engine/connector.py": """
                import array

                import numpy as np
                import torch

                from engine.utils import group_data_ptrs, group_sizes


                def to_tensor(values):
                    packed = array.array("q", values)  # expect: signed-storage
                    return torch.frombuffer(packed, dtype=torch.long)


                class Connector:
                    def __init__(self, caches, fmt, groups, objs):
                        self.tables = []
                        for group in groups:
                            ptrs = group_data_ptrs(caches, fmt, group)
                            cpu = torch.empty(len(ptrs), dtype=torch.int64)
                            cpu.numpy()[:] = ptrs  # expect: signed-storage
                            same = torch.empty(len(ptrs), dtype=torch.uint64)
                            same.numpy()[:] = ptrs  # clean
                            sizes = group_sizes(caches, fmt, group)
                            counts = torch.tensor(sizes, dtype=torch.int64)  # clean
                            self.tables.append(to_tensor(ptrs))
                        bases = [o.base_addr for o in objs]
                        self.bases = np.array(bases, dtype=np.int64)  # expect: signed-storage
                        self.ubases = np.array(bases, dtype=np.uint64)  # clean
            """,
        },
    )


def test_a_member_some_class_of_the_tree_defines_otherwise_is_not_followed(
    tmp_path: Path,
) -> None:
    _check_tree(
        tmp_path,
        {
            "engine/specs.py": SPECS,
            "engine/other.py": """
                class Counter:
                    @property
                    def base_addr(self):
                        return self.first_index
            """,
            "engine/use.py": """
                import numpy as np


                def gather(objs, spec, layers):
                    bases = np.array([o.base_addr for o in objs], dtype=np.int64)  # clean
                    given = spec.data_ptrs(layers)
                    ptrs = np.array(given, dtype=np.int64)  # expect: signed-storage
                    return bases, ptrs, spec.caches[0].data_ptr()
            """,
        },
    )


def test_symmetric_memory_handles_from_helpers_and_classes_of_the_tree_give_their_addresses(
    tmp_path: Path,
) -> None:
    _check_tree(
        tmp_path,
        {
            "engine/symm.py": """
                import os


                def peer_rendezvous(tensor, group):
                    import torch.distributed._symmetric_memory as symm_mem

                    try:
                        return symm_mem.rendezvous(tensor, group)
                    finally:
                        os.environ["NO_MULTICAST"] = "0"


                def multicast_rendezvous(tensor, group):
                    import torch.distributed._symmetric_memory as symm_mem

                    handle = symm_mem.rendezvous(tensor, group)
                    return handle, int(handle.multicast_ptr or 0)
            """,
            "engine/common/__init__.py": "",
            "engine/common/mailbox.py": """
                import torch
                import torch.distributed._symmetric_memory as symm_mem

                from ..symm import multicast_rendezvous, peer_rendezvous


                class Mailbox:
                    def __init__(self, group, device, multicast=True):
                        self.buffer = symm_mem.empty((2, 4), dtype=torch.int32, device=device)
                        if multicast:
                            self.handle, self.mc = multicast_rendezvous(self.buffer, group)
                        else:
                            self.handle, self.mc = peer_rendezvous(self.buffer, group), 0


                class Exchange:
                    def __init__(self, group, device, parities=2):
                        recv = peer_rendezvous(symm_mem.empty(4, device=device), group)
                        size = 4096
                        ptrs = recv.buffer_ptrs
                        bases = [[int(b) + p * size for b in ptrs] for p in range(parities)]
                        peers = torch.tensor(bases, dtype=torch.int64)  # expect: signed-storage
                        self.upeers = torch.tensor(bases, dtype=torch.uint64)  # clean
                        i64 = dict(dtype=torch.int64, device=device)
                        u64 = dict(dtype=torch.uint64, device=device)
                        self.table = torch.tensor(recv.buffer_ptrs, **i64)  # expect: signed-storage
                        self.utable = torch.tensor(recv.buffer_ptrs, **u64)  # clean
                        self.ranks = torch.tensor([recv.rank], **i64)  # clean
            """,
            "engine/moe/__init__.py": "",
            "engine/moe/tail.py": """
                import torch

                from ..common.mailbox import Mailbox


                class Tail:
                    def __init__(self, group, device):
                        self.rs = Mailbox(group, device, multicast=False)
                        ptrs = self.rs.handle.buffer_ptrs
                        self.peers = torch.tensor(ptrs, dtype=torch.int64)  # expect: signed-storage
                        self.upeers = torch.tensor(ptrs, dtype=torch.uint64)  # clean
            """,
        },
    )


def test_a_module_without_an_address_source_is_read_where_it_imports_one(
    tmp_path: Path,
) -> None:
    # The consumers name no address source: only what they import from the tree gives one.
    _check_tree(
        tmp_path,
        {
            "engine/specs.py": SPECS,
            "engine/helpers.py": """
                from engine.specs import PerLayer


                def layer_ptrs(caches, layers):
                    return PerLayer(caches).data_ptrs(layers)


                def layer_sizes(caches, layers):
                    return PerLayer(caches).sizes(layers)
            """,
            "engine/tables.py": """
                import torch

                from .helpers import (  # the pointers and the sizes
                    layer_ptrs,
                    layer_sizes as sizes_of,
                )


                def build(caches, layers):
                    given = layer_ptrs(caches, layers)
                    ptrs = torch.tensor(given, dtype=torch.int64)  # expect: signed-storage
                    same = torch.tensor(given, dtype=torch.uint64)  # clean
                    sizes = torch.tensor(sizes_of(caches, layers), dtype=torch.int64)  # clean
                    return ptrs, same, sizes
            """,
            "engine/unrelated.py": """
                import torch

                from engine.helpers import layer_sizes


                def build(caches, layers):
                    return torch.tensor(layer_sizes(caches, layers), dtype=torch.int64)  # clean
            """,
        },
    )


def test_a_member_reaching_what_a_helper_returns_or_a_class_keeps_is_followed_there(
    tmp_path: Path,
) -> None:
    _check_tree(
        tmp_path,
        {
            "engine/specs.py": SPECS,
            "engine/collect.py": """
                import logging


                def all_ptrs(specs, layers):
                    out = []
                    for spec in specs:
                        logging.debug("pointers %s", spec.data_ptrs(layers))
                        out.extend(spec.data_ptrs(layers))
                    return out
            """,
            "engine/gather.py": """
                def first_ptrs(specs, layers):
                    ptrs = specs[0].data_ptrs(layers)
                    return ptrs


                class Holder:
                    def __init__(self, specs, layers):
                        self.ptrs = [p for spec in specs for p in spec.data_ptrs(layers)]
                        first, self.last = specs[0].data_ptrs(layers), specs[-1].data_ptrs(layers)
            """,
            "engine/store.py": """
                import torch

                from engine.collect import all_ptrs
                from engine.gather import Holder, first_ptrs


                def store(specs, layers):
                    every, first = all_ptrs(specs, layers), first_ptrs(specs, layers)
                    a = torch.tensor(every, dtype=torch.int64)  # expect: signed-storage
                    b = torch.tensor(first, dtype=torch.int64)  # expect: signed-storage
                    held = Holder(specs, layers)
                    c = torch.tensor(held.ptrs, dtype=torch.int64)  # expect: signed-storage
                    d = torch.tensor(held.last, dtype=torch.int64)  # expect: signed-storage
                    e = torch.tensor(held.ptrs, dtype=torch.uint64)  # clean
                    return a, b, c, d, e
            """,
        },
    )


def test_a_member_defined_in_several_modules_is_named_in_the_message(tmp_path: Path) -> None:
    layer = "class {0}:\n    def data_ptrs(self):\n        return [t.data_ptr() for t in self.ts]\n"
    run = _check_tree(
        tmp_path,
        {
            "engine/a.py": layer.format("PerLayer"),
            "engine/b.py": layer.format("Fused"),
            "engine/use.py": """
                import torch


                def tables(spec):
                    ptrs = spec.data_ptrs()
                    signed = torch.tensor(ptrs, dtype=torch.int64)  # expect: signed-storage
                    unsigned = torch.tensor(ptrs, dtype=torch.uint64)  # clean
                    return signed, unsigned
            """,
        },
    )
    [finding] = run.reported
    assert "an address from `.data_ptrs()`, which 2 modules of the tree define (one: " in (
        finding.message
    )
    assert "`t.data_ptr()` at " in finding.message
