"""What the lint knows of an expression without running it: a :class:`Value` (whether it holds
an address, whether it is typed storage of some dtype, what its elements are), and the joins of
the values one expression has on several paths. Also the plain records of a module's analysis:
what it yields (:class:`Site`, :class:`Kernel`, :class:`Launch`) and what it keeps while it
runs (a :class:`Frame` per function run, a :class:`ClassInfo` per class)."""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from ptrport.lint.dtypes import Dtype, Width

_T = TypeVar("_T")


class Holds(enum.Enum):
    ADDRESS = "an address"
    BITS = "an address's int64 bits"
    READ_BACK = "ints read back from int64 storage"


@dataclass(frozen=True)
class Value:
    holds: Holds | None = None
    dtype: Dtype | None = None
    """Typed storage (tensor, array, numpy scalar, ctypes object) of this dtype."""
    scalar: bool = False
    """Typed: one element (a numpy scalar), not an array."""
    element: Value | None = None
    """A list (or any iterable): what each element is."""
    items: tuple[Value, ...] | None = None
    """A tuple: its items by position."""
    keys: tuple[tuple[str, Value], ...] | None = None
    """A dict with string keys."""
    denotes: Dtype | None = None
    """The expression is this dtype."""
    instance: str | None = None
    """An instance of this class: of the module by its name, of another module of the linted
    tree by its qualified name (``pkg.buffers.CopyBuffers``), or a library's handle."""
    denotes_class: str | None = None
    """The expression is this class (named as :attr:`instance` names it): ``cls`` in a
    classmethod, a class by its name."""
    origin: str = field(default="", compare=False)
    """Where the address came from: "`t.data_ptr()` (line 12)"."""
    made: str = field(default="", compare=False)
    """Where the storage was made: "line 30"."""
    viewed: str = field(default="", compare=False)
    """A NumPy view of a tensor (``.numpy()``): the library the storage was made in, "torch"."""


NOTHING = Value()


def parts(value: Value) -> tuple[Value | None, ...]:
    """What ``value`` holds inside it: its element, its items, its keys' values."""
    return (value.element, *(value.items or ()), *(v for _, v in value.keys or ()))


def rebuilt(value: Value, inner: Callable[[Value], Value]) -> Value:
    """``value`` with ``inner`` applied to what it holds inside it: its element, its items,
    its keys' values."""
    return replace(
        value,
        element=inner(value.element) if value.element is not None else None,
        items=tuple(map(inner, value.items)) if value.items is not None else None,
        keys=tuple((k, inner(v)) for k, v in value.keys) if value.keys is not None else None,
    )


def carried(value: Value | None) -> Holds | None:
    """What ``value`` holds, itself or in its elements."""
    if value is None:
        return None
    if value.holds is not None:
        return value.holds
    for inner in parts(value):
        found = carried(inner)
        if found is not None:
            return found
    return None


def origin_of(value: Value | None) -> str:
    if value is None:
        return ""
    if value.origin:
        return value.origin
    for inner in parts(value):
        found = origin_of(inner)
        if found:
            return found
    return ""


def _same(a: _T | None, b: _T | None) -> _T | None:
    return a if a == b else None


def join(a: Value | None, b: Value | None) -> Value:
    """What is known of a value that is ``a`` on one path and ``b`` on another."""
    if a is b:
        return a if a is not None else NOTHING
    if a is None or a is NOTHING or a == NOTHING:
        return b or NOTHING
    if b is None or b is NOTHING or b == NOTHING or a == b:
        return a
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items, strict=True))
    keys = None
    if a.keys is not None and b.keys is not None:
        theirs = dict(b.keys)
        keys = tuple((k, join(v, theirs[k])) for k, v in a.keys if k in theirs) or None
    element = join(a.element, b.element) if a.element or b.element else None
    return Value(
        holds=_same(a.holds, b.holds),
        dtype=_same(a.dtype, b.dtype),
        scalar=a.scalar and b.scalar,
        element=element,
        items=items,
        keys=keys,
        denotes=_same(a.denotes, b.denotes),
        instance=_same(a.instance, b.instance),
        denotes_class=_same(a.denotes_class, b.denotes_class),
        origin=a.origin or b.origin,
        made=a.made or b.made,
        viewed=a.viewed or b.viewed,
    )


