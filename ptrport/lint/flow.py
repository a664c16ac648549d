"""Following device addresses through one module, to the storage they end up in.

Each expression is given an abstract :class:`~ptrport.lint.values.Value`: whether it holds an
address (or its int64 bits, or ints read back from int64 storage), whether it is typed storage
(a tensor, an array, a numpy scalar) of some dtype, a list or tuple of such values, a dtype, or
an instance of a class of the module. Statements are run in order within a function; both
branches of an ``if`` are run and joined, a loop body twice. Attributes set on ``self``
anywhere in a class are known in all its methods; a call to a function or method of the same
module runs its body with the arguments' values, a call of a library is read from the facts of
:mod:`ptrport.lint.library`. Where an address meets storage that cannot hold
``2**63..2**64-1``, a finding is recorded, worded by :mod:`ptrport.lint.rules`.

Each kind of statement, expression and known call has a method of :class:`ModuleFlow`, found
in a table by the node's type or the call's name.

Where a value is not known, nothing is assumed: a finding needs an address, followed from its
source, and a dtype, read from the code.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, TypeVar

from ptrport.lint import dtypes, reinterpret, rules
from ptrport.lint.dtypes import Dtype, Width
from ptrport.lint.library import (
    ADDRESS_SOURCES,
    ARRAY_INTERFACES,
    BUILTIN_CONTAINERS,
    BYTES,
    CONSTRUCTORS,
    CONVERTING,
    DTYPE_MODULES,
    FACTORIES,
    FILLED,
    GROWING,
    OPAQUE_BUILTINS,
    OUT_POINTERS,
    PACKING,
    SAME_STORAGE,
    STORAGE_MODULES,
    STORING,
    SYMMETRIC_MEMORY,
    SYMMETRIC_MEMORY_ADDRESSES,
    SYMMETRIC_MEMORY_HANDLES,
    TYPED_TENSORS,
    UNKNOWN,
    UNPACKING,
    VIEW_ATTRIBUTES,
    VIEWING_CALLS,
    opens_ipc_memory,
)
from ptrport.lint.tree_index import (
    PROPERTY,
    ClassShape,
    FunctionShape,
    ModuleFile,
    Shape,
    TreeIndex,
    absolute,
    classes_named,
    exported,
    holds_address,
)
from ptrport.lint.values import (
    NOTHING,
    ClassInfo,
    Frame,
    Function,
    Holds,
    Kernel,
    Launch,
    LaunchSite,
    Site,
    Value,
    bits_kept,
    carried,
    element_of,
    join,
    join_all,
    join_names,
    list_of,
    nth,
    origin_of,
    read_back,
)


class Arguments(NamedTuple):
    """A call's arguments: by position (a starred one as what its elements are), by keyword."""

    positional: list[Value]
    keywords: dict[str, Value]


_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass
class _Trace:
    """What a function's run read of the classes' attributes and reported, while the classes'
    parts are run."""

    reads: list[tuple[str, str, Value | None]]
    """The reads of the part that ran it: those from :attr:`first` to :attr:`last` are its."""
    first: int
    last: int
    sites: list[tuple[tuple[int, int, str], Site]]
    launches: list[tuple[tuple[int, int, str], LaunchSite]]


class _Run(NamedTuple):
    """A function's run, remembered for the same arguments: what it returns, the attributes
    it leaves set on ``self``, and its :class:`_Trace` (``None`` outside the classes' parts)."""

    result: Value
    attributes: tuple[tuple[str, Value], ...]
    trace: _Trace | None


def _added(found: dict[_K, _V], before: int) -> list[tuple[_K, _V]]:
    """The entries added to ``found`` since it held ``before`` (a dict keeps their order)."""
    return list(found.items())[before:] if len(found) > before else []


@dataclass
class _ClassPass:
    """What the last run of one part of a class (its body, a method, a factory) found, and the
    attributes it read (owner, name, value seen)."""

    sites: dict[tuple[int, int, str], Site]
    launches: dict[tuple[int, int, str], LaunchSite]
    reads: list[tuple[str, str, Value | None]]


CLASS_PASSES = 3
"""How many times the methods of a module's classes are run for what the classes hold, at most
(:meth:`ModuleFlow._settle`)."""
_MAX_DEPTH = 4
"""How deep calls of the module's functions are followed."""
_SHAPE_DEPTH = 2
"""How deep they are followed for the shapes the other modules see (a factory calling a
helper that builds the storage)."""


def _is_jit(decorator: ast.expr, qualify: Callable[[ast.expr], str | None]) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = qualify(target) or ""
    return name.startswith("triton") and name.endswith(".jit")


