"""Native parameters that hold an address as a signed 64-bit integer: the ``int`` parameters
of ``torch.ops`` operators (an ``int64_t`` in C++, whatever the schema's name for it), read
from the schemas a tree defines (``torch.library`` definitions and ``custom_op`` functions)
where it defines the operator; and the library functions known to take an address as
``int64_t``. Also what a name says: an int named for memory (``raddr``, ``fake_ipc_ptrs``,
``reg_buffer: int``) is taken to be its address, where nothing else says what it is."""

from __future__ import annotations

import ast
import functools
import re

Schema = tuple[tuple[str, str], ...]
"""An operator's parameters in order, each as (its type in the schema, its name)."""

SIGNED_PARAMETERS: dict[str, tuple[int, str]] = {
    "torch._C._construct_storage_from_data_pointer": (0, "data_ptr"),
}
"""Library functions that take an address as ``int64_t``: the position and name of that
parameter (at ``2**63`` they raise ``TypeError``)."""

_SIGNED_TYPE = re.compile(r"(?:int|SymInt)(?:\[\d*\])?\??")
"""A schema type passed to C++ as ``int64_t`` (or a list of them)."""
_DEFINED = re.compile(
    r"""define\(\s*(?:["'](?:\w+)::(?P<qualified>\w+)(?:\.\w+)?["']\s*,\s*)?"""
    r"""["'](?P<op>\w*)(?:\.\w+)?\((?P<parameters>[^"']*)\)\s*->"""
)
"""``lib.define("op(int p, Tensor t) -> ()")`` or
``torch.library.define("ns::op", "(int p, Tensor t) -> ()")``."""
_CUSTOM_OP = re.compile(
    r"""custom_op\(\s*["'](?:\w+)::(?P<op>\w+)["'][^\n]*\n(?:[ \t]*@[^\n]*\n)*"""
    r"""[ \t]*(?:async[ \t]+)?def[ \t]+\w+\((?P<parameters>[^)]*)\)"""
)
"""``@torch.library.custom_op("ns::op", ...)`` above ``def op(p: int, t: Tensor)``."""
_ANNOTATED = {"int": "int", "list": "int[]", "float": "float", "bool": "bool", "str": "str"}
"""A ``custom_op`` parameter's schema type, by its annotation (an int, a list of ints: as
:func:`int_kind` reads them)."""

_ADDRESS_WORDS = frozenset(
    {"ptr", "ptrs", "addr", "addrs", "address", "addresses", "pointer", "pointers"}
)
_MEMORY_WORDS = _ADDRESS_WORDS | {"buffer", "buffers", "tensor", "tensors"}
_COUNTING = frozenset({"num", "n", "count", "len", "size", "nbytes", "max", "min"})
_INT_ANNOTATION = re.compile(
    r"(?:Optional\[)?(?:int|(?:[Ll]ist|Sequence|Tuple|tuple)\[\s*int\s*(?:,\s*\.\.\.\s*)?\])"
    r"\]?(?:\s*\|\s*None)?"
)
_NAMED_INT_PARAMETER = re.compile(
    r"(?:ptrs?|addrs?|address(?:es)?|pointers?|buffers?|tensors?)\s*:\s*"
    r"(?:Optional\[\s*)?(?:int\b|[Ll]ist\[\s*int\s*\]|Sequence\[\s*int\s*\])"
)
"""In a file's text: a parameter annotated ``int`` (or a list of ints) named for memory."""


def schemas_in(source: str) -> dict[str, Schema]:
    """The operators whose schemas ``source`` defines, by name (without namespace)."""
    found: dict[str, Schema] = {}
    if "define(" in source:
        for match in _DEFINED.finditer(source):
            op = match["qualified"] or match["op"]
            if op:
                found[op] = tuple(_parameters(match["parameters"]))
    if "custom_op" in source:
        for match in _CUSTOM_OP.finditer(source):
            found[match["op"]] = tuple(_annotated(match["parameters"]))
    return found


