"""The flow's structure: every handler in its dispatch tables is a plain function, and one
module's analysis is freed by reference counting alone, with the cyclic collector off (a bound
method kept in a table, or the analysis kept by what it holds, would keep its tree alive)."""

from __future__ import annotations

import ast
import gc
import inspect
import textwrap
import weakref
from collections.abc import Iterator

import pytest

from ptrport.lint.flow import (
    ModuleFlow,
    arithmetic,
    expressions,
    library_calls,
    method_calls,
    statements,
)

SOURCE = textwrap.dedent(
    """
    import numpy as np
    import torch
    import triton


    @triton.jit
    def copy_kernel(src_ptrs, n):
        pass


    class Buffers:
        def __init__(self, tensors):
            self.ptrs = torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64)
            self.host = np.zeros(4, dtype=np.int64)

        def fill(self, tensors):
            for i, t in enumerate(tensors):
                self.host[i] = t.data_ptr()
            copy_kernel[(1,)](tensors[0].data_ptr(), len(tensors))
            return self.ptrs.tolist()


    def make(tensors):
        return Buffers(tensors)
    """
)


def _tables() -> Iterator[tuple[str, object]]:
    for table_name, table in (
        ("statements.EXECUTORS", statements.EXECUTORS),
        ("expressions.EVALUATORS", expressions.EVALUATORS),
        ("arithmetic.EVALUATORS", arithmetic.EVALUATORS),
        ("library_calls.LIBRARY_CALLS", library_calls.LIBRARY_CALLS),
        ("library_calls.DTYPE_CALLS", library_calls.DTYPE_CALLS),
        ("library_calls.BUILTIN_CALLS", library_calls.BUILTIN_CALLS),
        ("method_calls.PLAIN_METHODS", method_calls.PLAIN_METHODS),
        ("method_calls.STORAGE_METHODS", method_calls.STORAGE_METHODS),
    ):
        for key, handler in table.items():
            yield f"{table_name}[{key!r}]", handler


@pytest.mark.parametrize(
    ("where", "handler"),
    # In one order, by name: tables built from sets iterate in each process's hash order, and
    # a function's repr holds its address; both differ between xdist's workers.
    sorted(_tables(), key=lambda item: item[0]),
    ids=lambda x: getattr(x, "__qualname__", str(x))[:60],
)
def test_every_handler_in_the_tables_is_a_plain_function(where: str, handler: object) -> None:
    assert inspect.isfunction(handler), f"{where} is {handler!r}"


def test_an_analysis_is_freed_without_the_cyclic_collector() -> None:
    flow = ModuleFlow(ast.parse(SOURCE)).run()
    # The source exercises the handlers: a finding, a kernel and a launch.
    assert {site.rule for site in flow.sites.values()} == {"signed-storage"}
    assert [kernel.name for kernel in flow.kernels] == ["copy_kernel"]
    assert len(flow.launches) == 1
    freed = weakref.ref(flow)
    gc.disable()
    try:
        del flow
        assert freed() is None, "the analysis outlived its last reference"
    finally:
        gc.enable()