class ModuleFlow:
    """The analysis of one parsed module: :attr:`sites`, :attr:`kernels`, :attr:`launches`;
    or, for the other modules of the tree, the :meth:`shapes` of its classes and functions.

    ``module`` names the file (for its relative imports and for what it tells the others);
    ``index`` holds what the classes and functions it imports from the tree are."""

    def __init__(
        self,
        tree: ast.Module,
        module: ModuleFile | None = None,
        index: TreeIndex | None = None,
    ) -> None:
        self.tree = tree
        self.module = module or ModuleFile("", "")
        self.index = index or TreeIndex()
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
        self._memo: dict[tuple[object, ...], _Run] = {}
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
        self._annotated: dict[ast.expr, str | None] = {}
        self._lineages: dict[str, list[ClassInfo]] = {}
        self._depth = _MAX_DEPTH
        self.consulted: set[str] = set()
        """The names imported from elsewhere that the analysis looked up (classes, functions,
        annotations), found in :attr:`index` or not."""
        self.unknown_storage = False
        """Whether an address is stored into storage whose dtype is not known here (which
        what :attr:`consulted` names may decide)."""
        self.unknown_stored = False
        """Whether what is not known here is stored into storage that cannot hold addresses
        (which, from what :attr:`consulted` names, may be one)."""
        self._function_returns: dict[str, Value] = {}
        self.consulted_members: set[str] = set()
        """The methods called, and the properties read (``@name``), on what is not followed
        here, which the tree's classes may say hold addresses (:attr:`TreeIndex.members`)."""
        self.foreign_reads: set[str] = set()
        """The attributes read and the methods called on what no class of the module is: what
        is not followed here, an instance of a class of another module, known to the index or
        not (through which that class may give addresses, as what it is becomes known or
        changes)."""
        self.members_by_definition: dict[str, set[str]] = {}
        """Those of :attr:`consulted_members` consulted while each top-level function or class
        of the module was run (what it gives the other modules may rest on them)."""
        self._definition: str | None = None
        self._returned: dict[Function, frozenset[str] | None] = {}
        self._leaves: dict[ast.stmt, bool] = {}

    # The passes.

    def run(self) -> ModuleFlow:
        self._collect_definitions()
        self._block(self.tree.body, Frame(self.module_env))
        self._settle(list(self.classes.values()))
        methods = {id(m) for info in self.classes.values() for m in info.methods.values()}
        for function in self._all_functions:
            if id(function) not in methods:
                self._definition = function.name
                result, _ = self._run(function, None, [], {}, None, 0)
                if self.functions.get(function.name) is function:
                    self._function_returns[function.name] = result
        self._definition = None
        return self

    def address_shapes(self) -> list[Shape]:
        """After :meth:`run`, the shapes of the module's classes and functions that hold
        addresses."""
        local = frozenset(self.classes)
        shapes: list[Shape] = [
            FunctionShape(_qualified(self.module, name), exported(value, self.module, local))
            for name, value in self._function_returns.items()
            if holds_address(value)
        ]
        for info in self.classes.values():
            values = (*info.attributes.values(), *info.returns.values())
            if any(holds_address(value) for value in values):
                shapes.append(self._shape(info, local))
        return shapes

    def members(self) -> tuple[dict[str, Value], frozenset[str]]:
        """After :meth:`run`, the methods and properties (``@name``) of the module's classes:
        those that give addresses, with what they give, and the names of those that do not
        (an abstract one, whose body only raises or passes, is neither)."""
        local = frozenset(self.classes)
        giving: dict[str, Value] = {}
        plain: set[str] = set()
        for info in self.classes.values():
            for name, method in info.methods.items():
                if name.startswith("__") or _abstract(method):
                    continue
                key = PROPERTY + name if _is_property(method) else name
                value = info.returns.get(name, NOTHING)
                if holds_address(value):
                    giving[key] = join(giving.get(key), exported(value, self.module, local))
                else:
                    plain.add(key)
        return {k: v for k, v in giving.items() if k not in plain}, frozenset(plain)

    def shapes(self, names: Iterable[str]) -> dict[str, Shape]:
        """What the other modules of the tree see of ``names`` (classes and functions defined
        here), by qualified name; with the classes of this module that their values are."""
        self._depth = _SHAPE_DEPTH
        self._collect_definitions()
        self._block(self.tree.body, Frame(self.module_env))
        wanted = [name for name in names if name in self.classes or name in self.functions]
        classes = self._with_bases(self.classes[n] for n in wanted if n in self.classes)
        self._settle(classes)
        returns = {
            name: self._run(self.functions[name], None, [], {}, None, 0)[0]
            for name in wanted
            if name not in self.classes
        }
        shapes: dict[str, Shape] = {}
        local = frozenset(self.classes)
        for name, value in returns.items():
            shapes[name] = FunctionShape(
                _qualified(self.module, name), exported(value, self.module, local)
            )
        named = [c.name for c in classes]
        for _ in range(2):
            for info in classes:
                shapes[info.name] = self._shape(info, local)
            more = {
                name
                for shape in shapes.values()
                for value in _values_of(shape)
                for name in classes_named(value)
                if name in self.classes and name not in named
            }
            if not more:
                break
            classes = self._with_bases(self.classes[name] for name in sorted(more))
            named.extend(info.name for info in classes)
            self._settle(classes)
        return shapes

    def _shape(self, info: ClassInfo, local: frozenset[str]) -> ClassShape:
        """``info`` as the other modules see it (its classes named by ``local``)."""
        attributes = {}
        for owner in self._lineage(info):
            for name in (*owner.attributes, *owner.annotations):
                value = self._lookup(info, name, None)
                if name not in attributes and value is not None and value != NOTHING:
                    attributes[name] = exported(value, self.module, local)
        returns = {
            name: exported(value, self.module, local)
            for name, value in info.returns.items()
            if value != NOTHING
        }
        fields = tuple(info.fields) if info.fields is not None else None
        return ClassShape(_qualified(self.module, info.name), fields, attributes, returns)

    def _with_bases(self, classes: Iterable[ClassInfo]) -> list[ClassInfo]:
        found: dict[str, ClassInfo] = {}
        for info in classes:
            for owner in self._lineage(info):
                found.setdefault(owner.name, owner)
        return list(found.values())

    def _settle(self, classes: list[ClassInfo]) -> None:
        """Runs the methods of ``classes`` for what each class holds. Attributes set in one
        method are read in others: a class's pass stands once every read it made saw the
        attribute's final value; the classes whose reads did not are passed again (a few times
        at most), starting from what the last passes set, where only the parts whose own reads
        did not are run again (:meth:`_class_pass`)."""
        module_sites, module_launches = self.sites, self.launches
        passes: dict[str, dict[ast.AST, _ClassPass]] = {}
        pending = classes
        for attempt in range(1, CLASS_PASSES + 1):
            # What was remembered rests on what the classes held before this attempt.
            self._memo.clear()
            for info in pending:
                self._class_pass(info, passes.setdefault(info.name, {}))
            pending = [
                info for info in classes if not all(map(self._settled, passes[info.name].values()))
            ]
            if not pending or attempt == CLASS_PASSES:
                break
        self._memo.clear()
        self.sites, self.launches = module_sites, module_launches
        for info in classes:
            for found in passes[info.name].values():
                self._keep(found.sites.items(), found.launches.items())

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
            elif isinstance(node, ast.ImportFrom):
                module = absolute(self.module, node.level, node.module or "")
                for alias in node.names if module else ():
                    self.imports[alias.asname or alias.name] = f"{module}.{alias.name}"
        for statement in self.tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[statement.name] = statement
                self._kernel(statement)
            elif isinstance(statement, ast.ClassDef):
                self.classes[statement.name] = self._class_info(statement)
        for info in self.classes.values():
            info.fields = self._fields(info)
        for function in self.functions.values() if self.classes else ():
            made = self._made_class(function)
            if made is not None:
                made.factories.append(function)

    def _class_info(self, statement: ast.ClassDef) -> ClassInfo:
        methods = {
            item.name: item
            for item in statement.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        bases = [base.id for base in statement.bases if isinstance(base, ast.Name)]
        info = ClassInfo(statement.name, statement, bases, methods)
        for item in statement.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                info.annotations[item.target.id] = item.annotation
        return info

    def _fields(self, info: ClassInfo) -> list[str] | None:
        """What the constructor of a dataclass (without an ``__init__`` of its own) or of a
        NamedTuple takes, in order: its annotated attributes, after its bases' (for a
        dataclass)."""
        named_tuple = any(self._is(base, "typing.NamedTuple") for base in info.node.bases)
        dataclass = any(_is_dataclass(d, self._qualify) for d in info.node.decorator_list)
        if not (named_tuple or dataclass) or "__init__" in info.methods:
            return None
        fields: list[str] = []
        if dataclass:
            for base in info.bases:
                inherited = self.classes[base].fields if base in self.classes else None
                fields.extend(name for name in inherited or () if name not in fields)
        for item in info.node.body:
            if (
                isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and item.target.id not in fields
                and _in_constructor(item)
            ):
                fields.append(item.target.id)
        return fields

    def _made_class(self, function: Function) -> ClassInfo | None:
        """The class of the module a function returns a new instance of (``return Cls(...)``
        in its body), if any."""
        for statement in function.body:
            if (
                isinstance(statement, ast.Return)
                and isinstance(statement.value, ast.Call)
                and isinstance(statement.value.func, ast.Name)
                and statement.value.func.id in self.classes
            ):
                return self.classes[statement.value.func.id]
        return None

    def _is(self, node: ast.expr, name: str) -> bool:
        """Whether ``node`` names ``name`` (``typing.NamedTuple``) through this module's
        imports."""
        return self._qualify(node) == name

    def _kernel(self, function: Function) -> None:
        if not any(_is_jit(d, self._qualify) for d in function.decorator_list):
            return
        arguments = function.args.posonlyargs + function.args.args
        parameters = tuple(
            (arg.arg, self._dtype(arg.annotation) if arg.annotation else None) for arg in arguments
        )
        self.kernels.append(Kernel(function.name, function.lineno, parameters))

    def _class_pass(self, info: ClassInfo, parts: dict[ast.AST, _ClassPass]) -> None:
        """Runs each part of ``info`` (its body's assignments, each method, ``__init__`` first,
        each factory) that has not run, or whose last run read an attribute that has changed
        since: a part whose reads all saw what is held now would find what it found then
        (what it took from a run remembered from another part counts as its own: a
        :class:`_Trace`). ``parts`` keeps what each part's last run found."""
        self._definition = info.name
        ordered = sorted(info.methods.values(), key=lambda f: f.name != "__init__")
        for part in (info.node, *ordered, *info.factories):
            last = parts.get(part)
            if last is not None and self._settled(last):
                continue
            self.sites, self.launches, self._reads = {}, {}, []
            self._collecting = True
            try:
                if isinstance(part, ast.ClassDef):
                    self._class_body(info)
                elif info.methods.get(part.name) is part:
                    bound = self._bound(info, part, None)
                    info.returns[part.name] = self._run(part, info, [], {}, bound, 0)[0]
                else:
                    self._run(part, None, [], {}, None, 0)
            finally:
                self._collecting = False
            parts[part] = _ClassPass(self.sites, self.launches, self._reads)

    def _class_body(self, info: ClassInfo) -> None:
        """The assignments of ``info``'s body: what its class attributes hold."""
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

    @staticmethod
    def _bound(info: ClassInfo, method: Function, receiver: Value | None) -> Value | None:
        """What a method's first parameter is: the class for a classmethod, nothing for a
        staticmethod, else the instance (``receiver``, or any instance of the class)."""
        if _decorated(method, "staticmethod"):
            return None
        if _decorated(method, "classmethod"):
            return Value(denotes_class=info.name)
        if receiver is not None and receiver.denotes_class is not None:
            return None
        return receiver or Value(instance=info.name)

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
        library = DTYPE_MODULES.get(module)
        return dtypes.library_dtype(library, attribute) if library else None

    def _lineage(self, owner: ClassInfo) -> list[ClassInfo]:
        """The class, then its bases defined in this module, breadth first, each once."""
        found = self._lineages.get(owner.name)
        if found is None:
            found = []
            seen: set[str] = set()
            pending = [owner]
            while pending:
                info = pending.pop(0)
                if info.name not in seen:
                    seen.add(info.name)
                    found.append(info)
                    pending.extend(self.classes[b] for b in info.bases if b in self.classes)
            self._lineages[owner.name] = found
        return found

    def _lookup(self, owner: ClassInfo, attribute: str, frame: Frame | None) -> Value | None:
        """What ``owner``'s attribute holds: as set (in this run, in any method, in any
        construction seen), else an instance of the class it is annotated with."""
        if frame is not None and frame.owner is owner and attribute in frame.self_attributes:
            return frame.self_attributes[attribute]
        found = None
        annotation = None
        for info in self._lineage(owner):
            if found is None:
                found = info.attributes.get(attribute)
            if annotation is None:
                annotation = info.annotations.get(attribute)
        if annotation is not None and (found is None or found == NOTHING):
            found = self._instance_annotated(annotation) or found
        if self._collecting:
            self._reads.append((owner.name, attribute, found))
        return found

    def _instance_annotated(self, annotation: ast.expr | None) -> Value | None:
        """An instance of the class of the tree ``annotation`` names (``Buffers``,
        ``Optional[Buffers]``, ``"Buffers | None"``), if it names one."""
        if annotation is None:
            return None
        if annotation not in self._annotated:
            self._annotated[annotation] = self._annotated_class(annotation)
        name = self._annotated[annotation]
        return Value(instance=name) if name is not None else None

    def _annotated_class(self, annotation: ast.expr) -> str | None:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            # A forward reference: a dotted name, maybe Optional[...] or ``| None``.
            written = _FORWARD.fullmatch(annotation.value)
            if written is None:
                return None
            name: ast.expr = ast.Name(written["name"].split(".")[0])
            for attribute in written["name"].split(".")[1:]:
                name = ast.Attribute(name, attribute)
            return self._annotated_class(name)
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            sides = (annotation.left, annotation.right)
            named = [c for c in map(self._annotated_class, sides) if c is not None]
            return named[0] if len(named) == 1 else None
        if isinstance(annotation, ast.Subscript) and _last_name(annotation.value) == "Optional":
            return self._annotated_class(annotation.slice)
        if isinstance(annotation, ast.Name) and annotation.id in self.classes:
            return annotation.id
        qualified = self._qualify(annotation)
        if qualified is None:
            return None
        self.consulted.add(qualified)
        return qualified if isinstance(self.index.shapes.get(qualified), ClassShape) else None

    def _consult_member(self, key: str, frame: Frame) -> None:
        self.consulted_members.add(key)
        if self._definition is None:
            return
        # Once per statement: whether its value may leave rests on its function alone.
        statement = frame.statement
        leaves = self._leaves.get(statement) if statement is not None else None
        if leaves is None:
            leaves = self._may_leave(frame)
            if statement is not None:
                self._leaves[statement] = leaves
        if leaves:
            self.members_by_definition.setdefault(self._definition, set()).add(key)

    def _may_leave(self, frame: Frame) -> bool:
        """Whether what the statement running computes may leave its function: all but an
        expression statement calling what is no local name and no method of its first
        parameter (``logging.debug(...)``, ``copy(dst, src.data_ptr)``), and an assignment to
        local names the function does not return."""
        statement, function = frame.statement, frame.function
        if function is None or not isinstance(statement, ast.Expr | ast.Assign):
            return True
        if isinstance(statement, ast.Expr):
            if not isinstance(statement.value, ast.Call):
                return isinstance(statement.value, ast.Yield | ast.YieldFrom | ast.Await)
            root = _root(statement.value.func)
            return root == frame.self_name or root in frame.env
        targets = statement.targets
        if not all(isinstance(target, ast.Name) for target in targets):
            return True
        if function not in self._returned:
            self._returned[function] = _returned_names(function.body)
        returned = self._returned[function]
        return returned is None or any(
            isinstance(target, ast.Name) and target.id in returned for target in targets
        )

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
        fixed = fix if fix is not None else rules.fix_for(rule, dtype)
        self.sites.setdefault(key, Site(rule, node, frame.statement, message, fixed))

    def _store(
        self, node: ast.AST, storage: Value, value: Value, frame: Frame, where: ast.expr
    ) -> None:
        """``value`` written into ``storage`` (typed), which the code names ``where``."""
        dtype = storage.dtype
        holds = carried(value)
        if holds not in (Holds.ADDRESS, Holds.BITS):
            self._unknown_into(dtype, value)
            return
        if dtype is None:
            self.unknown_storage = True
            return
        if not dtype.unsafe:
            return
        keeps_bits = value.dtype is not None and not value.scalar
        if dtype.width is Width.SIGNED64 and (holds is Holds.BITS or keeps_bits):
            return
        rule = rules.WIDTH_RULES[dtype.width][0]
        message = rules.stored(value, self._text(where), dtype, storage.made)
        itself = _storage_expression(where)
        # A name holding a NumPy view of a tensor: the tensor is what to make unsigned.
        remake = None if storage.viewed and itself is where else self._text(itself)
        library = storage.viewed or dtype.library
        or_bits = rule == "signed-storage" and value.dtype is None
        fix = rules.remade(remake, library, storage.made, or_bits=or_bits)
        self._report(rule, node, frame, message, fix=fix)

    def _unknown_into(self, dtype: Dtype | None, value: Value) -> None:
        if dtype is not None and dtype.unsafe and value.dtype is None and carried(value) is None:
            self.unknown_stored = True

    # Statements.

    def _block(self, statements: Sequence[ast.stmt], frame: Frame) -> None:
        for statement in statements:
            self._statement(statement, frame)

    def _statement(self, statement: ast.stmt, frame: Frame) -> None:
        outer = frame.statement
        frame.statement = statement
        try:
            execute = _EXECUTORS.get(type(statement))
            if execute is not None:
                execute(self, statement, frame)
        except RecursionError:
            # An expression nested hundreds deep (a generated sum of terms): this statement is
            # not followed, the rest of the module is.
            if statement not in self.passed_over:
                self.passed_over.append(statement)
        finally:
            frame.statement = outer

    def _assign(self, statement: ast.Assign, frame: Frame) -> None:
        value = self._value(statement.value, frame)
        for target in statement.targets:
            self._bind(target, value, frame, statement)

    def _annotated_assign(self, statement: ast.AnnAssign, frame: Frame) -> None:
        if statement.value is not None:
            value = self._value(statement.value, frame)
            if value == NOTHING:
                value = self._instance_annotated(statement.annotation) or NOTHING
            self._bind(statement.target, value, frame, statement)

    def _augmented_assign(self, statement: ast.AugAssign, frame: Frame) -> None:
        combined = ast.BinOp(left=statement.target, op=statement.op, right=statement.value)
        ast.copy_location(combined, statement)
        self._bind(statement.target, self._value(combined, frame), frame, statement)

    def _expression_statement(self, statement: ast.Expr, frame: Frame) -> None:
        self._value(statement.value, frame)

    def _return(self, statement: ast.Return, frame: Frame) -> None:
        if statement.value is not None:
            frame.returns.append(self._value(statement.value, frame))

    def _if(self, statement: ast.If, frame: Frame) -> None:
        self._condition(statement.test, frame)
        self._branches([statement.body, statement.orelse], frame)

    def _for(self, statement: ast.For | ast.AsyncFor, frame: Frame) -> None:
        element = element_of(self._value(statement.iter, frame))
        for _ in range(2):
            self._bind(statement.target, element, frame, statement)
            self._block(statement.body, frame)
        self._block(statement.orelse, frame)

    def _while(self, statement: ast.While, frame: Frame) -> None:
        for _ in range(2):
            self._condition(statement.test, frame)
            self._block(statement.body, frame)
        self._block(statement.orelse, frame)

    def _with(self, statement: ast.With | ast.AsyncWith, frame: Frame) -> None:
        for item in statement.items:
            self._value(item.context_expr, frame)
            if item.optional_vars is not None:
                self._bind(item.optional_vars, NOTHING, frame, statement)
        self._block(statement.body, frame)

    def _try(self, statement: ast.Try | ast.TryStar, frame: Frame) -> None:
        self._block(statement.body, frame)
        for handler in statement.handlers:
            self._block(handler.body, frame)
        self._block(statement.orelse, frame)
        self._block(statement.finalbody, frame)

    def _assert(self, statement: ast.Assert, frame: Frame) -> None:
        self._condition(statement.test, frame)

    def _match(self, statement: ast.Match, frame: Frame) -> None:
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
        frame.env = join_names([names for names, _ in ends])
        frame.self_attributes = join_names([attributes for _, attributes in ends])

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
        if frame.owner is not None and self._collecting and frame.generic:
            self._contribute(frame.owner, name, value)

    @staticmethod
    def _contribute(owner: ClassInfo, name: str, value: Value) -> None:
        """What ``owner``'s attribute is known to hold, once ``value`` is set on it somewhere."""
        old = owner.attributes.get(name)
        joined = join(old, value)
        if old is not None and old.dtype == value.dtype and None in (old.holds, value.holds):
            # Storage holds addresses once they are written into it anywhere, even where it is
            # made again.
            known = value if value.holds is not None else old
            joined = replace(joined, holds=known.holds, origin=known.origin)
        owner.attributes[name] = joined

    # Expressions.

    def _value(self, node: ast.expr, frame: Frame) -> Value:
        evaluate = _EVALUATORS.get(type(node))
        return evaluate(self, node, frame) if evaluate is not None else NOTHING

    def _item(self, node: ast.expr, frame: Frame) -> Value:
        if isinstance(node, ast.Starred):
            return element_of(self._value(node.value, frame))
        return self._value(node, frame)

    def _name(self, node: ast.Name, frame: Frame) -> Value:
        found = frame.env.get(node.id)
        if found is None:
            found = self.module_env.get(node.id)
        if found is None:
            if node.id in self.classes:
                return Value(denotes_class=node.id)
            dtype = self._dtype(node)
            if dtype is not None:
                return Value(denotes=dtype)
            qualified = self.imports.get(node.id)
            if qualified is not None:
                self.consulted.add(qualified)
                if isinstance(self.index.shapes.get(qualified), ClassShape):
                    return Value(denotes_class=qualified)
            return NOTHING
        return found

    def _tuple(self, node: ast.Tuple, frame: Frame) -> Value:
        return Value(items=tuple(self._item(e, frame) for e in node.elts))

    def _list(self, node: ast.List | ast.Set, frame: Frame) -> Value:
        return list_of(join_all(self._item(item, frame) for item in node.elts))

    def _dict(self, node: ast.Dict, frame: Frame) -> Value:
        keys = []
        for key, item in zip(node.keys, node.values, strict=True):
            value = self._value(item, frame)
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append((key.value, value))
        return Value(keys=tuple(keys)) if keys else NOTHING

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, frame: Frame
    ) -> Value:
        inner = replace(frame, env=dict(frame.env), returns=[])
        for generator in node.generators:
            element = element_of(self._value(generator.iter, inner))
            self._bind(generator.target, element, inner, frame.statement or ast.Pass())
            for condition in generator.ifs:
                self._condition(condition, inner)
        if isinstance(node, ast.DictComp):
            self._value(node.key, inner)
            self._value(node.value, inner)
            return NOTHING
        element = self._value(node.elt, inner)
        return list_of(element)

    def _named(self, node: ast.NamedExpr, frame: Frame) -> Value:
        value = self._value(node.value, frame)
        frame.env[node.target.id] = value
        return value

    def _inner(self, node: ast.Starred | ast.Await, frame: Frame) -> Value:
        return self._value(node.value, frame)

    def _joined_string(self, node: ast.JoinedStr, frame: Frame) -> Value:
        for part in node.values:
            self._value(part, frame)
        return NOTHING

    def _formatted(self, node: ast.FormattedValue, frame: Frame) -> Value:
        self._value(node.value, frame)
        return NOTHING

    def _attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        if node.attr in dtypes.NAMES:
            dtype = self._library_dtype(node)
            if dtype is not None:
                return Value(denotes=dtype)
        if node.attr in ARRAY_INTERFACES:
            self._value(node.value, frame)
            address = Value(holds=Holds.ADDRESS, origin=self._source(node))
            return Value(keys=(("data", Value(items=(address, NOTHING))),))
        if (
            node.attr == "data"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "ctypes"
        ):
            # A NumPy array's ``arr.ctypes.data``: the address of its data.
            self._value(node.value, frame)
            return Value(holds=Holds.ADDRESS, origin=self._source(node))
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == frame.self_name
            and frame.owner is not None
        ):
            return self._lookup(frame.owner, node.attr, frame) or NOTHING
        base = self._value(node.value, frame)
        own = dict(base.keys or ()) if base.instance is not None else {}
        if node.attr in own:
            return own[node.attr]
        owner = base.instance or base.denotes_class
        if owner in self.classes:
            return self._lookup(self.classes[owner], node.attr, None) or NOTHING
        if owner is not None or base == NOTHING:
            self.foreign_reads.add(node.attr)
        if owner == SYMMETRIC_MEMORY and node.attr in SYMMETRIC_MEMORY_ADDRESSES:
            address = Value(holds=Holds.ADDRESS, origin=self._source(node))
            return list_of(address) if SYMMETRIC_MEMORY_ADDRESSES[node.attr] else address
        shape = self.index.shapes.get(owner or "")
        if isinstance(shape, ClassShape):
            return shape.attributes.get(node.attr, NOTHING)
        if base.dtype is not None:
            if base.dtype.library == "ctypes" and node.attr == "value":
                return Value(holds=base.holds, origin=base.origin)
            if node.attr in VIEW_ATTRIBUTES:
                return base
        if base == NOTHING:
            # Of what is not followed: what the tree's properties of that name all give.
            key = PROPERTY + node.attr
            self._consult_member(key, frame)
            return self.index.members.get(key, NOTHING)
        return NOTHING

    def _subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        base = self._value(node.value, frame)
        index = node.slice
        self._value(index, frame)
        if base.keys is not None and isinstance(index, ast.Constant):
            return dict(base.keys).get(str(index.value), NOTHING)
        if base.keys is not None and base.instance is None:
            # A dict written out, looked up by a key the code computes: any of its values.
            return join_all(value for _, value in base.keys)
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
            self._condition(node.test, frame)
            return join(self._value(node.body, frame), self._value(node.orelse, frame))
        assert isinstance(node, ast.BoolOp)
        return join_all(self._value(item, frame) for item in node.values)

    def _condition(self, node: ast.expr, frame: Frame) -> None:
        """A test (of ``if``, ``while``, ``assert``, a conditional expression, ``bool()``). A
        bit of an address read there (``p & (1 << 63)``, ``p >> 63``, either compared with a
        constant) is no reinterpretation of it; what the bit is read from is still followed."""
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                self._condition(value, frame)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self._condition(node.operand, frame)
            return
        sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else [node]
        if not any(isinstance(side, ast.BinOp) for side in sides):
            self._value(node, frame)
            return
        read = [self._bits_read(side) for side in sides]
        if any(read) and all(
            bits is not None or self._constant(side) is not None
            for bits, side in zip(read, sides, strict=True)
        ):
            for bits in read:
                if bits is not None:
                    self._value(bits, frame)
        else:
            self._value(node, frame)

    def _bits_read(self, node: ast.expr) -> ast.expr | None:
        """What ``x & MASK`` or ``x >> N`` (``MASK``, ``N`` constant) reads bits of: ``x``."""
        if not isinstance(node, ast.BinOp):
            return None
        if isinstance(node.op, ast.BitAnd):
            if self._constant(node.right) is not None:
                return node.left
            if self._constant(node.left) is not None:
                return node.right
        elif isinstance(node.op, ast.RShift) and self._constant(node.right) is not None:
            return node.left
        return None

    def _constant(self, node: ast.expr) -> int | None:
        return reinterpret.evaluate_constant(node, self.constants)

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
        leaves = list(reinterpret.operands(node, self.constants))
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
        text = self._text(node, 60)
        message = rules.reinterpreted(text, operand_value, verdict, signed_input=signed_input)
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
            text = self._text(node, 60)
            message = rules.mixed_sign(address, address.dtype, signed.dtype, text)
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
            given = left if left.holds is holds else right
            if holds is Holds.ADDRESS and given.dtype is None and dtype.width is Width.SIGNED64:
                # A Python int address meeting int64 values is converted to int64 here: what
                # the result is stored into is where the address must fit.
                return Value(holds=holds, origin=origin)
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

    def _compare(self, node: ast.Compare, frame: Frame) -> Value:
        """A comparison, which is no address: a ``signed-compare`` finding where values read
        back from int64 storage meet unsigned addresses."""
        values = [self._value(node.left, frame)]
        values.extend(self._value(item, frame) for item in node.comparators)
        for (a, b), op in zip(itertools.pairwise(values), node.ops, strict=True):
            if isinstance(op, ast.Is | ast.IsNot):
                continue
            for signed, unsigned in ((a, b), (b, a)):
                if self._signed_side(signed) and self._unsigned_side(unsigned):
                    self._report("signed-compare", node, frame, rules.compared(signed, unsigned))
                    return NOTHING
        return NOTHING

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
        """A call: by name (:meth:`_call_of_name`), a launch, or ``x.f(...)``: ``.data_ptr()``,
        a library function, ``int.from_bytes``, a method of a class of the module, or a method
        of what ``x`` is. ``x`` is evaluated in this method itself, so that a chain of calls
        costs two frames a call: Python's recursion limit bounds how long a chain is followed."""
        func = node.func
        if isinstance(func, ast.Name):
            return self._call_of_name(func, node, frame)
        if isinstance(func, ast.Subscript):
            return self._launch(func, node, frame)
        if not isinstance(func, ast.Attribute):
            return self._unknown_call(node, frame)
        if func.attr == "data_ptr":
            self._value(func.value, frame)
            return Value(holds=Holds.ADDRESS, origin=self._source(node))
        name = self._qualify(func)
        if opens_ipc_memory(func.attr):
            self._value(func.value, frame)
            return self._ipc_open(name, node, frame)
        if name is not None:
            found = self._library_call(name, node, frame)
            if found is not None:
                return found
        base = func.value
        if isinstance(base, ast.Name) and base.id == "int" and func.attr == "from_bytes":
            return self._from_bytes(node, frame)
        receiver = self._value(base, frame)
        owner = receiver.instance or receiver.denotes_class or ""
        if owner in self.classes:
            return self._class_method_call(self.classes[owner], receiver, func, node, frame)
        if owner or receiver == NOTHING:
            self.foreign_reads.add(func.attr)
        shape = self.index.shapes.get(owner)
        if isinstance(shape, ClassShape):
            return self._tree_method_call(shape, func, node, frame)
        return self._method_call(func, node, frame, receiver)

    def _call_of_name(self, func: ast.Name, node: ast.Call, frame: Frame) -> Value:
        """``f(...)``: a library function imported by name, a class or function of the module,
        or a builtin (none of them where ``f`` is a variable)."""
        name = func.id
        variable = frame.env.get(name, self.module_env.get(name))
        if variable is not None:
            # A variable that shadows the import, the builtin or the definition of that name:
            # a class (``cls(...)``) or what is not followed (a factory passed in).
            if variable.denotes_class is None:
                return self._unknown_call(node, frame)
            return self._class_call(variable.denotes_class, node, frame)
        if opens_ipc_memory(name):
            return self._ipc_open(self.imports.get(name), node, frame)
        qualified = self.imports.get(name)
        if qualified is not None:
            found = self._library_call(qualified, node, frame)
            if found is not None:
                return found
        if name in self.classes:
            return self._class_call(name, node, frame)
        shape = None
        if qualified is not None:
            self.consulted.add(qualified)
            shape = self.index.shapes.get(qualified)
            if isinstance(shape, ClassShape):
                return self._class_call(qualified, node, frame)
        if name == "bool" and qualified is None and name not in self.functions:
            for argument in node.args:
                self._condition(argument, frame)
            return NOTHING
        arguments, keywords = self._arguments(node, frame)
        if name in self.functions:
            return self._run(self.functions[name], None, arguments, keywords, None, frame.depth)[0]
        if isinstance(shape, FunctionShape):
            return shape.returns if shape.returns != NOTHING else self._made_with_dtype(node, frame)
        builtin = _BUILTIN_CALLS.get(name)
        if builtin is not None and qualified is None:
            return builtin(self, node, frame, arguments)
        return self._made_with_dtype(node, frame)

    def _class_call(self, name: str, node: ast.Call, frame: Frame) -> Value:
        """``Cls(...)``, ``cls(...)``: an instance of a class of the module or of the tree."""
        arguments, keywords = self._arguments(node, frame)
        if name in self.classes:
            return self._instance(self.classes[name], node, arguments, keywords, frame)
        shape = self.index.shapes.get(name)
        if not isinstance(shape, ClassShape):
            return self._made_with_dtype(node, frame)
        if shape.fields is None:
            # Its __init__ is not run here: given ``dtype=``, it is taken to make storage.
            made = self._made_with_dtype(node, frame)
            return made if made != NOTHING else Value(instance=shape.name)
        keys = _bound_fields(shape.fields, node, arguments, keywords)
        return Value(instance=shape.name, keys=keys or None)

    def _tree_method_call(
        self, shape: ClassShape, func: ast.Attribute, node: ast.Call, frame: Frame
    ) -> Value:
        """A method of a class of another module of the tree: what it returns run for its
        class (its factories' instances); given ``dtype=``, storage made where not known."""
        self._arguments(node, frame)
        returned = shape.returns.get(func.attr, NOTHING)
        return returned if returned != NOTHING else self._made_with_dtype(node, frame)

    def _class_method_call(
        self, owner: ClassInfo, receiver: Value, func: ast.Attribute, node: ast.Call, frame: Frame
    ) -> Value:
        """A method of a class of the module, run with these arguments (or, where the class has
        no such method, what its attribute of that name is called as)."""
        found = self._method(owner, func.attr)
        if found is not None:
            info, method = found
            arguments, keywords = self._arguments(node, frame)
            bound = self._bound(owner, method, receiver)
            return self._run(method, info, arguments, keywords, bound, frame.depth)[0]
        if self._lookup(owner, func.attr, frame) is None:
            return self._unknown_call(node, frame)
        return self._method_call(func, node, frame, receiver)

    def _instance(
        self,
        info: ClassInfo,
        node: ast.Call,
        arguments: list[Value],
        keywords: dict[str, Value],
        frame: Frame,
    ) -> Value:
        """``Cls(...)``: an instance, with what its ``__init__`` sets on ``self`` given these
        arguments."""
        instance = Value(instance=info.name)
        if not any(v != NOTHING for v in (*arguments, *keywords.values())):
            return instance
        if info.fields is not None:
            attributes = _bound_fields(info.fields, node, arguments, keywords)
        else:
            found = self._method(info, "__init__")
            if found is None:
                return instance
            _, attributes = self._run(
                found[1], found[0], arguments, keywords, instance, frame.depth
            )
        if self._collecting:
            # What this construction sets is what the class holds (where all agree).
            for name, value in attributes:
                self._contribute(info, name, value)
        return Value(instance=info.name, keys=attributes) if attributes else instance

    def _arguments(self, node: ast.Call, frame: Frame) -> Arguments:
        arguments = [self._item(arg, frame) for arg in node.args]
        keywords = {kw.arg: self._value(kw.value, frame) for kw in node.keywords if kw.arg}
        for kw in node.keywords:
            if kw.arg is None:
                self._value(kw.value, frame)
        return Arguments(arguments, keywords)

    def _dtype_argument(self, node: ast.Call, frame: Frame, position: int | None) -> Dtype | None:
        for keyword in node.keywords:
            if keyword.arg == "dtype":
                return self._dtype(keyword.value, frame)
        for keyword in node.keywords:
            # ``**options``, where ``options = dict(dtype=torch.int64, device=device)``.
            if keyword.arg is None and isinstance(keyword.value, ast.Name):
                given = dict(self._value(keyword.value, frame).keys or ())
                if "dtype" in given:
                    return given["dtype"].denotes
        if position is not None and len(node.args) > position:
            return self._dtype(node.args[position], frame)
        return None

    def _has_dtype(self, node: ast.Call, position: int | None) -> bool:
        return any(kw.arg == "dtype" for kw in node.keywords) or (
            position is not None and len(node.args) > position
        )

    def _unknown_call(self, node: ast.Call, frame: Frame) -> Value:
        """A call not followed: its arguments are, and it may make storage."""
        self._arguments(node, frame)
        return self._made_with_dtype(node, frame)

    def _made_with_dtype(self, node: ast.Call, frame: Frame) -> Value:
        """Given ``dtype=``, a call not followed is taken to make storage of that dtype
        (``make_buffer(n, dtype=torch.int64)``)."""
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
        self._unknown_into(dtype, data)
        if dtype is None:
            if library == "torch" and holds is Holds.ADDRESS and not typed:
                self._report("inferred-int64", node, frame, rules.inferred(data, call))
                return Value(dtype=dtypes.library_dtype("torch", "int64"), made=made)
            if typed:
                assert data.dtype is not None
                return replace(
                    data, dtype=dtypes.in_library(data.dtype, library), scalar=False, made=made
                )
            return Value(
                holds=holds if holds is Holds.ADDRESS else None, dtype=UNKNOWN[library], made=made
            )
        if holds in (Holds.ADDRESS, Holds.BITS):
            # A typed source is cast with its bits kept; Python ints must fit as they are.
            kept = bits_kept(dtype)
            if kept is not None and (typed or kept is holds):
                return Value(holds=kept, dtype=dtype, origin=origin_of(data), made=made)
            if dtype.unsafe:
                rule = rules.WIDTH_RULES[dtype.width][0]
                self._report(rule, node, frame, rules.put_in(data, call, dtype), dtype=dtype)
        return Value(dtype=dtype, made=made)

    # Calls of libraries, by the name they are imported as, and of builtins. Each method is
    # given the call's arguments, evaluated before it runs.

    def _library_call(self, name: str, node: ast.Call, frame: Frame) -> Value | None:
        """A call of torch, numpy, Triton, ctypes, ``array`` or ``struct``; ``None`` for a call
        of any other module."""
        follow = _LIBRARY_CALLS.get(name)
        module, _, attribute = name.rpartition(".")
        if (
            follow is None
            and module in _DTYPE_CALLS
            and dtypes.library_dtype(module, attribute) is not None
        ):
            follow = _DTYPE_CALLS[module]
        if follow is None and module not in STORAGE_MODULES:
            return None
        arguments = self._arguments(node, frame)
        if follow is None:
            return self._made_with_dtype(node, frame)
        return follow(self, name, node, frame, arguments)

    def _address_source(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        return Value(holds=Holds.ADDRESS, origin=self._source(node))

    def _symmetric_memory(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``symm_mem.rendezvous(t, group)``: a handle, whose ``buffer_ptrs``,
        ``signal_pad_ptrs``, ``multicast_ptr`` (and their ``_dev`` forms) are addresses."""
        return Value(instance=SYMMETRIC_MEMORY)

    def _ctypes_cast(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``ctypes.cast(x, ctypes.c_void_p)``: a pointer whose ``.value`` is an address."""
        target = self._dtype(node.args[1]) if len(node.args) == 2 else None
        if target is None or target.name != "ctypes.c_void_p":
            return NOTHING
        return Value(holds=Holds.ADDRESS, dtype=target, scalar=True, origin=self._source(node))

    def _ipc_open(self, name: str | None, node: ast.Call, frame: Frame) -> Value:
        """A call opening another process's memory (``lib.cudaIpcOpenMemHandle(h)``): the
        address it is mapped at, as a ``c_void_p`` (cuda-python: ``(err, address)``). The C
        function itself, given where to write the address (``byref(ptr)``), gives an error
        code."""
        self._arguments(node, frame)
        calls = (arg.func for arg in node.args if isinstance(arg, ast.Call))
        if any(_last_name(call) in OUT_POINTERS for call in calls):
            return NOTHING
        pointer = dtypes.library_dtype("ctypes", "c_void_p")
        address = Value(holds=Holds.ADDRESS, origin=self._source(node))
        if name is not None and name.startswith("cuda."):
            return Value(items=(NOTHING, address))
        return replace(address, dtype=pointer, scalar=True)

    def _constructor(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``torch.tensor(data, dtype=...)``, ``np.array(data, dtype)``."""
        library = CONSTRUCTORS[name]
        position = 1 if library == "numpy" else None
        dtype = self._dtype_argument(node, frame, position)
        if self._has_dtype(node, position) and dtype is None:
            return NOTHING
        return self._construct(node, nth(given.positional, 0), dtype, library, frame, _short(name))

    def _typed_tensor(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``torch.LongTensor(data)``: made from its one argument (a size where there are
        more)."""
        data = given.positional[0] if len(given.positional) == 1 else NOTHING
        dtype = dtypes.library_dtype("torch", TYPED_TENSORS[name.rpartition(".")[2]])
        return self._construct(node, data, dtype, "torch", frame, _short(name))

    def _full(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``torch.full(size, fill, dtype=...)``, ``np.full(shape, fill, dtype)``."""
        library = FILLED[name]
        positional, keywords = given
        fill = positional[1] if len(positional) > 1 else keywords.get("fill_value", NOTHING)
        dtype = self._dtype_argument(node, frame, 2 if library == "numpy" else None)
        if dtype is None and (library == "numpy" or self._has_dtype(node, None)):
            return NOTHING
        return self._construct(node, fill, dtype, library, frame, _short(name))

    def _factory(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``torch.zeros(n, dtype=...)``: empty storage, of its default dtype where none is
        given."""
        if self._has_dtype(node, None):
            dtype = self._dtype_argument(node, frame, None)
        else:
            dtype = FACTORIES[name]
        return Value(dtype=dtype, made=f"line {node.lineno}") if dtype else NOTHING

    def _numpy_scalar(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``np.uint64(p)``: a scalar (or, of a list, an array) of that dtype."""
        dtype = dtypes.library_dtype("numpy", name.rpartition(".")[2])
        data = nth(given.positional, 0)
        made = self._construct(node, data, dtype, "numpy", frame, _short(name))
        return replace(made, scalar=data.element is None and data.items is None)

    def _ctypes_object(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        dtype = dtypes.library_dtype("ctypes", name.rpartition(".")[2])
        assert dtype is not None
        data = nth(given.positional, 0)
        kept = bits_kept(dtype)
        if carried(data) in (Holds.ADDRESS, Holds.BITS) and kept is not None:
            # ctypes wraps a Python int into its 64 bits: c_int64(p).value is a bitcast.
            return Value(holds=kept, dtype=dtype, origin=origin_of(data))
        return self._construct(node, data, dtype, "ctypes", frame, _short(name))

    def _from_numpy(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        data = nth(given.positional, 0)
        if not data.dtype:
            return NOTHING
        return replace(data, dtype=dtypes.in_library(data.dtype, "torch"))

    def _copyto(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        if len(given.positional) >= 2:
            storage, stored = given.positional[:2]
            self._store(node, storage, stored, frame, node.args[0])
        return NOTHING

    def _array(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``array.array(typecode, data)``."""
        code = node.args[0] if node.args else None
        if isinstance(code, ast.Constant) and isinstance(code.value, str):
            dtype = dtypes.array_typecode(code.value)
            data = nth(given.positional, 1)
            return self._construct(node, data, dtype, "array", frame, "array.array")
        return NOTHING

    def _pack(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        """``struct.pack(fmt, ...)``: each value checked against its field; one address packed
        alone gives bytes holding it."""
        fmt = node.args[0] if node.args else None
        if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
            return NOTHING
        fields = dtypes.struct_fields(fmt.value)
        values = given.positional[PACKING[name] :]
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
            if bits_kept(dtype) is holds:
                packed = holds
                continue
            if holds is Holds.BITS and dtype.width is Width.UNSIGNED64:
                continue
            if dtype.width in rules.WIDTH_RULES:
                rule = rules.WIDTH_RULES[dtype.width][0]
                self._report(rule, node, frame, rules.packed(value, dtype), dtype=dtype)
        if len(values) == 1 and packed is not None:
            return Value(holds=packed, dtype=BYTES, origin=origin_of(values[0]))
        return NOTHING

    def _unpack(self, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
        fmt = node.args[0] if node.args else None
        data = nth(given.positional, 1)
        if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
            return NOTHING
        fields = dtypes.struct_fields(fmt.value)
        if data.dtype != BYTES or fields is None or len(fields) != 1 or fields[0] is None:
            return NOTHING
        kept = bits_kept(fields[0])
        return Value(items=(Value(holds=kept, origin=data.origin),)) if kept else NOTHING

    def _from_bytes(self, node: ast.Call, frame: Frame) -> Value:
        arguments, _ = self._arguments(node, frame)
        data = nth(arguments, 0)
        if data.dtype != BYTES:
            return NOTHING
        signed = _signed_keyword(node)
        return Value(holds=Holds.BITS if signed else Holds.ADDRESS, origin=data.origin)

    def _int(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        if len(arguments) != 1:
            return NOTHING
        value = arguments[0]
        return read_back(value) if value.dtype is not None else value

    def _float(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        if arguments and carried(arguments[0]) in (Holds.ADDRESS, Holds.BITS):
            message = rules.converted(arguments[0], "float()", Width.FLOAT)
            self._report("float-storage", node, frame, message)
        return NOTHING

    def _container(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        """``list(x)``, ``sorted(x)``: the elements of ``x`` (of typed storage, as ints)."""
        if len(arguments) != 1:
            return NOTHING
        value = arguments[0]
        element = element_of(value)
        if value.dtype is not None:
            element = read_back(element)
        return list_of(element)

    def _dict_call(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        """``dict(dtype=torch.int64, device=d)``: its keys, as a dict written out has them."""
        if arguments:
            return NOTHING
        keys = tuple((kw.arg, self._value(kw.value, frame)) for kw in node.keywords if kw.arg)
        return Value(keys=keys) if keys else NOTHING

    def _zip(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        parts = tuple(element_of(a) for a in arguments)
        return Value(element=Value(items=parts)) if any(p != NOTHING for p in parts) else NOTHING

    def _enumerate(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        element = element_of(nth(arguments, 0))
        return Value(element=Value(items=(NOTHING, element))) if element != NOTHING else NOTHING

    def _extreme(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        """``min``, ``max``: one of the arguments, or one element of the only one."""
        if len(arguments) == 1:
            return element_of(arguments[0])
        return join_all(arguments)

    def _next(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        return element_of(nth(arguments, 0))

    def _opaque(self, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
        return NOTHING

    # Calls of methods, by the method's name.

    def _method_call(
        self, func: ast.Attribute, node: ast.Call, frame: Frame, receiver: Value
    ) -> Value:
        """``x.method(...)`` where ``x`` is no instance of a class of the module."""
        method = func.attr
        dtype = receiver.dtype
        if dtype is None and method in _PLAIN_METHODS:
            return _PLAIN_METHODS[method](self, func, node, frame, receiver)
        if receiver.element is not None or receiver.items is not None:
            return self._container_method(func, node, frame, receiver)
        if dtype is None and method in CONVERTING:
            # Of a tensor or an array not followed here (a parameter): the dtype it is given.
            return self._conversion(func, node, frame, receiver)
        follow = _STORAGE_METHODS.get(method)
        if dtype is None and method in STORING:
            arguments, _ = self._arguments(node, frame)
            if arguments:
                self._store(node, receiver, arguments[-1], frame, func.value)
            return NOTHING
        if receiver == NOTHING:
            # Of what is not followed: what the tree's methods of that name all give, else
            # (a factory passed in) storage where given ``dtype=``.
            self._consult_member(method, frame)
            member = self.index.members.get(method)
            if member is not None:
                self._arguments(node, frame)
                return member
            return self._unknown_call(node, frame)
        if follow is None or dtype is None or dtype.library not in ("torch", "numpy"):
            self._arguments(node, frame)
            return NOTHING
        return follow(self, func, node, frame, receiver)

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

    def _to_bytes(self, func: ast.Attribute, node: ast.Call, frame: Frame, number: Value) -> Value:
        """``p.to_bytes(8, ...)``: bytes holding the address, unless they are signed."""
        self._arguments(node, frame)
        if number.holds not in (Holds.ADDRESS, Holds.BITS):
            return NOTHING
        if number.holds is Holds.ADDRESS and _signed_keyword(node):
            message = rules.converted(number, "to_bytes(..., signed=True)", Width.SIGNED64)
            self._report("signed-storage", node, frame, message)
            return NOTHING
        return Value(holds=number.holds, dtype=BYTES, origin=number.origin)

    def _container_method(
        self, func: ast.Attribute, node: ast.Call, frame: Frame, container: Value
    ) -> Value:
        self._arguments(node, frame)
        if func.attr == "copy":
            return container
        if func.attr == "pop":
            return element_of(container)
        return NOTHING

    def _storing(self, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value) -> Value:
        """``t.fill_(p)``, ``t.copy_(src)``: the last argument written into the storage."""
        arguments, _ = self._arguments(node, frame)
        if arguments:
            self._store(node, storage, arguments[-1], frame, func.value)
        return storage

    def _conversion(
        self, func: ast.Attribute, node: ast.Call, frame: Frame, source: Value
    ) -> Value:
        """``.view(dtype)``, ``.to(dtype)``, ``.astype(dtype)``, ``.type(dtype)``."""
        target = self._dtype_argument(node, frame, 0)
        self._arguments(node, frame)
        if source.dtype is None:
            if target is None or target.library not in ("torch", "numpy"):
                return NOTHING
            return Value(dtype=target, made=f"line {node.lineno}")
        if target is None:
            return NOTHING if self._has_dtype(node, None) else source
        return self._convert(node, source, target, frame, func.attr)

    def _numpy_view(
        self, func: ast.Attribute, node: ast.Call, frame: Frame, tensor: Value
    ) -> Value:
        """``t.numpy()``: the same storage, as an array (which remembers that it views a
        tensor)."""
        self._arguments(node, frame)
        assert tensor.dtype is not None
        viewed = tensor.viewed or ("torch" if tensor.dtype.library == "torch" else "")
        return replace(tensor, dtype=dtypes.in_library(tensor.dtype, "numpy"), viewed=viewed)

    def _tolist(self, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value) -> Value:
        self._arguments(node, frame)
        return list_of(read_back(replace(storage, scalar=True)))

    def _item_of(self, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value) -> Value:
        self._arguments(node, frame)
        return read_back(storage)

    def _same_storage(
        self, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value
    ) -> Value:
        self._arguments(node, frame)
        return storage

    def _convert(
        self, node: ast.Call, source: Value, target: Dtype, frame: Frame, how: str
    ) -> Value:
        """``.view(dtype)`` / ``.to(dtype)`` / ``.astype(dtype)`` of typed storage."""
        library = source.dtype.library if source.dtype else target.library
        target = dtypes.in_library(target, library) or target
        made = f"line {node.lineno}"
        holds = source.holds
        if holds in (Holds.ADDRESS, Holds.BITS):
            kept = bits_kept(target)
            if kept is not None:
                return Value(
                    holds=kept, dtype=target, scalar=source.scalar, origin=source.origin, made=made
                )
            if target.unsafe and how != "view":
                rule = rules.WIDTH_RULES[target.width][0]
                message = rules.converted(source, f".{how}({target.name})", target.width)
                self._report(rule, node, frame, message, dtype=target)
        return Value(dtype=target, scalar=source.scalar, made=made)

    def _launch(self, func: ast.Subscript, node: ast.Call, frame: Frame) -> Value:
        """``kernel[grid](...)``: plain int addresses passed, for the kernel to be looked up
        once every file's kernels are known."""
        kernel = func.value
        self._value(func.slice, frame)
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
        known = self._memo.get(key)
        if known is not None:
            if self._collecting and known.trace is not None:
                self._replay(known.trace)
            return known.result, known.attributes
        if key in self._running or depth > self._depth:
            return NOTHING, ()
        self._running.add(key)
        reads, sites, launches = len(self._reads), len(self.sites), len(self.launches)
        try:
            frame = Frame({}, owner, depth=depth + 1, function=function)
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
            for parameter in (*parameters, *function.args.kwonlyargs):
                if frame.env[parameter.arg] == NOTHING:
                    annotated = self._instance_annotated(parameter.annotation)
                    frame.env[parameter.arg] = annotated or NOTHING
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
        trace = None
        if self._collecting:
            trace = _Trace(
                self._reads,
                reads,
                len(self._reads),
                _added(self.sites, sites),
                _added(self.launches, launches),
            )
        self._memo[key] = _Run(result, attributes, trace)
        return result, attributes

    def _replay(self, trace: _Trace) -> None:
        """What a run remembered read and found, as if it ran again (in a class's part that
        did not run it: what that part finds rests on it)."""
        self._reads.extend(trace.reads[trace.first : trace.last])
        self._keep(trace.sites, trace.launches)

    def _keep(
        self,
        sites: Iterable[tuple[tuple[int, int, str], Site]],
        launches: Iterable[tuple[tuple[int, int, str], LaunchSite]],
    ) -> None:
        """Sites and launches found elsewhere, where none was found at the same place."""
        for key, site in sites:
            self.sites.setdefault(key, site)
        for key, located in launches:
            self.launches.setdefault(key, located)

    def _body(self, function: Function) -> list[ast.stmt]:
        """The function's statements; a helper written as ``if x >= 2**63: x -= 2**64`` then
        ``return x`` (or with two returns) is read as the one conditional expression it is."""
        if function not in self._helpers:
            self._helpers[function] = reinterpret.as_expression(function) or function.body
        return self._helpers[function]


# What ModuleFlow dispatches by: the method for each kind of node, for each call of a library or
# a builtin by its name, for each method by its name. The tables hold the functions, not methods
# bound to one ModuleFlow: those would tie each analysis into a reference cycle, its tree kept
# alive until the cyclic collector runs.

LibraryCall = Callable[[ModuleFlow, str, ast.Call, Frame, Arguments], Value]
"""A method following a call of a library: its qualified name, the call, its arguments."""
MethodCall = Callable[[ModuleFlow, ast.Attribute, ast.Call, Frame, Value], Value]
"""A method following a call of a method: ``x.method``, the call, what ``x`` is."""

_EXECUTORS: dict[type[ast.stmt], Callable[[ModuleFlow, Any, Frame], None]] = {
    ast.Assign: ModuleFlow._assign,
    ast.AnnAssign: ModuleFlow._annotated_assign,
    ast.AugAssign: ModuleFlow._augmented_assign,
    ast.Expr: ModuleFlow._expression_statement,
    ast.Return: ModuleFlow._return,
    ast.If: ModuleFlow._if,
    ast.For: ModuleFlow._for,
    ast.AsyncFor: ModuleFlow._for,
    ast.While: ModuleFlow._while,
    ast.With: ModuleFlow._with,
    ast.AsyncWith: ModuleFlow._with,
    ast.Try: ModuleFlow._try,
    ast.TryStar: ModuleFlow._try,
    ast.Assert: ModuleFlow._assert,
    ast.Match: ModuleFlow._match,
}
"""The method that runs each kind of statement; the kinds not here (imports, ``pass``,
definitions, which :meth:`ModuleFlow._collect_definitions` reads) change nothing followed."""

_EVALUATORS: dict[type[ast.expr], Callable[[ModuleFlow, Any, Frame], Value]] = {
    ast.Name: ModuleFlow._name,
    ast.Attribute: ModuleFlow._attribute,
    ast.Subscript: ModuleFlow._subscript,
    ast.Call: ModuleFlow._call_expression,
    ast.BinOp: ModuleFlow._arithmetic,
    ast.UnaryOp: ModuleFlow._arithmetic,
    ast.IfExp: ModuleFlow._arithmetic,
    ast.BoolOp: ModuleFlow._arithmetic,
    ast.Compare: ModuleFlow._compare,
    ast.Tuple: ModuleFlow._tuple,
    ast.List: ModuleFlow._list,
    ast.Set: ModuleFlow._list,
    ast.Dict: ModuleFlow._dict,
    ast.ListComp: ModuleFlow._comprehension,
    ast.SetComp: ModuleFlow._comprehension,
    ast.GeneratorExp: ModuleFlow._comprehension,
    ast.DictComp: ModuleFlow._comprehension,
    ast.NamedExpr: ModuleFlow._named,
    ast.Starred: ModuleFlow._inner,
    ast.Await: ModuleFlow._inner,
    ast.JoinedStr: ModuleFlow._joined_string,
    ast.FormattedValue: ModuleFlow._formatted,
}
"""The method that evaluates each kind of expression; the kinds not here (constants, lambdas,
slices) are nothing followed."""

_LIBRARY_CALLS: dict[str, LibraryCall] = {
    **dict.fromkeys(ADDRESS_SOURCES, ModuleFlow._address_source),
    **dict.fromkeys(SYMMETRIC_MEMORY_HANDLES, ModuleFlow._symmetric_memory),
    "ctypes.cast": ModuleFlow._ctypes_cast,
    **dict.fromkeys(CONSTRUCTORS, ModuleFlow._constructor),
    **dict.fromkeys((f"torch.{name}" for name in TYPED_TENSORS), ModuleFlow._typed_tensor),
    **dict.fromkeys(FILLED, ModuleFlow._full),
    **dict.fromkeys(FACTORIES, ModuleFlow._factory),
    "torch.from_numpy": ModuleFlow._from_numpy,
    "numpy.copyto": ModuleFlow._copyto,
    "array.array": ModuleFlow._array,
    **dict.fromkeys(PACKING, ModuleFlow._pack),
    **dict.fromkeys(UNPACKING, ModuleFlow._unpack),
}
"""The method that follows each known function of a library, by its qualified name."""

_DTYPE_CALLS: dict[str, LibraryCall] = {
    "numpy": ModuleFlow._numpy_scalar,
    "ctypes": ModuleFlow._ctypes_object,
}
"""What calling a dtype of each library makes of its argument (``np.uint64(p)``)."""

_BUILTIN_CALLS: dict[str, Callable[[ModuleFlow, ast.Call, Frame, list[Value]], Value]] = {
    "int": ModuleFlow._int,
    "float": ModuleFlow._float,
    **dict.fromkeys(BUILTIN_CONTAINERS, ModuleFlow._container),
    "dict": ModuleFlow._dict_call,
    "zip": ModuleFlow._zip,
    "enumerate": ModuleFlow._enumerate,
    "min": ModuleFlow._extreme,
    "max": ModuleFlow._extreme,
    "next": ModuleFlow._next,
    **dict.fromkeys(OPAQUE_BUILTINS, ModuleFlow._opaque),
}
"""The method that follows each builtin (where no definition or import of the module takes its
name)."""

_PLAIN_METHODS: dict[str, MethodCall] = {
    **dict.fromkeys(GROWING, ModuleFlow._grow),
    "to_bytes": ModuleFlow._to_bytes,
}
"""The method that follows each method of what is not typed storage (a list, an int)."""

_STORAGE_METHODS: dict[str, MethodCall] = {
    **dict.fromkeys(STORING, ModuleFlow._storing),
    **dict.fromkeys(CONVERTING, ModuleFlow._conversion),
    "numpy": ModuleFlow._numpy_view,
    "tolist": ModuleFlow._tolist,
    "item": ModuleFlow._item_of,
    **dict.fromkeys(SAME_STORAGE, ModuleFlow._same_storage),
}
"""The method that follows each method of a tensor or an array."""


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones (in functions, classes, branches, loops) included; cheaper
    than :func:`ast.walk`, which visits every expression too."""
    for statement in body:
        yield statement
        for inner in _inner_bodies(statement):
            yield from _statements(inner)


_BLOCKS: dict[type[ast.stmt], tuple[str, ...]] = {
    ast.FunctionDef: ("body",),
    ast.AsyncFunctionDef: ("body",),
    ast.ClassDef: ("body",),
    ast.If: ("body", "orelse"),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "orelse", "finalbody"),
    ast.TryStar: ("body", "orelse", "finalbody"),
    ast.Match: (),
}
"""The statements that hold others, with the fields holding their blocks (besides exception
handlers and match cases)."""


def _inner_bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks nested in ``statement``: its body, else and finally blocks, and the bodies of
    its exception handlers and match cases."""
    names = _BLOCKS.get(type(statement))
    if names is None:
        return []
    found: list[list[ast.stmt]] = [getattr(statement, name) for name in names]
    if isinstance(statement, ast.Try | ast.TryStar):
        found.extend(handler.body for handler in statement.handlers)
    elif isinstance(statement, ast.Match):
        found.extend(case.body for case in statement.cases)
    return found


def _storage_expression(node: ast.expr) -> ast.expr:
    """The storage itself, without the views and slices it is reached through:
    ``self.src_ptrs`` of ``self.src_ptrs.np[:n]``."""
    while True:
        if isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Attribute) and node.attr in VIEW_ATTRIBUTES
        ):
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in VIEWING_CALLS
        ):
            node = node.func.value
        else:
            return node


_FORWARD = re.compile(r"\s*(?:Optional\[\s*)?(?P<name>[\w.]+)\s*(?:\]|\|\s*None)?\s*")
"""A forward reference to a class: ``"Buffers"``, ``"Optional[pkg.Buffers]"``,
``"Buffers | None"``."""


def _returned_names(body: list[ast.stmt]) -> frozenset[str] | None:
    """The names a function's ``return`` statements name, at any depth (not in functions
    defined in it); ``None`` where it yields."""
    found: set[str] = set()
    pending = list(body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(statement, ast.Return) and statement.value is not None:
            found.update(n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name))
        elif isinstance(statement, ast.Expr) and isinstance(
            statement.value, ast.Yield | ast.YieldFrom
        ):
            return None
        for inner in _inner_bodies(statement):
            pending.extend(inner)
    return frozenset(found)


def _root(node: ast.expr) -> str:
    """The name ``a.b[i].c`` starts from (``a``); ``""`` for none."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _is_property(function: Function) -> bool:
    """Whether ``function`` is decorated ``@property`` (or ``@functools.cached_property``)."""
    return any(_last_name(d) in ("property", "cached_property") for d in function.decorator_list)


def _abstract(function: Function) -> bool:
    """Whether ``function``'s body only documents, passes or raises (it gives nothing)."""
    return all(
        isinstance(statement, ast.Pass | ast.Raise)
        or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
        for statement in function.body
    )


def _decorated(function: Function, decorator: str) -> bool:
    """Whether ``function`` is decorated ``@staticmethod`` or ``@classmethod`` (``decorator``)."""
    return any(isinstance(d, ast.Name) and d.id == decorator for d in function.decorator_list)


def _is_dataclass(decorator: ast.expr, qualify: Callable[[ast.expr], str | None]) -> bool:
    """``@dataclass``, ``@dataclasses.dataclass(frozen=True)``, pydantic's ``dataclass``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = qualify(target) or ""
    return name == "dataclasses.dataclass" or name.endswith("dataclasses.dataclass")


def _in_constructor(item: ast.AnnAssign) -> bool:
    """Whether a dataclass's annotated attribute is a parameter of its constructor: not a
    ``ClassVar``, not ``field(init=False)``."""
    annotation = item.annotation
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    if isinstance(annotation, ast.Name | ast.Attribute) and _last_name(annotation) == "ClassVar":
        return False
    value = item.value
    return not (
        isinstance(value, ast.Call)
        and _last_name(value.func) == "field"
        and any(
            kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False
            for kw in value.keywords
        )
    )


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _bound_fields(
    fields: Sequence[str], node: ast.Call, arguments: list[Value], keywords: dict[str, Value]
) -> tuple[tuple[str, Value], ...]:
    """What a dataclass's or NamedTuple's constructor call sets each field to, where known
    (by position only before any ``*args``)."""
    bound: dict[str, Value] = {}
    if not any(isinstance(argument, ast.Starred) for argument in node.args):
        bound.update(zip(fields, arguments, strict=False))
    bound.update((name, value) for name, value in keywords.items() if name in fields)
    return tuple((name, value) for name, value in bound.items() if value != NOTHING)


def _qualified(module: ModuleFile, name: str) -> str:
    return f"{module.name}.{name}" if module.name else name


def _values_of(shape: Shape) -> Iterator[Value]:
    if isinstance(shape, FunctionShape):
        yield shape.returns
    else:
        yield from shape.attributes.values()
        yield from shape.returns.values()


def _signed_keyword(node: ast.Call) -> bool:
    """Whether the call says ``signed=True`` (``int.from_bytes``, ``int.to_bytes``)."""
    return any(
        kw.arg == "signed" and isinstance(kw.value, ast.Constant) and kw.value.value is True
        for kw in node.keywords
    )


def _short(name: str) -> str:
    return name.replace("numpy.", "np.")
