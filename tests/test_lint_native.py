"""What the lint reads of native parameters: ``torch.ops`` schemas written in a tree
(``torch.library`` definitions, ``custom_op`` functions), which of their types C++ takes as
``int64_t``, which names say an int is an address; and, through whole lint runs, a schema
defined in one module deciding a finding in another."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ptrport.lint.checker import lint_paths
from ptrport.lint.native import (
    int_annotation,
    names_address,
    names_host,
    names_memory,
    schemas_in,
    signed,
)

_TYPES = ("int", "int[]", "int?", "SymInt", "Tensor", "Tensor(a!)", "Tensor?", "float", "bool")
_NAMES = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)


@given(st.lists(st.tuples(st.sampled_from(_TYPES), _NAMES), min_size=1, max_size=8))
def test_a_schema_written_with_any_parameters_is_read_back_as_written(
    parameters: list[tuple[str, str]],
) -> None:
    written = ", ".join(f"{kind} {name}" for kind, name in parameters)
    source = f'lib.define("copy_op({written}) -> ()")\n'
    assert schemas_in(source) == {"copy_op": tuple(parameters)}


def test_a_schema_is_read_from_each_way_a_tree_defines_one() -> None:
    source = textwrap.dedent(
        """
        torch.library.define("kv::swap", "(int src, Tensor(a!) dst, int[] ptrs=[1, 2]) -> ()")
        lib.define("gather.out(Tensor x, *, int base) -> Tensor")


        @torch.library.custom_op("kv::zero", mutates_args=())
        def zero(
            base: int, shape: tuple[int, int], peers: list[int], t: torch.Tensor, scale: float = 1.0
        ) -> None:
            return None
        """
    )
    assert schemas_in(source) == {
        "swap": (("int", "src"), ("Tensor(a!)", "dst"), ("int[]", "ptrs")),
        "gather": (("Tensor", "x"), ("int", "base")),
        "zero": (
            ("int", "base"),
            ("tuple[int, int]", "shape"),
            ("int[]", "peers"),
            ("torch.Tensor", "t"),
            ("float", "scale"),
        ),
    }


def test_the_schema_types_cpp_takes_as_int64_are_the_ints() -> None:
    assert [kind for kind in _TYPES if signed(kind)] == ["int", "int[]", "int?", "SymInt"]


def test_an_int_named_for_memory_is_an_address_and_one_that_counts_is_not() -> None:
    addresses = ["raddr", "base_ptr", "kv_addrs", "ptr", "dst_address", "peer_pointers"]
    assert all(map(names_address, addresses))
    assert not any(
        map(names_address, ["num_ptrs", "n_addrs", "ptr_offset", "rkey", "pointer_count"])
    )
    assert names_memory("reg_buffer") and names_memory("ipc_tensors")
    assert not names_memory("reg_buffer_sz_bytes") and not names_memory("num_tensors")
    assert names_host("xpu_host_register") and not names_host("ghost_buffer")


def test_an_int_annotation_is_told_from_a_list_of_ints_and_from_any_other() -> None:
    def annotation(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body

    assert int_annotation(annotation("int")) == "int"
    assert int_annotation(annotation("Optional[int]")) == "int"
    assert int_annotation(annotation("list[int]")) == "list"
    assert int_annotation(annotation("typing.List[int]")) == "list"
    assert int_annotation(annotation("int | None")) == "int"
    assert int_annotation(annotation("torch.Tensor")) is None
    assert int_annotation(annotation("list[torch.Tensor]")) is None


def _tree(root: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, text in {"engine/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    run = lint_paths([root])
    return [(Path(f.path).name, f.line, f.message) for f in run.reported]


def test_a_schema_defined_in_another_module_decides_which_arguments_are_signed(
    tmp_path: Path,
) -> None:
    found = _tree(
        tmp_path,
        {
            "engine/ops.py": """
                import torch

                torch.library.define("kv::copy", "(Tensor dst_ptrs, int src) -> ()")
            """,
            "engine/use.py": """
                import torch


                def copy(dst, src):
                    torch.ops.kv.copy(dst.data_ptr(), 0)
                    torch.ops.kv.copy(dst, src.data_ptr())
                    torch.ops.kv.other(src.data_ptr())
            """,
        },
    )
    assert [(name, line) for name, line, _ in found] == [("use.py", 7), ("use.py", 8)]
    assert "`src` (int) of `torch.ops.kv.copy` (int in its schema: an int64_t)" in found[0][2]
    assert "argument 1 of `torch.ops.kv.other`" in found[1][2]
    assert "the tree defines no schema for it" in found[1][2]
