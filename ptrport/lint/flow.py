"""Following device addresses through one module, to the storage they end up in.

Each expression is given an abstract :class:`Value`: whether it holds an address (or its int64
bits, or ints read back from int64 storage), whether it is typed storage (a tensor, an array, a
numpy scalar) of some dtype, a list or tuple of such values, a dtype, or an instance of a class
of the module. Statements are run in order within a function; both branches of an ``if`` are
run and joined, a loop body twice. Attributes set on ``self`` anywhere in a class are known in
all its methods; a call to a function or method of the same module runs its body with the
arguments' values. Where an address meets storage that cannot hold ``2**63..2**64-1``, a
finding is recorded.

Where a value is not known, nothing is assumed: a finding needs an address, followed from its
source, and a dtype, read from the code.
"""

from __future__ import annotations

import ast
import enum
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from ptrport.addresses import to_unsigned
from ptrport.lint import dtypes, reinterpret
from ptrport.lint.dtypes import Dtype, Width


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
    """An instance of this class of the module."""
    origin: str = field(default="", compare=False)
    """Where the address came from: "`t.data_ptr()` (line 12)"."""
    made: str = field(default="", compare=False)
    """Where the storage was made: "line 30"."""
    viewed: str = field(default="", compare=False)
    """A NumPy view of a tensor (``.numpy()``): the library the storage was made in, "torch"."""


NOTHING = Value()
_T = TypeVar("_T")
_BYTES = Dtype("bytes", "", "bytes")


def carried(value: Value | None) -> Holds | None:
    """What ``value`` holds, itself or in its elements."""
    if value is None:
        return None
    if value.holds is not None:
        return value.holds
    for inner in (value.element, *(value.items or ()), *(v for _, v in value.keys or ())):
        found = carried(inner)
        if found is not None:
            return found
    return None


def origin_of(value: Value | None) -> str:
    if value is None:
        return ""
    if value.origin:
        return value.origin
    for inner in (value.element, *(value.items or ()), *(v for _, v in value.keys or ())):
        found = origin_of(inner)
        if found:
            return found
    return ""


def _same(a: _T | None, b: _T | None) -> _T | None:
    return a if a == b else None


def join(a: Value | None, b: Value | None) -> Value:
    """What is known of a value that is ``a`` on one path and ``b`` on another."""
    if a is None or a == NOTHING:
        return b or NOTHING
    if b is None or b == NOTHING or a == b:
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


def read_back(value: Value) -> Value:
    """The Python int(s) that ``int()``, ``.item()`` or ``.tolist()`` give of typed storage."""
    if value.dtype is None:
        return value
    if value.dtype.width is Width.SIGNED64:
        return Value(holds=Holds.READ_BACK, origin=value.made)
    if value.dtype.width is Width.UNSIGNED64 and value.holds is Holds.ADDRESS:
        return Value(holds=Holds.ADDRESS, origin=value.origin)
    return NOTHING


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


@dataclass
class ClassInfo:
    name: str
    node: ast.ClassDef
    bases: list[str]
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    attributes: dict[str, Value] = field(default_factory=dict)


Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class _ClassPass:
    """What one pass over a class's methods found, and the attributes it read (owner, name,
    value seen)."""

    sites: dict[tuple[int, int, str], Site]
    launches: dict[tuple[int, int, str], LaunchSite]
    reads: list[tuple[str, str, Value | None]]


@dataclass
class Frame:
    env: dict[str, Value]
    owner: ClassInfo | None = None
    self_name: str | None = None
    self_attributes: dict[str, Value] = field(default_factory=dict)
    returns: list[Value] = field(default_factory=list)
    depth: int = 0
    statement: ast.stmt | None = None
    generic: bool = False
    """A method run for its class, not for one call: what it sets on ``self`` is the class's."""


_VIEW_ATTRIBUTES = frozenset({"np", "cpu", "gpu", "data", "T", "mT", "host", "device", "real"})
"""Attributes that are the same storage seen another way (vLLM's CpuGpuBuffer has .np/.cpu/.gpu)."""
_SAME_STORAGE = frozenset(
    {
        "pin_memory",
        "contiguous",
        "clone",
        "detach",
        "cpu",
        "cuda",
        "xpu",
        "reshape",
        "flatten",
        "ravel",
        "copy",
        "squeeze",
        "unsqueeze",
        "expand",
        "narrow",
        "t",
        "share_memory_",
        "requires_grad_",
    }
)
_VIEWING_CALLS = _SAME_STORAGE | {"numpy"}
"""Calls whose result is the storage they are called on, seen another way."""
_CONVERTING = frozenset({"view", "to", "astype", "type"})
_STORING = frozenset({"fill_", "fill", "copy_", "index_fill_", "masked_fill_"})
_ADDRESS_SOURCES = frozenset({"ctypes.addressof"})
_CONSTRUCTORS = {
    "torch.tensor": "torch",
    "torch.as_tensor": "torch",
    "torch.asarray": "torch",
    "numpy.array": "numpy",
    "numpy.asarray": "numpy",
    "numpy.ascontiguousarray": "numpy",
    "numpy.asanyarray": "numpy",
    "numpy.fromiter": "numpy",
}
_TYPED_TENSORS = {
    "Tensor": "float32",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
}
_FACTORIES = {
    **dict.fromkeys(
        ("torch.zeros", "torch.empty", "torch.ones"), dtypes.library_dtype("torch", "float32")
    ),
    **dict.fromkeys(
        ("numpy.zeros", "numpy.empty", "numpy.ones"), dtypes.library_dtype("numpy", "float64")
    ),
    "torch.arange": dtypes.library_dtype("torch", "int64"),
    "numpy.arange": Dtype("np.int64 (np.arange's default)", "int64", "numpy"),
}
"""Calls that make storage, with the dtype each makes when none is given."""
_DTYPE_MODULES = {
    "torch": "torch",
    "numpy": "numpy",
    "triton.language": "triton",
    "tl": "triton",
    "ctypes": "ctypes",
}
"""The modules whose attributes are dtypes, as imported: the library of each."""
_FILLED = {"torch.full": "torch", "numpy.full": "numpy"}
_BUILTIN_CONTAINERS = frozenset({"list", "tuple", "sorted", "set", "reversed", "frozenset"})
_MAX_DEPTH = 4
_OPAQUE_BUILTINS = frozenset(
    [
        "hex",
        "str",
        "repr",
        "len",
        "id",
        "bool",
        "print",
        "format",
        "isinstance",
        "range",
        "abs",
        "sum",
        "hash",
        "divmod",
        "round",
        "bin",
        "oct",
    ]
)
"""Builtins whose result is no address (a string, a count, a truth value)."""

_MESSAGES = {
    Width.SIGNED64: ("signed-storage", "values at or above 2**63 overflow"),
    Width.NARROW: ("narrow-storage", "the high bits are cut off"),
    Width.FLOAT: ("float-storage", "the low bits are rounded away above 2**53"),
}


_UNSIGNED = {
    "torch": "dtype=torch.uint64",
    "numpy": "dtype=np.uint64",
    "triton": "tl.uint64",
    "ctypes": "ctypes.c_uint64",
    "array": "typecode 'Q'",
    "struct": "format 'Q'",
}