def join_all(values: Iterable[Value]) -> Value:
    """What is known of a value that is one of ``values``."""
    joined = NOTHING
    for value in values:
        joined = join(joined, value)
    return joined


def join_names(maps: list[dict[str, Value]]) -> dict[str, Value]:
    """The names of several paths joined: each known on one path is joined with the others."""
    if len(maps) == 1:
        return dict(maps[0])
    joined: dict[str, Value] = {}
    for names in maps:
        for name, value in names.items():
            known = joined.get(name)
            if known is None:
                joined[name] = value
            elif known is not value:
                joined[name] = join(known, value)
    return joined


def list_of(element: Value) -> Value:
    """A list whose elements are ``element`` (nothing known where they are not)."""
    return Value(element=element) if element != NOTHING else NOTHING


def element_of(value: Value) -> Value:
    """What iterating over ``value`` gives."""
    if value.element is not None:
        return value.element
    if value.items:
        return join_all(value.items)
    if value.dtype is not None and value.dtype.library in ("torch", "numpy"):
        return replace(value, scalar=True)
    return NOTHING


def nth(values: Sequence[Value], index: int) -> Value:
    """The value of the ``index``-th argument, where it is given."""
    return values[index] if len(values) > index else NOTHING


def read_back(value: Value) -> Value:
    """The Python int(s) that ``int()``, ``.item()`` or ``.tolist()`` give of typed storage."""
    if value.dtype is None:
        return value
    if value.dtype.width is Width.SIGNED64:
        return Value(holds=Holds.READ_BACK, origin=value.made)
    if value.dtype.width is Width.UNSIGNED64 and value.holds is Holds.ADDRESS:
        return Value(holds=Holds.ADDRESS, origin=value.origin)
    return NOTHING


def bits_kept(dtype: Dtype) -> Holds | None:
    """What a typed cast of an address's 64 bits to ``dtype`` holds: its int64 bits, the address
    itself, or (narrower, float) neither."""
    if dtype.width is Width.SIGNED64:
        return Holds.BITS
    if dtype.width is Width.UNSIGNED64:
        return Holds.ADDRESS
    return None


@dataclass(frozen=True)
class Site:
    """A finding before it has a path: a rule, a node, what flows where, the fix."""

    rule: str
    node: ast.AST
    statement: ast.stmt | None
    message: str
    fix: str


@dataclass(frozen=True)
class Kernel:
    """A ``@triton.jit`` function and the dtype each parameter is annotated with."""

    name: str
    line: int
    parameters: tuple[tuple[str, Dtype | None], ...]


@dataclass(frozen=True)
class Launch:
    """``kernel[grid](...)`` passing an address (or its bits) as a plain int argument."""

    kernel: str
    position: int | None
    keyword: str | None
    holds: Holds
    origin: str


@dataclass(frozen=True)
class LaunchSite:
    """A launch where it is: the argument passing the address, and its statement (which stay
    in the process that parsed them; the launch alone travels to be matched with its kernel)."""

    launch: Launch
    node: ast.expr
    statement: ast.stmt | None


Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class ClassInfo:
    """A class of the module: its bases (by name), its methods, and what is known of the
    attributes its methods and its constructions set."""

    name: str
    node: ast.ClassDef
    bases: list[str]
    methods: dict[str, Function]
    attributes: dict[str, Value] = field(default_factory=dict)
    fields: list[str] | None = None
    """A dataclass's or NamedTuple's fields, in the order its constructor takes them."""
    annotations: dict[str, ast.expr] = field(default_factory=dict)
    """The annotation of each attribute declared in the class body."""
    factories: list[Function] = field(default_factory=list)
    """Functions of the module returning a new instance (run with the class's methods)."""
    returns: dict[str, Value] = field(default_factory=dict)
    """What each method returns, run for the class."""


@dataclass
class Frame:
    """One run of a function (or of the module's body): the values of its names and of the
    attributes it sets on ``self``, and those it returns."""

    env: dict[str, Value]
    owner: ClassInfo | None = None
    self_name: str | None = None
    self_attributes: dict[str, Value] = field(default_factory=dict)
    returns: list[Value] = field(default_factory=list)
    depth: int = 0
    statement: ast.stmt | None = None
    generic: bool = False
    """A method run for its class, not for one call: what it sets on ``self`` is the class's."""
    function: Function | None = None
    """The function run (``None`` for a module's or a class's body)."""