def _split(parameters: str) -> list[str]:
    """``parameters`` split at the commas outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for at, character in enumerate(parameters):
        if character in "([":
            depth += 1
        elif character in ")]":
            depth -= 1
        elif character == "," and depth == 0:
            parts.append(parameters[start:at])
            start = at + 1
    parts.append(parameters[start:])
    return [part.strip() for part in parts if part.strip() and part.strip() != "*"]


def _parameters(parameters: str) -> list[tuple[str, str]]:
    """A schema's parameters: ``int p, Tensor(a!) t, int[] ptrs=[]``."""
    found = []
    for part in _split(parameters):
        words = part.split("=", 1)[0].split()
        if len(words) >= 2:
            found.append((words[0], words[-1]))
    return found


def _annotated(parameters: str) -> list[tuple[str, str]]:
    """A ``custom_op`` function's parameters, typed as its schema would be inferred."""
    found = []
    for part in _split(parameters):
        name, _, annotation = part.split("=", 1)[0].partition(":")
        annotation = annotation.strip()
        kind = _ANNOTATED.get(int_kind(annotation) or annotation, annotation)
        found.append((kind or "?", name.strip()))
    return found


def signed(kind: str) -> bool:
    """Whether a schema type is passed to C++ as ``int64_t`` (or a list of them)."""
    return _SIGNED_TYPE.fullmatch(kind) is not None


def op_name(qualified: str) -> tuple[str, str] | None:
    """``torch.ops.ns.op`` or ``torch.ops.ns.op.overload``: the operator's namespace and name."""
    parts = qualified.split(".")
    if len(parts) < 4 or parts[:2] != ["torch", "ops"]:
        return None
    return parts[2], parts[3]


def _words(name: str) -> list[str]:
    return [word for word in name.lower().strip("_").split("_") if word]


@functools.lru_cache(maxsize=4096)
def _last_word(name: str) -> str | None:
    """The last word of a name, where none of its words counts (``num_ptrs``)."""
    words = _words(name)
    return words[-1] if words and _COUNTING.isdisjoint(words) else None


def names_address(name: str) -> bool:
    """Whether a name says that it holds an address: its last word is ``ptr``, ``addr``,
    ``address`` (``raddr``, ``base_ptr``, ``kv_addrs``), and no word counts (``num_ptrs``)."""
    last = _last_word(name)
    if last is None:
        return False
    return last in _ADDRESS_WORDS or (last.endswith(("addr", "addrs")) and len(last) <= 9)


@functools.lru_cache(maxsize=4096)
def names_memory(name: str) -> bool:
    """Whether an int of this name can only be an address: named for an address, or for the
    memory it points at (``reg_buffer: int``, ``ipc_tensors: list[int]``)."""
    return _last_word(name) in _MEMORY_WORDS or names_address(name)


def names_host(name: str) -> bool:
    """Whether a function's name says it handles host memory (``host_register``,
    ``pin_host_range``): what its names say are addresses are host addresses, which reach
    ``2**63`` only when tagged, which a name does not show."""
    return "host" in _words(name)


def int_annotation(annotation: ast.expr | None) -> str | None:
    """:func:`int_kind` of an annotation node."""
    return int_kind(ast.unparse(annotation)) if annotation is not None else None


def int_kind(annotation: str) -> str | None:
    """``"int"`` for an annotation of an int, ``"list"`` for one of a list of ints, ``None``
    for any other."""
    text = annotation.replace("typing.", "")
    if _INT_ANNOTATION.fullmatch(text) is None:
        return None
    return "list" if "[" in text.replace("Optional[", "") else "int"


def parsed_without_source(source: str) -> bool:
    """Whether ``source``, though it holds no address source, is parsed: it may pass what a
    name says is an address to a ``torch.ops`` operator, or patch unsigned storage into
    signed (``torch.int64 if dtype == torch.uint64 else dtype``: it names ``uint64``)."""
    if "uint64" in source and "int64 if" in source:
        return True
    return "torch.ops" in source and _NAMED_INT_PARAMETER.search(source) is not None