def fix_for(rule: str, dtype: Dtype | None) -> str:
    """The fix that fits the storage at hand."""
    library = dtype.library if dtype else "torch"
    unsigned = _UNSIGNED.get(library, "dtype=torch.uint64")
    bitcast = (
        "tensor(..., dtype=torch.uint64).view(torch.int64)"
        if library == "torch"
        else "np.array(..., dtype=np.uint64).view(np.int64)"
        if library == "numpy"
        else "p - 2**64 if p >= 2**63 else p"
    )
    if rule == "signed-storage":
        return f"store it as {unsigned}, or store its int64 bits: {bitcast}"
    if rule == "inferred-int64":
        return "pass dtype=torch.uint64 (or build uint64 and .view(torch.int64) for int64 bits)"
    if rule == "narrow-storage":
        return f"keep addresses in 64-bit storage: {unsigned}"
    if rule == "float-storage":
        return "keep addresses as ints: Python int, torch.uint64 or np.uint64, never float"
    if rule == "triton-signed-param":
        return (
            "annotate the parameter tl.uint64, or pass its int64 bits: "
            "p - 2**64 if p >= 2**63 else p"
        )
    if rule == "mixed-sign-numpy":
        return "make the other operand unsigned first: idx.astype(np.uint64)"
    if rule == "signed-compare":
        return (
            "compare unsigned values: read back through .view(torch.uint64) / .view(np.uint64), "
            "or convert each with v & 0xFFFF_FFFF_FFFF_FFFF"
        )
    return (
        "int64 bits of an address: p - 2**64 if p >= 2**63 else p; "
        "the address from int64 bits: v & 0xFFFF_FFFF_FFFF_FFFF"
    )


def _what(value: Value) -> str:
    holds = carried(value)
    where = origin_of(value)
    if holds is Holds.BITS:
        what = "the int64 bits of an address"
    elif holds is Holds.READ_BACK:
        what = "ints read back from int64 storage"
    else:
        what = "an address"
    return f"{what} from {where}" if where else what


def _is_jit(decorator: ast.expr, qualify: Callable[[ast.expr], str | None]) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = qualify(target) or ""
    return name.startswith("triton") and name.endswith(".jit")


class ModuleFlow:
    """The analysis of one parsed module: :attr:`sites`, :attr:`kernels`, :attr:`launches`."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.imports: dict[str, str] = {}
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.module_env: dict[str, Value] = {}
        self.constants: dict[str, int] = {}
        self.kernels: list[Kernel] = []
        self.launches: dict[tuple[int, int, str], LaunchSite] = {}
        self.sites: dict[tuple[int, int, str], Site] = {}
        self.passed_over: list[ast.stmt] = []
        """Statements not followed: nested deeper than the recursion limit allows."""
        self._memo: dict[tuple[object, ...], tuple[Value, tuple[tuple[str, Value], ...]]] = {}
        self._running: set[tuple[object, ...]] = set()
        self._helpers: dict[Function, list[ast.stmt]] = {}
        self._all_functions: list[Function] = []
        self._reads: list[tuple[str, str, Value | None]] = []
        self._collecting = False
        self._sign_constants: dict[ast.AST, bool] = {}
        self._qualified: dict[ast.AST, str | None] = {}
        self._texts: dict[tuple[ast.AST, int], str] = {}
        self._verdicts: dict[
            tuple[ast.expr, frozenset[ast.expr], bool], reinterpret.Verdict | None
        ] = {}

    # The passes.

    def run(self) -> ModuleFlow:
        self._collect_definitions()
        self._block(self.tree.body, Frame(self.module_env))
        # Attributes set in one method are read in others. A class's pass stands once every
        # read it made saw the attribute's final value; the classes whose reads did not are
        # passed again (a few times at most), starting from what the last passes set.
        module_sites, module_launches = self.sites, self.launches
        passes: dict[str, _ClassPass] = {}
        pending = list(self.classes.values())
        for attempt in range(3):
            self._collecting = True
            for info in pending:
                self.sites, self.launches, self._reads = {}, {}, []
                self._class_pass(info)
                passes[info.name] = _ClassPass(self.sites, self.launches, self._reads)
            self._collecting = False
            pending = [
                info for info in self.classes.values() if not self._settled(passes[info.name])
            ]
            if not pending or attempt == 2:
                break
            self._memo.clear()
        self._memo.clear()
        self.sites, self.launches = module_sites, module_launches
        for info in self.classes.values():
            found = passes[info.name]
            for key, site in found.sites.items():
                self.sites.setdefault(key, site)
            for key, located in found.launches.items():
                self.launches.setdefault(key, located)
        methods = {id(m) for info in self.classes.values() for m in info.methods.values()}
        for function in self._all_functions:
            if id(function) not in methods:
                self._run(function, None, [], {}, None, 0)
        return self

    def _settled(self, found: _ClassPass) -> bool:
        return all(
            self._lookup(self.classes[owner], attribute, None) == value
            for owner, attribute, value in found.reads
        )

    def _collect_definitions(self) -> None:
        for statement in self.tree.body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                constant = reinterpret.evaluate_constant(statement.value, self.constants)
                if constant is not None:
                    self.constants[statement.targets[0].id] = constant
        for node in _statements(self.tree.body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self._all_functions.append(node)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.imports[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for statement in self.tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[statement.name] = statement
                self._kernel(statement)
            elif isinstance(statement, ast.ClassDef):
                methods = {
                    item.name: item
                    for item in statement.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                bases = [base.id for base in statement.bases if isinstance(base, ast.Name)]
                self.classes[statement.name] = ClassInfo(statement.name, statement, bases, methods)

    def _kernel(self, function: Function) -> None:
        if not any(_is_jit(d, self._qualify) for d in function.decorator_list):
            return
        arguments = function.args.posonlyargs + function.args.args
        parameters = tuple(
            (arg.arg, self._dtype(arg.annotation) if arg.annotation else None) for arg in arguments
        )
        self.kernels.append(Kernel(function.name, function.lineno, parameters))

    def _class_pass(self, info: ClassInfo) -> None:
        frame = Frame({})
        for statement in info.node.body:
            if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
                value = self._value(statement.value, frame)
                targets = (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
                for target in targets:
                    if isinstance(target, ast.Name):
                        info.attributes[target.id] = join(info.attributes.get(target.id), value)
        ordered = sorted(info.methods.values(), key=lambda f: f.name != "__init__")
        for method in ordered:
            instance = None if _is_static(method) else Value(instance=info.name)
            self._run(method, info, [], {}, instance, 0)

    # Names.

    def _qualify(self, node: ast.expr) -> str | None:
        """``np.int64`` -> ``numpy.int64``, through this module's imports."""
        if isinstance(node, ast.Name):
            return self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            if node in self._qualified:
                return self._qualified[node]
            base = self._qualify(node.value)
            name = f"{base}.{node.attr}" if base else None
            self._qualified[node] = name
            return name
        return None

    def _dtype(self, node: ast.expr, frame: Frame | None = None) -> Dtype | None:
        """The dtype ``node`` names, if it names one."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return dtypes.numpy_string(node.value)
        if frame is not None and isinstance(node, ast.Name | ast.Attribute):
            # A local, a module constant, self.DTYPE, torch.int64: whatever the name holds.
            return self._value(node, frame).denotes
        if isinstance(node, ast.Name):
            if node.id in self.module_env:
                return self.module_env[node.id].denotes
            if node.id not in self.imports:
                return dtypes.builtin_dtype(node.id)
        return self._library_dtype(node)

    def _library_dtype(self, node: ast.expr) -> Dtype | None:
        """``torch.int64``, ``np.uint64``, ``tl.int64``, ``ctypes.c_int32`` (as imported here)."""
        name = self._qualify(node)
        if name is None:
            return None
        module, _, attribute = name.rpartition(".")
        library = _DTYPE_MODULES.get(module)
        return dtypes.library_dtype(library, attribute) if library else None

    def _lineage(self, owner: ClassInfo) -> Iterator[ClassInfo]:
        """The class, then its bases defined in this module, breadth first, each once."""
        seen: set[str] = set()
        pending = [owner]
        while pending:
            info = pending.pop(0)
            if info.name not in seen:
                seen.add(info.name)
                yield info
                pending.extend(self.classes[b] for b in info.bases if b in self.classes)

    def _lookup(self, owner: ClassInfo, attribute: str, frame: Frame | None) -> Value | None:
        if frame is not None and frame.owner is owner and attribute in frame.self_attributes:
            return frame.self_attributes[attribute]
        found = next(
            (
                info.attributes[attribute]
                for info in self._lineage(owner)
                if attribute in info.attributes
            ),
            None,
        )
        if self._collecting:
            self._reads.append((owner.name, attribute, found))
        return found

    def _method(self, owner: ClassInfo, name: str) -> tuple[ClassInfo, Function] | None:
        return next(
            ((info, info.methods[name]) for info in self._lineage(owner) if name in info.methods),
            None,
        )

    def _source(self, node: ast.expr) -> str:
        """How a message names where an address came from: "`t.data_ptr()` (line 12)"."""
        return f"`{self._text(node)}` (line {node.lineno})"

    def _text(self, node: ast.AST, limit: int = 48) -> str:
        """The source of ``node`` as a message quotes it, cut at ``limit`` characters (unparsed
        once: a function run again reports the same sites)."""
        text = self._texts.get((node, limit))
        if text is None:
            text = ast.unparse(node)
            text = text if len(text) <= limit else text[: limit - 3] + "..."
            self._texts[(node, limit)] = text
        return text

    # Findings.

    def _report(
        self,
        rule: str,
        node: ast.AST,
        frame: Frame,
        message: str,
        *,
        dtype: Dtype | None = None,
        fix: str | None = None,
    ) -> None:
        """A site of ``rule``, with its fix: the one given, else the rule's for ``dtype``."""
        key = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0), rule)
        fixed = fix if fix is not None else fix_for(rule, dtype)
        self.sites.setdefault(key, Site(rule, node, frame.statement, message, fixed))

    def _store(
        self, node: ast.AST, storage: Value, value: Value, frame: Frame, where: ast.expr
    ) -> None:
        """``value`` written into ``storage`` (typed), which the code names ``where``."""
        dtype = storage.dtype
        holds = carried(value)
        if dtype is None or not dtype.unsafe or holds not in (Holds.ADDRESS, Holds.BITS):
            return
        keeps_bits = value.dtype is not None and not value.scalar
        if dtype.width is Width.SIGNED64 and (holds is Holds.BITS or keeps_bits):
            return
        what = f"`{self._text(where)}`"
        rule, consequence = _MESSAGES[dtype.width]
        made = f", made at {storage.made}" if storage.made else ""
        message = f"{_what(value)} is stored in {what} ({dtype.name}{made}): {consequence}"
        unsigned = _UNSIGNED.get(storage.viewed or dtype.library, "dtype=torch.uint64")
        at = f" (at {storage.made})" if storage.made else ""
        itself = _made(where)
        if storage.viewed and itself is where:
            # A name holding a NumPy view of a tensor: the tensor is what to make unsigned.
            fix = f"create the tensor it views with {unsigned}{at}"
        else:
            fix = f"create `{self._text(itself)}` with {unsigned}{at}"
        if rule == "signed-storage" and value.dtype is None:
            fix += ", or store the int64 bits: p - 2**64 if p >= 2**63 else p"
        self._report(rule, node, frame, message, fix=fix)

    # Statements.

    def _block(self, statements: Sequence[ast.stmt], frame: Frame) -> None:
        for statement in statements:
            self._statement(statement, frame)

    def _statement(self, statement: ast.stmt, frame: Frame) -> None:
        outer = frame.statement
        frame.statement = statement
        try:
            self._statement_in(statement, frame)
        except RecursionError:
            # An expression nested hundreds deep (a generated sum of terms): this statement is
            # not followed, the rest of the module is.
            if statement not in self.passed_over:
                self.passed_over.append(statement)
        finally:
            frame.statement = outer

    def _statement_in(self, statement: ast.stmt, frame: Frame) -> None:
        if isinstance(statement, ast.Assign):
            value = self._value(statement.value, frame)
            for target in statement.targets:
                self._bind(target, value, frame, statement)
        elif isinstance(statement, ast.AnnAssign):
            if statement.value is not None:
                self._bind(statement.target, self._value(statement.value, frame), frame, statement)
        elif isinstance(statement, ast.AugAssign):
            combined = ast.BinOp(left=statement.target, op=statement.op, right=statement.value)
            ast.copy_location(combined, statement)
            self._bind(statement.target, self._value(combined, frame), frame, statement)
        elif isinstance(statement, ast.Expr):
            self._value(statement.value, frame)
        elif isinstance(statement, ast.Return):
            if statement.value is not None:
                frame.returns.append(self._value(statement.value, frame))
        elif isinstance(statement, ast.If):
            self._value(statement.test, frame)
            self._branches([statement.body, statement.orelse], frame)
        elif isinstance(statement, ast.For | ast.AsyncFor):
            element = element_of(self._value(statement.iter, frame))
            for _ in range(2):
                self._bind(statement.target, element, frame, statement)
                self._block(statement.body, frame)
            self._block(statement.orelse, frame)
        elif isinstance(statement, ast.While):
            for _ in range(2):
                self._value(statement.test, frame)
                self._block(statement.body, frame)
            self._block(statement.orelse, frame)
        elif isinstance(statement, ast.With | ast.AsyncWith):
            for item in statement.items:
                self._value(item.context_expr, frame)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, NOTHING, frame, statement)
            self._block(statement.body, frame)
        elif isinstance(statement, ast.Try | ast.TryStar):
            self._block(statement.body, frame)
            for handler in statement.handlers:
                self._block(handler.body, frame)
            self._block(statement.orelse, frame)
            self._block(statement.finalbody, frame)
        elif isinstance(statement, ast.Assert):
            self._value(statement.test, frame)
        elif isinstance(statement, ast.Match):
            self._value(statement.subject, frame)
            self._branches([case.body for case in statement.cases], frame)

    def _branches(self, blocks: list[list[ast.stmt]], frame: Frame) -> None:
        before = dict(frame.env)
        before_attributes = dict(frame.self_attributes)
        ends: list[tuple[dict[str, Value], dict[str, Value]]] = []
        for block in blocks:
            frame.env = dict(before)
            frame.self_attributes = dict(before_attributes)
            self._block(block, frame)
            ends.append((frame.env, frame.self_attributes))
        frame.env = _joined([names for names, _ in ends])
        frame.self_attributes = _joined([attributes for _, attributes in ends])

    def _bind(self, target: ast.expr, value: Value, frame: Frame, statement: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            frame.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if value.items is not None and len(value.items) == len(target.elts):
                parts: Sequence[Value] = value.items
            else:
                parts = [element_of(value)] * len(target.elts)
            for part, item in zip(parts, target.elts, strict=True):
                if isinstance(item, ast.Starred):
                    self._bind(item.value, Value(element=part), frame, statement)
                else:
                    self._bind(item, part, frame, statement)
        elif isinstance(target, ast.Attribute):
            if isinstance(target.value, ast.Name) and target.value.id == frame.self_name:
                self._set_attribute(frame, target.attr, value)
            else:
                self._value(target.value, frame)
        elif isinstance(target, ast.Subscript):
            storage = self._value(target.value, frame)
            self._value(target.slice, frame)
            self._store(statement, storage, value, frame, target.value)
            self._filled(target.value, storage, value, frame)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, Value(element=value), frame, statement)

    def _filled(self, node: ast.expr, storage: Value, value: Value, frame: Frame) -> None:
        """Unsigned storage that addresses are written into holds addresses from then on (for
        the arithmetic done on it elsewhere)."""
        if storage.dtype is None or storage.dtype.width is not Width.UNSIGNED64:
            return
        if storage.holds is not None or carried(value) is not Holds.ADDRESS:
            return
        filled = replace(storage, holds=Holds.ADDRESS, origin=origin_of(value))
        if isinstance(node, ast.Name) and node.id in frame.env:
            frame.env[node.id] = filled
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == frame.self_name
        ):
            self._set_attribute(frame, node.attr, filled)

    def _set_attribute(self, frame: Frame, name: str, value: Value) -> None:
        """``self.name = value``: in this run, and (in a method run for its class while the
        attributes are collected) in what the class is known to hold."""
        frame.self_attributes[name] = value
        if frame.owner is None or not self._collecting or not frame.generic:
            return
        old = frame.owner.attributes.get(name)
        joined = join(old, value)
        if old is not None and old.dtype == value.dtype and None in (old.holds, value.holds):
            # Storage holds addresses once they are written into it anywhere, even where it is
            # made again.
            known = value if value.holds is not None else old
            joined = replace(joined, holds=known.holds, origin=known.origin)
        frame.owner.attributes[name] = joined

    # Expressions.

    def _value(self, node: ast.expr, frame: Frame) -> Value:
        if isinstance(node, ast.Constant):
            return NOTHING
        if isinstance(node, ast.Name):
            found = frame.env.get(node.id)
            if found is None:
                found = self.module_env.get(node.id)
            if found is None:
                dtype = self._dtype(node)
                return Value(denotes=dtype) if dtype else NOTHING
            return found
        if isinstance(node, ast.Attribute):
            return self._attribute(node, frame)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, frame)
        if isinstance(node, ast.Call):
            return self._call_expression(node, frame)
        if isinstance(node, ast.BinOp | ast.UnaryOp | ast.IfExp | ast.BoolOp):
            return self._arithmetic(node, frame)
        if isinstance(node, ast.Compare):
            self._compare(node, frame)
            return NOTHING
        if isinstance(node, ast.Tuple):
            return Value(items=tuple(self._item(e, frame) for e in node.elts))
        if isinstance(node, ast.List | ast.Set):
            return list_of(join_all(self._item(item, frame) for item in node.elts))
        if isinstance(node, ast.Dict):
            keys = []
            for key, item in zip(node.keys, node.values, strict=True):
                value = self._value(item, frame)
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    keys.append((key.value, value))
            return Value(keys=tuple(keys)) if keys else NOTHING
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            inner = replace(frame, env=dict(frame.env), returns=[])
            for generator in node.generators:
                element = element_of(self._value(generator.iter, inner))
                self._bind(generator.target, element, inner, frame.statement or ast.Pass())
                for condition in generator.ifs:
                    self._value(condition, inner)
            if isinstance(node, ast.DictComp):
                self._value(node.key, inner)
                self._value(node.value, inner)
                return NOTHING
            element = self._value(node.elt, inner)
            return list_of(element)
        if isinstance(node, ast.NamedExpr):
            value = self._value(node.value, frame)
            frame.env[node.target.id] = value
            return value
        if isinstance(node, ast.Starred | ast.Await):
            return self._value(node.value, frame)
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                self._value(part, frame)
            return NOTHING
        if isinstance(node, ast.FormattedValue):
            self._value(node.value, frame)
        return NOTHING

    def _item(self, node: ast.expr, frame: Frame) -> Value:
        if isinstance(node, ast.Starred):
            return element_of(self._value(node.value, frame))
        return self._value(node, frame)

    def _attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        if node.attr in dtypes.NAMES:
            dtype = self._library_dtype(node)
            if dtype is not None:
                return Value(denotes=dtype)
        if node.attr == "__cuda_array_interface__":
            address = Value(holds=Holds.ADDRESS, origin=self._source(node))
            return Value(keys=(("data", Value(items=(address, NOTHING))),))
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == frame.self_name
            and frame.owner is not None
        ):
            return self._lookup(frame.owner, node.attr, frame) or NOTHING
        base = self._value(node.value, frame)
        if base.instance in self.classes:
            own = dict(base.keys or ())
            if node.attr in own:
                return own[node.attr]
            return self._lookup(self.classes[base.instance], node.attr, None) or NOTHING
        if isinstance(node.value, ast.Name) and node.value.id in self.classes:
            return self._lookup(self.classes[node.value.id], node.attr, None) or NOTHING
        if base.dtype is not None:
            if base.dtype.library == "ctypes" and node.attr == "value":
                return Value(holds=base.holds, origin=base.origin)
            if node.attr in _VIEW_ATTRIBUTES:
                return base
        return NOTHING

    def _subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        base = self._value(node.value, frame)
        index = node.slice
        self._value(index, frame)
        if base.keys is not None and isinstance(index, ast.Constant):
            return dict(base.keys).get(str(index.value), NOTHING)
        if base.items is not None:
            if isinstance(index, ast.Constant) and isinstance(index.value, int):
                if -len(base.items) <= index.value < len(base.items):
                    return base.items[index.value]
                return NOTHING
            if isinstance(index, ast.Slice):
                return Value(element=element_of(base))
            return element_of(base)
        if base.element is not None:
            return base if isinstance(index, ast.Slice) else base.element
        if base.dtype is not None:
            whole = isinstance(index, ast.Slice) or (
                isinstance(index, ast.Tuple) and any(isinstance(e, ast.Slice) for e in index.elts)
            )
            return (
                base
                if whole or not isinstance(index, ast.Constant | ast.Name)
                else replace(base, scalar=True)
            )
        return NOTHING

    # Arithmetic.

    def _arithmetic(self, node: ast.expr, frame: Frame) -> Value:
        reading = self._reinterpretation(node, frame)
        if reading is not None:
            return reading
        if isinstance(node, ast.BinOp):
            return self._binary(node, frame)
        if isinstance(node, ast.UnaryOp):
            self._value(node.operand, frame)
            return NOTHING
        if isinstance(node, ast.IfExp):
            self._value(node.test, frame)
            return join(self._value(node.body, frame), self._value(node.orelse, frame))
        assert isinstance(node, ast.BoolOp)
        return join_all(self._value(item, frame) for item in node.values)

    def _leaves(self, node: ast.expr) -> Iterator[ast.expr]:
        """The operands of an integer expression: what is not arithmetic or a constant."""
        if isinstance(node, ast.BinOp):
            yield from self._leaves(node.left)
            yield from self._leaves(node.right)
        elif isinstance(node, ast.UnaryOp):
            yield from self._leaves(node.operand)
        elif isinstance(node, ast.IfExp):
            for part in (node.test, node.body, node.orelse):
                yield from self._leaves(part)
        elif isinstance(node, ast.BoolOp):
            for part in node.values:
                yield from self._leaves(part)
        elif isinstance(node, ast.Compare):
            for part in (node.left, *node.comparators):
                yield from self._leaves(part)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max", "abs", "int")
        ):
            for part in node.args:
                yield from self._leaves(part)
        elif isinstance(node, ast.Constant) or (
            isinstance(node, ast.Name) and node.id in self.constants
        ):
            return
        else:
            yield node

    def _may_reinterpret(self, node: ast.AST) -> bool:
        """Whether ``node`` holds a constant that could make 2**63 or 2**64: the cheap test
        before the evaluation (each node of the module looked at once)."""
        known = self._sign_constants.get(node)
        if known is None:
            if isinstance(node, ast.Constant):
                known = type(node.value) is int and (
                    node.value in (62, 63, 64) or abs(node.value) >= 1 << 62
                )
            elif isinstance(node, ast.Name):
                known = node.id in self.constants and abs(self.constants[node.id]) >= 1 << 62
            else:
                known = False
                for child in ast.iter_child_nodes(node):
                    # Every child is looked at, so that each is known for the next question.
                    known = self._may_reinterpret(child) or known
            self._sign_constants[node] = known
        return known

    def _reinterpretation(self, node: ast.expr, frame: Frame) -> Value | None:
        """An integer expression converting an address (or int64 bits) with 2**63/2**64
        constants: what it computes, and a ``bad-bitcast`` finding when that is wrong."""
        if not self._may_reinterpret(node):
            return None
        leaves = list(self._leaves(node))
        if not leaves:
            return None
        operands: list[tuple[ast.expr, Value]] = []
        for leaf in leaves:
            value = self._value(leaf, frame)
            holds = value.holds
            if value.dtype is not None or value.element is not None:
                return None
            if holds in (Holds.ADDRESS, Holds.BITS, Holds.READ_BACK):
                operands.append((leaf, value))
            elif not (isinstance(leaf, ast.Name) and leaf.id in self.constants):
                return None
        if not operands:
            return None
        dumps = {ast.dump(leaf) for leaf, _ in operands}
        holds_set = {value.holds for _, value in operands}
        if len(dumps) != 1 or len(holds_set) != 1:
            return None
        operand_value = operands[0][1]

        signed_input = operand_value.holds is not Holds.ADDRESS
        verdict = self._verdict(node, frozenset(leaf for leaf, _ in operands), signed_input)
        if verdict is None:
            return None
        if verdict.reading is reinterpret.Reading.UNSIGNED:
            return Value(holds=Holds.ADDRESS, origin=operand_value.origin)
        if verdict.reading is reinterpret.Reading.SIGNED:
            return Value(holds=Holds.BITS, origin=operand_value.origin)
        sample, got = verdict.sample, verdict.got
        if signed_input:
            wanted = f"{to_unsigned(sample):#x} (or {sample} unchanged)"
        else:
            wanted = f"its int64 bits {reinterpret.as_signed(sample)} (or {sample:#x} unchanged)"
        message = (
            f"`{self._text(node, 60)}` reinterprets {_what(operand_value)} wrongly: for "
            f"{sample if signed_input else hex(sample)} it gives {got}, not {wanted}"
        )
        self._report("bad-bitcast", node, frame, message)
        return NOTHING

    def _verdict(
        self, node: ast.expr, operands: frozenset[ast.expr], signed_input: bool
    ) -> reinterpret.Verdict | None:
        """What ``node`` computes from the operand at ``operands`` (decided once per module: a
        helper run for each call sees the same expression)."""
        key = (node, operands, signed_input)
        if key not in self._verdicts:
            verdict = None
            if reinterpret.uses_sign_constants(node, operands.__contains__, self.constants):
                verdict = reinterpret.classify(
                    node, operands.__contains__, self.constants, signed_input=signed_input
                )
            self._verdicts[key] = verdict
        return self._verdicts[key]

    def _binary(self, node: ast.BinOp, frame: Frame) -> Value:
        left = self._value(node.left, frame)
        right = self._value(node.right, frame)
        mixed = self._mixed_sign(left, right) or self._mixed_sign(right, left)
        if mixed is not None:
            address, signed = mixed
            assert address.dtype is not None and signed.dtype is not None
            message = (
                f"{_what(address)} ({address.dtype.name}) meets a signed {signed.dtype.name} "
                f"value in `{self._text(node, 60)}`: NumPy promotes the result to float64, "
                "rounding the address"
            )
            self._report("mixed-sign-numpy", node, frame, message)
            # Still the address, rounded: what it is stored into holds addresses.
            return Value(
                holds=Holds.ADDRESS,
                dtype=dtypes.library_dtype("numpy", "float64"),
                origin=address.origin,
            )
        if left.element is not None or right.element is not None or left.items or right.items:
            if isinstance(node.op, ast.Add):
                return Value(element=join(element_of(left), element_of(right)))
            if isinstance(node.op, ast.Mult):
                container = left if left.element is not None or left.items else right
                return Value(element=element_of(container))
            return NOTHING
        typed = left.dtype or right.dtype
        left_holds, right_holds = left.holds, right.holds
        holds: Holds | None = None
        if isinstance(node.op, ast.Add):
            if left_holds and not right_holds:
                holds = left_holds
            elif right_holds and not left_holds:
                holds = right_holds
        elif isinstance(node.op, ast.Sub):
            holds = left_holds if left_holds and not right_holds else None
        elif isinstance(node.op, ast.BitOr):
            holds = left_holds or right_holds
        elif isinstance(node.op, ast.BitAnd):
            holds = self._masked(node, left, right)
        origin = left.origin or right.origin
        if typed is not None:
            dtype = typed if (left.dtype or typed) == (right.dtype or typed) else None
            scalar = (left.scalar or left.dtype is None) and (right.scalar or right.dtype is None)
            if dtype is None:
                return NOTHING
            return Value(holds=holds, dtype=dtype, scalar=scalar, origin=origin)
        return Value(holds=holds, origin=origin) if holds else NOTHING

    def _masked(self, node: ast.BinOp, left: Value, right: Value) -> Holds | None:
        """``p & mask``: still an address when the mask keeps the high bits (alignment), not
        when it keeps only the low ones (an offset in a page)."""
        for value, other in ((left, node.right), (right, node.left)):
            if value.holds is None:
                continue
            mask = reinterpret.evaluate_constant(other, self.constants)
            if mask is not None and (mask < 0 or mask >= 1 << 32):
                return value.holds
        return None

    def _mixed_sign(self, address: Value, other: Value) -> tuple[Value, Value] | None:
        dtype, signed = address.dtype, other.dtype
        if dtype is None or signed is None:
            return None
        if dtype.library != "numpy" or signed.library != "numpy":
            return None
        if dtype.width is not Width.UNSIGNED64 or address.holds is not Holds.ADDRESS:
            return None
        return (address, other) if signed.signed_integer else None

    def _compare(self, node: ast.Compare, frame: Frame) -> None:
        values = [self._value(node.left, frame)]
        values.extend(self._value(item, frame) for item in node.comparators)
        for (a, b), op in zip(itertools.pairwise(values), node.ops, strict=True):
            if isinstance(op, ast.Is | ast.IsNot):
                continue
            for signed, unsigned in ((a, b), (b, a)):
                if self._signed_side(signed) and self._unsigned_side(unsigned):
                    message = (
                        f"{_what(signed)} are compared with {_what(unsigned)}: an upper-half "
                        "address reads back negative and never matches"
                    )
                    self._report("signed-compare", node, frame, message)
                    return

    @staticmethod
    def _signed_side(value: Value) -> bool:
        holds = carried(value)
        if holds is Holds.READ_BACK:
            return True
        return (
            value.dtype is not None and value.dtype.width is Width.SIGNED64 and holds is Holds.BITS
        )

    @staticmethod
    def _unsigned_side(value: Value) -> bool:
        if carried(value) is not Holds.ADDRESS:
            return False
        return value.dtype is None or value.dtype.width is Width.UNSIGNED64

    # Calls.

    def _call_expression(self, node: ast.Call, frame: Frame) -> Value:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "data_ptr":
            self._value(func.value, frame)
            return Value(holds=Holds.ADDRESS, origin=self._source(node))
        if isinstance(func, ast.Subscript):
            return self._launch(node, frame)
        name = self._qualify(func)

        def shadowed_by(named: ast.Name) -> bool:
            return named.id in frame.env or named.id in self.module_env

        shadowed = isinstance(func, ast.Name) and shadowed_by(func)
        if name is not None and not shadowed:
            library = self._library_call(name, node, frame)
            if library is not None:
                return library
        if isinstance(func, ast.Name) and not shadowed:
            builtin = self._builtin_call(func.id, node, frame)
            if builtin is not None:
                return builtin
            if func.id in self.classes:
                info = self.classes[func.id]
                instance = Value(instance=info.name)
                found = self._method(info, "__init__")
                arguments, keywords = self._arguments(node, frame)
                if found is not None and any(
                    v != NOTHING for v in (*arguments, *keywords.values())
                ):
                    _, attributes = self._run(
                        found[1], found[0], arguments, keywords, instance, frame.depth
                    )
                    if attributes:
                        instance = Value(instance=info.name, keys=attributes)
                return instance
            if func.id in self.functions:
                arguments, keywords = self._arguments(node, frame)
                function = self.functions[func.id]
                return self._run(function, None, arguments, keywords, None, frame.depth)[0]
        if isinstance(func, ast.Attribute):
            if (
                isinstance(func.value, ast.Name)
                and func.value.id == "int"
                and func.attr == "from_bytes"
            ):
                return self._from_bytes(node, frame)
            receiver = self._value(func.value, frame)
            owner = self.classes.get(receiver.instance or "")
            if owner is None and isinstance(func.value, ast.Name) and not shadowed_by(func.value):
                owner = self.classes.get(func.value.id)
                receiver = Value(instance=owner.name) if owner else receiver
            found = self._method(owner, func.attr) if owner is not None else None
            if found is not None:
                info, method = found
                arguments, keywords = self._arguments(node, frame)
                bound = None if _is_static(method) else receiver
                return self._run(method, info, arguments, keywords, bound, frame.depth)[0]
            if owner is not None and self._lookup(owner, func.attr, frame) is None:
                self._arguments(node, frame)
                return self._generic_factory(node, frame)
            return self._method_call(func, node, frame, receiver)
        self._arguments(node, frame)
        return self._generic_factory(node, frame)

    def _arguments(self, node: ast.Call, frame: Frame) -> tuple[list[Value], dict[str, Value]]:
        arguments = [self._item(arg, frame) for arg in node.args]
        keywords = {kw.arg: self._value(kw.value, frame) for kw in node.keywords if kw.arg}
        for kw in node.keywords:
            if kw.arg is None:
                self._value(kw.value, frame)
        return arguments, keywords

    def _dtype_argument(self, node: ast.Call, frame: Frame, position: int | None) -> Dtype | None:
        for keyword in node.keywords:
            if keyword.arg == "dtype":
                return self._dtype(keyword.value, frame)
        if position is not None and len(node.args) > position:
            return self._dtype(node.args[position], frame)
        return None

    def _has_dtype(self, node: ast.Call, position: int | None) -> bool:
        return any(kw.arg == "dtype" for kw in node.keywords) or (
            position is not None and len(node.args) > position
        )

    def _generic_factory(self, node: ast.Call, frame: Frame) -> Value:
        """An unknown call given ``dtype=``: storage of that dtype (``make_buffer(n,
        dtype=torch.int64)``)."""
        dtype = self._dtype_argument(node, frame, None)
        if dtype is None or dtype.library not in ("torch", "numpy"):
            return NOTHING
        return Value(dtype=dtype, made=f"line {node.lineno}")

    def _construct(
        self,
        node: ast.Call,
        data: Value,
        dtype: Dtype | None,
        library: str,
        frame: Frame,
        call: str,
    ) -> Value:
        """Storage made from ``data``: a tensor, an array or a scalar of ``dtype``."""
        holds = carried(data)
        typed = data.dtype is not None
        made = f"line {node.lineno}"
        if dtype is None:
            if library == "torch" and holds is Holds.ADDRESS and not typed:
                message = (
                    f"{_what(data)} is put in `{call}(...)` with no dtype: torch infers "
                    "torch.int64, which overflows at 2**63"
                )
                self._report("inferred-int64", node, frame, message)
                return Value(dtype=dtypes.library_dtype("torch", "int64"), made=made)
            if typed:
                assert data.dtype is not None
                return replace(
                    data, dtype=_in_library(data.dtype, library), scalar=False, made=made
                )
            return Value(
                holds=holds if holds is Holds.ADDRESS else None, dtype=_UNKNOWN[library], made=made
            )
        if holds in (Holds.ADDRESS, Holds.BITS):
            # A typed source is cast with its bits kept; Python ints must fit as they are.
            kept = _bits_kept(dtype)
            if kept is not None and (typed or kept is holds):
                return Value(holds=kept, dtype=dtype, origin=origin_of(data), made=made)
            if dtype.unsafe:
                rule, consequence = _MESSAGES[dtype.width]
                message = f"{_what(data)} is put in `{call}(...)` as {dtype.name}: {consequence}"
                self._report(rule, node, frame, message, dtype=dtype)
        return Value(dtype=dtype, made=made)

    def _library_call(self, name: str, node: ast.Call, frame: Frame) -> Value | None:
        if name in _ADDRESS_SOURCES:
            self._arguments(node, frame)
            return Value(holds=Holds.ADDRESS, origin=self._source(node))
        if name in _CONSTRUCTORS:
            library = _CONSTRUCTORS[name]
            arguments, _ = self._arguments(node, frame)
            data = _nth(arguments, 0)
            position = 1 if library == "numpy" else None
            dtype = self._dtype_argument(node, frame, position)
            if self._has_dtype(node, position) and dtype is None:
                return NOTHING
            return self._construct(node, data, dtype, library, frame, _short(name))
        module, _, attribute = name.rpartition(".")
        if module == "torch" and attribute in _TYPED_TENSORS:
            arguments, _ = self._arguments(node, frame)
            data = arguments[0] if len(arguments) == 1 else NOTHING
            dtype = dtypes.library_dtype("torch", _TYPED_TENSORS[attribute])
            return self._construct(node, data, dtype, "torch", frame, _short(name))
        if name in _FILLED:
            library = _FILLED[name]
            arguments, keywords = self._arguments(node, frame)
            fill = arguments[1] if len(arguments) > 1 else keywords.get("fill_value", NOTHING)
            dtype = self._dtype_argument(node, frame, 2 if library == "numpy" else None)
            if dtype is None and (library == "numpy" or self._has_dtype(node, None)):
                return NOTHING
            return self._construct(node, fill, dtype, library, frame, _short(name))
        if name in _FACTORIES:
            self._arguments(node, frame)
            if self._has_dtype(node, None):
                dtype = self._dtype_argument(node, frame, None)
            else:
                dtype = _FACTORIES[name]
            return Value(dtype=dtype, made=f"line {node.lineno}") if dtype else NOTHING
        if module == "numpy" and dtypes.library_dtype("numpy", attribute) is not None:
            dtype = dtypes.library_dtype("numpy", attribute)
            arguments, _ = self._arguments(node, frame)
            data = _nth(arguments, 0)
            made = self._construct(node, data, dtype, "numpy", frame, _short(name))
            return replace(made, scalar=data.element is None and data.items is None)
        if name == "torch.from_numpy":
            arguments, _ = self._arguments(node, frame)
            data = _nth(arguments, 0)
            return replace(data, dtype=_in_library(data.dtype, "torch")) if data.dtype else NOTHING
        if name == "numpy.copyto":
            arguments, _ = self._arguments(node, frame)
            if len(arguments) >= 2:
                self._store(node, arguments[0], arguments[1], frame, node.args[0])
            return NOTHING
        if module == "ctypes" and dtypes.library_dtype("ctypes", attribute) is not None:
            dtype = dtypes.library_dtype("ctypes", attribute)
            assert dtype is not None
            arguments, _ = self._arguments(node, frame)
            data = _nth(arguments, 0)
            kept = _bits_kept(dtype)
            if carried(data) in (Holds.ADDRESS, Holds.BITS) and kept is not None:
                # ctypes wraps a Python int into its 64 bits: c_int64(p).value is a bitcast.
                return Value(holds=kept, dtype=dtype, origin=origin_of(data))
            return self._construct(node, data, dtype, "ctypes", frame, _short(name))
        if name == "array.array":
            arguments, _ = self._arguments(node, frame)
            code = node.args[0] if node.args else None
            if isinstance(code, ast.Constant) and isinstance(code.value, str):
                dtype = dtypes.array_typecode(code.value)
                data = _nth(arguments, 1)
                return self._construct(node, data, dtype, "array", frame, "array.array")
            return NOTHING
        if name in ("struct.pack", "struct.pack_into"):
            return self._pack(node, frame, skip=1 if name == "struct.pack" else 3)
        if name in ("struct.unpack", "struct.unpack_from"):
            return self._unpack(node, frame)
        if module in ("torch", "numpy", "triton", "triton.language"):
            self._arguments(node, frame)
            return self._generic_factory(node, frame)
        return None

    def _pack(self, node: ast.Call, frame: Frame, skip: int) -> Value:
        arguments, _ = self._arguments(node, frame)
        fmt = node.args[0] if node.args else None
        if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
            return NOTHING
        fields = dtypes.struct_fields(fmt.value)
        values = arguments[skip:]
        if (
            fields is None
            or len(fields) != len(values)
            or any(isinstance(a, ast.Starred) for a in node.args)
        ):
            return NOTHING
        packed: Holds | None = None
        for dtype, value in zip(fields, values, strict=True):
            holds = carried(value)
            if dtype is None or holds not in (Holds.ADDRESS, Holds.BITS):
                continue
            if _bits_kept(dtype) is holds:
                packed = holds
                continue
            if holds is Holds.BITS and dtype.width is Width.UNSIGNED64:
                continue
            rule, consequence = _MESSAGES.get(dtype.width, ("", ""))
            if rule:
                message = (
                    f"{_what(value)} is packed by `struct.pack` as {dtype.name}: {consequence}"
                )
                self._report(rule, node, frame, message, dtype=dtype)
        if len(values) == 1 and packed is not None:
            return Value(holds=packed, dtype=_BYTES, origin=origin_of(values[0]))
        return NOTHING

    def _unpack(self, node: ast.Call, frame: Frame) -> Value:
        arguments, _ = self._arguments(node, frame)
        fmt = node.args[0] if node.args else None
        data = _nth(arguments, 1)
        if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
            return NOTHING
        fields = dtypes.struct_fields(fmt.value)
        if data.dtype != _BYTES or fields is None or len(fields) != 1 or fields[0] is None:
            return NOTHING
        kept = _bits_kept(fields[0])
        return Value(items=(Value(holds=kept, origin=data.origin),)) if kept else NOTHING

    def _from_bytes(self, node: ast.Call, frame: Frame) -> Value:
        arguments, _ = self._arguments(node, frame)
        data = _nth(arguments, 0)
        if data.dtype != _BYTES:
            return NOTHING
        signed = _signed_keyword(node)
        return Value(holds=Holds.BITS if signed else Holds.ADDRESS, origin=data.origin)

    def _builtin_call(self, name: str, node: ast.Call, frame: Frame) -> Value | None:
        if name in self.functions or name in self.classes or name in self.imports:
            return None
        if name == "int":
            arguments, _ = self._arguments(node, frame)
            if len(arguments) != 1:
                return NOTHING
            value = arguments[0]
            return read_back(value) if value.dtype is not None else value
        if name == "float":
            arguments, _ = self._arguments(node, frame)
            if arguments and carried(arguments[0]) in (Holds.ADDRESS, Holds.BITS):
                message = (
                    f"{_what(arguments[0])} is converted by `float()`: {_MESSAGES[Width.FLOAT][1]}"
                )
                self._report("float-storage", node, frame, message)
            return NOTHING
        if name in _BUILTIN_CONTAINERS:
            arguments, _ = self._arguments(node, frame)
            if len(arguments) != 1:
                return NOTHING
            value = arguments[0]
            element = element_of(value)
            if value.dtype is not None:
                element = read_back(element)
            return list_of(element)
        if name == "zip":
            arguments, _ = self._arguments(node, frame)
            parts = tuple(element_of(a) for a in arguments)
            return (
                Value(element=Value(items=parts)) if any(p != NOTHING for p in parts) else NOTHING
            )
        if name == "enumerate":
            arguments, _ = self._arguments(node, frame)
            element = element_of(_nth(arguments, 0))
            return Value(element=Value(items=(NOTHING, element))) if element != NOTHING else NOTHING
        if name in ("min", "max"):
            arguments, _ = self._arguments(node, frame)
            if len(arguments) == 1:
                return element_of(arguments[0])
            return join_all(arguments)
        if name == "next":
            arguments, _ = self._arguments(node, frame)
            return element_of(_nth(arguments, 0))
        if name in _OPAQUE_BUILTINS:
            self._arguments(node, frame)
            return NOTHING
        return None

    def _grow(self, func: ast.Attribute, node: ast.Call, frame: Frame, current: Value) -> Value:
        """``ptrs.append(p)`` (or ``extend``, ``insert``, ``add``): the list now holds ``p``."""
        arguments, _ = self._arguments(node, frame)
        if not arguments:
            return NOTHING
        added = arguments[-1]
        if func.attr == "extend":
            added = element_of(added)
        grown = Value(element=join(current.element, added))
        if isinstance(func.value, ast.Name | ast.Attribute) and frame.statement is not None:
            if isinstance(func.value, ast.Attribute) and not (
                isinstance(func.value.value, ast.Name) and func.value.value.id == frame.self_name
            ):
                return NOTHING
            self._bind(func.value, grown, frame, frame.statement)
        return NOTHING

    def _method_call(
        self, func: ast.Attribute, node: ast.Call, frame: Frame, receiver: Value
    ) -> Value:
        method = func.attr
        if method in ("append", "extend", "insert", "add") and receiver.dtype is None:
            return self._grow(func, node, frame, receiver)
        if (
            method == "to_bytes"
            and receiver.dtype is None
            and receiver.holds in (Holds.ADDRESS, Holds.BITS)
        ):
            self._arguments(node, frame)
            signed = _signed_keyword(node)
            if receiver.holds is Holds.ADDRESS and signed:
                message = (
                    f"{_what(receiver)} is converted by `to_bytes(..., signed=True)`: values at "
                    "or above 2**63 overflow"
                )
                self._report("signed-storage", node, frame, message)
                return NOTHING
            return Value(holds=receiver.holds, dtype=_BYTES, origin=receiver.origin)
        if receiver.element is not None or receiver.items is not None:
            self._arguments(node, frame)
            if method == "copy":
                return receiver
            if method == "pop":
                return element_of(receiver)
            return NOTHING
        dtype = receiver.dtype
        if dtype is None and method in _CONVERTING:
            # Of a tensor or an array not followed here (a parameter): the dtype it is given.
            target = self._dtype_argument(node, frame, 0)
            self._arguments(node, frame)
            if target is None or target.library not in ("torch", "numpy"):
                return NOTHING
            return Value(dtype=target, made=f"line {node.lineno}")
        if dtype is None or dtype.library not in ("torch", "numpy"):
            self._arguments(node, frame)
            return NOTHING
        if method in _STORING:
            arguments, _ = self._arguments(node, frame)
            if arguments:
                stored = arguments[-1]
                self._store(node, receiver, stored, frame, func.value)
            return receiver
        if method in _CONVERTING:
            target = self._dtype_argument(node, frame, 0)
            arguments, _ = self._arguments(node, frame)
            if target is None:
                if self._has_dtype(node, None):
                    return NOTHING
                return receiver
            return self._convert(node, receiver, target, frame, method)
        if method == "numpy":
            self._arguments(node, frame)
            viewed = receiver.viewed or ("torch" if dtype.library == "torch" else "")
            return replace(receiver, dtype=_in_library(dtype, "numpy"), viewed=viewed)
        if method == "tolist":
            self._arguments(node, frame)
            element = read_back(replace(receiver, scalar=True))
            return list_of(element)
        if method == "item":
            self._arguments(node, frame)
            return read_back(receiver)
        if method in _SAME_STORAGE:
            self._arguments(node, frame)
            return receiver
        self._arguments(node, frame)
        return NOTHING

    def _convert(
        self, node: ast.Call, source: Value, target: Dtype, frame: Frame, how: str
    ) -> Value:
        """``.view(dtype)`` / ``.to(dtype)`` / ``.astype(dtype)`` of typed storage."""
        library = source.dtype.library if source.dtype else target.library
        target = _in_library(target, library) or target
        made = f"line {node.lineno}"
        holds = source.holds
        if holds in (Holds.ADDRESS, Holds.BITS):
            kept = _bits_kept(target)
            if kept is not None:
                return Value(
                    holds=kept, dtype=target, scalar=source.scalar, origin=source.origin, made=made
                )
            if target.unsafe and how != "view":
                rule, consequence = _MESSAGES[target.width]
                message = f"{_what(source)} is converted by `.{how}({target.name})`: {consequence}"
                self._report(rule, node, frame, message, dtype=target)
        return Value(dtype=target, scalar=source.scalar, made=made)

    def _launch(self, node: ast.Call, frame: Frame) -> Value:
        """``kernel[grid](...)``: plain int addresses passed, for the kernel to be looked up
        once every file's kernels are known."""
        assert isinstance(node.func, ast.Subscript)
        kernel = node.func.value
        self._value(node.func.slice, frame)
        name = (
            kernel.id
            if isinstance(kernel, ast.Name)
            else kernel.attr
            if isinstance(kernel, ast.Attribute)
            else None
        )
        arguments: list[tuple[int | None, str | None, ast.expr]] = [
            (index, None, arg) for index, arg in enumerate(node.args)
        ]
        arguments += [(None, kw.arg, kw.value) for kw in node.keywords if kw.arg]
        for position, keyword, argument in arguments:
            value = self._value(argument, frame)
            holds = value.holds
            if name is None or value.dtype is not None or holds not in (Holds.ADDRESS, Holds.BITS):
                continue
            if isinstance(argument, ast.Starred):
                continue
            key = (argument.lineno, argument.col_offset, name)
            launch = Launch(name, position, keyword, holds, value.origin)
            self.launches.setdefault(key, LaunchSite(launch, argument, frame.statement))
        return NOTHING

    # Functions.

    def _run(
        self,
        function: Function,
        owner: ClassInfo | None,
        arguments: list[Value],
        keywords: dict[str, Value],
        instance: Value | None,
        depth: int,
    ) -> tuple[Value, tuple[tuple[str, Value], ...]]:
        """What ``function`` returns given these arguments, and the attributes it leaves set
        on ``self`` (for a constructor)."""
        key = (function, tuple(arguments), tuple(sorted(keywords.items())), instance)
        if key in self._memo:
            return self._memo[key]
        if key in self._running or depth > _MAX_DEPTH:
            return NOTHING, ()
        self._running.add(key)
        try:
            frame = Frame({}, owner, depth=depth + 1)
            parameters = function.args.posonlyargs + function.args.args
            if instance is not None and parameters:
                frame.self_name = parameters[0].arg
                frame.env[parameters[0].arg] = instance
                frame.self_attributes = dict(instance.keys or ())
                frame.generic = instance.keys is None and all(
                    value == NOTHING for value in (*arguments, *keywords.values())
                )
                parameters = parameters[1:]
            for parameter, value in zip(parameters, arguments, strict=False):
                frame.env[parameter.arg] = value
            for parameter in parameters[len(arguments) :] + function.args.kwonlyargs:
                frame.env[parameter.arg] = keywords.get(parameter.arg, NOTHING)
            if function.args.vararg is not None:
                frame.env[function.args.vararg.arg] = list_of(
                    join_all(arguments[len(parameters) :])
                )
            if function.args.kwarg is not None:
                frame.env[function.args.kwarg.arg] = NOTHING
            self._block(self._body(function), frame)
            result = join_all(frame.returns)
            attributes = tuple(
                (name, value) for name, value in frame.self_attributes.items() if value != NOTHING
            )
        finally:
            self._running.discard(key)
        self._memo[key] = (result, attributes)
        return result, attributes

    def _body(self, function: Function) -> list[ast.stmt]:
        """The function's statements; a helper written as ``if x >= 2**63: x -= 2**64`` then
        ``return x`` (or with two returns) is read as the one conditional expression it is."""
        if function not in self._helpers:
            self._helpers[function] = _as_expression(function) or function.body
        return self._helpers[function]


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones (in functions, classes, branches, loops) included; cheaper
    than :func:`ast.walk`, which visits every expression too."""
    for statement in body:
        yield statement
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for handler in getattr(statement, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(statement, "cases", ()):
            yield from _statements(case.body)


_UNKNOWN = {
    library: Dtype(f"{library} inferred dtype", "", library)
    for library in ("torch", "numpy", "array", "ctypes", "struct")
}


def _made(node: ast.expr) -> ast.expr:
    """The storage itself, without the views and slices it is reached through:
    ``self.src_ptrs`` of ``self.src_ptrs.np[:n]``."""
    while True:
        if isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRIBUTES
        ):
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _VIEWING_CALLS
        ):
            node = node.func.value
        else:
            return node


def _is_static(function: Function) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def _joined(maps: list[dict[str, Value]]) -> dict[str, Value]:
    """The names of several paths joined: each known on one path is joined with the others."""
    joined: dict[str, Value] = {}
    for names in maps:
        for name, value in names.items():
            joined[name] = join(joined[name], value) if name in joined else value
    return joined


def _bits_kept(dtype: Dtype) -> Holds | None:
    """What a typed cast of an address's 64 bits to ``dtype`` holds: its int64 bits, the address
    itself, or (narrower, float) neither."""
    if dtype.width is Width.SIGNED64:
        return Holds.BITS
    if dtype.width is Width.UNSIGNED64:
        return Holds.ADDRESS
    return None


def _nth(values: Sequence[Value], index: int) -> Value:
    """The value of the ``index``-th argument, where it is given."""
    return values[index] if len(values) > index else NOTHING


def _signed_keyword(node: ast.Call) -> bool:
    """Whether the call says ``signed=True`` (``int.from_bytes``, ``int.to_bytes``)."""
    return any(
        kw.arg == "signed" and isinstance(kw.value, ast.Constant) and kw.value.value is True
        for kw in node.keywords
    )


def _in_library(dtype: Dtype | None, library: str) -> Dtype | None:
    """The same dtype, seen from ``library`` (a torch tensor's ``.numpy()``)."""
    if dtype is None or dtype.library == library or library not in ("torch", "numpy"):
        return dtype
    if dtype.library not in ("torch", "numpy"):
        return dtype
    return dtypes.library_dtype(library, dtype.kind) or replace(dtype, library=library)


def _short(name: str) -> str:
    return name.replace("numpy.", "np.")


def _as_expression(function: Function) -> list[ast.stmt] | None:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    parameters = function.args.posonlyargs + function.args.args
    if not body or not isinstance(body[0], ast.If) or len(parameters) != 1:
        return None
    branch = body[0]
    test = branch.test
    if len(branch.body) != 1:
        return None
    inner = branch.body[0]
    if isinstance(inner, ast.Return) and inner.value is not None:
        if len(body) == 1 and len(branch.orelse) == 1:
            otherwise = branch.orelse[0]
        elif len(body) == 2 and not branch.orelse:
            otherwise = body[1]
        else:
            return None
        if not (isinstance(otherwise, ast.Return) and otherwise.value is not None):
            return None
        expression = ast.IfExp(test=test, body=inner.value, orelse=otherwise.value)
        ast.copy_location(expression, inner.value)
        return [ast.copy_location(ast.Return(value=expression), branch)]
    if len(body) != 2 or branch.orelse or not isinstance(body[1], ast.Return):
        return None
    returned = body[1].value
    if not isinstance(returned, ast.Name):
        return None
    name = returned.id
    if (
        isinstance(inner, ast.AugAssign)
        and isinstance(inner.target, ast.Name)
        and inner.target.id == name
    ):
        changed: ast.expr = ast.BinOp(
            left=ast.Name(id=name, ctx=ast.Load()), op=inner.op, right=inner.value
        )
    elif (
        isinstance(inner, ast.Assign)
        and len(inner.targets) == 1
        and isinstance(inner.targets[0], ast.Name)
        and inner.targets[0].id == name
    ):
        changed = inner.value
    else:
        return None
    ast.copy_location(changed, inner)
    ast.fix_missing_locations(changed)
    expression = ast.IfExp(test=test, body=changed, orelse=ast.Name(id=name, ctx=ast.Load()))
    ast.copy_location(expression, inner)
    ast.fix_missing_locations(expression)
    return [ast.copy_location(ast.Return(value=expression), branch)]
