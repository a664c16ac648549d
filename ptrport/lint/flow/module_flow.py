"""The analysis of one module: :class:`ModuleFlow`, the hub the handlers of
:mod:`ptrport.lint.flow` serve. It holds what the module defines and what has been found, runs
the passes (the module's body, its classes until what they hold settles, each function), and
gives the handlers the core's operations (:class:`~ptrport.lint.flow.interface.Flow`): evaluate
an expression, run a block or a function, bind, store, report. Each statement and expression
is sent to its handler by the node's type."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, TypeVar

from ptrport.lint import dtypes, reinterpret, rules
from ptrport.lint.dtypes import Dtype, Width
from ptrport.lint.flow import arithmetic, calls, definitions, expressions, statements, syntax
from ptrport.lint.flow.classes import (
    contribute,
    first_parameter,
    instance_annotated,
    lineage,
    lookup,
)
from ptrport.lint.flow.interface import Arguments, Evaluator, Executor
from ptrport.lint.flow.native_calls import named_parameter
from ptrport.lint.library import DTYPE_MODULES
from ptrport.lint.tree_index import (
    PROPERTY,
    ClassShape,
    FunctionShape,
    ModuleFile,
    Passed,
    Shape,
    TreeIndex,
    classes_named,
    exported,
    holds_address,
    with_passed,
)
from ptrport.lint.values import (
    NOTHING,
    ClassInfo,
    Frame,
    Function,
    Holds,
    Kernel,
    LaunchSite,
    Site,
    Value,
    carried,
    element_of,
    join,
    join_all,
    list_of,
    origin_of,
)

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

_EXECUTORS: dict[type[ast.stmt], Executor] = statements.EXECUTORS
_EVALUATORS: dict[type[ast.expr], Evaluator] = {
    **expressions.EVALUATORS,
    **arithmetic.EVALUATORS,
    ast.Call: calls.call,
}
"""The handler of each kind of expression; the kinds not here (constants, lambdas, slices) are
nothing followed."""


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
        self.all_functions: list[Function] = []
        self.reads: list[tuple[str, str, Value | None]] = []
        self.collecting = False
        self.sign_constants: dict[ast.AST, bool] = {}
        self._qualified: dict[ast.AST, str | None] = {}
        self._texts: dict[tuple[ast.AST, int], str] = {}
        self.verdicts: dict[
            tuple[ast.expr, frozenset[ast.expr], bool], reinterpret.Verdict | None
        ] = {}
        self.annotated_classes: dict[ast.expr, str | None] = {}
        self.lineages: dict[str, list[ClassInfo]] = {}
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
        self.native_ops: set[str] = set()
        """The ``torch.ops`` operators passed an address (whose schemas the tree may define)."""
        self.passes: dict[str, tuple[Passed, ...]] = {}
        """What this module passes, holding addresses, to what it does not define
        (:meth:`record_pass`)."""
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
        definitions.collect(self)
        self.block(self.tree.body, Frame(self.module_env))
        self._settle(list(self.classes.values()))
        methods = {id(m) for info in self.classes.values() for m in info.methods.values()}
        for function in self.all_functions:
            if id(function) not in methods:
                self._definition = function.name
                result, _ = self.run_function(function, None, [], {}, None, 0)
                if self.functions.get(function.name) is function:
                    self._function_returns[function.name] = result
                    # As the other modules of the tree call it, with the addresses they pass.
                    calls = self.index.arguments.get(_qualified(self.module, function.name), ())
                    for positional, keywords in calls:
                        self.run_function(function, None, [*positional], dict(keywords), None, 0)
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
                if name.startswith("__") or syntax.is_abstract(method):
                    continue
                key = PROPERTY + name if syntax.is_property(method) else name
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
        definitions.collect(self)
        self.block(self.tree.body, Frame(self.module_env))
        wanted = [name for name in names if name in self.classes or name in self.functions]
        classes = self._with_bases(self.classes[n] for n in wanted if n in self.classes)
        self._settle(classes)
        returns = {
            name: self.run_function(self.functions[name], None, [], {}, None, 0)[0]
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
        for owner in lineage(self, info):
            for name in (*owner.attributes, *owner.annotations):
                value = lookup(self, info, name, None)
                if name not in attributes and value is not None and value != NOTHING:
                    attributes[name] = exported(value, self.module, local)
        returns = {
            name: exported(value, self.module, local)
            for name, value in info.returns.items()
            if value != NOTHING
        }
        fields = tuple(info.fields) if info.fields is not None else None
        properties = frozenset(
            name
            for owner in lineage(self, info)
            for name, method in owner.methods.items()
            if name in returns and syntax.is_property(method)
        )
        return ClassShape(
            _qualified(self.module, info.name), fields, attributes, returns, properties
        )

    def _with_bases(self, classes: Iterable[ClassInfo]) -> list[ClassInfo]:
        found: dict[str, ClassInfo] = {}
        for info in classes:
            for owner in lineage(self, info):
                found.setdefault(owner.name, owner)
        return list(found.values())

    # Settling what the classes hold.

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
            lookup(self, self.classes[owner], attribute, None) == value
            for owner, attribute, value in found.reads
        )

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
            self.sites, self.launches, self.reads = {}, {}, []
            self.collecting = True
            try:
                if isinstance(part, ast.ClassDef):
                    self._class_body(info)
                elif info.methods.get(part.name) is part:
                    receiver = first_parameter(info, part, None)
                    info.returns[part.name] = self.run_function(part, info, [], {}, receiver, 0)[0]
                    # As the other modules of the tree call it, with the addresses they pass:
                    # what it sets on ``self`` then is what the class holds.
                    for positional, keywords in self.index.arguments.get("." + part.name, ()):
                        self.run_function(
                            part, info, [*positional], dict(keywords), receiver, 0, generic=True
                        )
                else:
                    self.run_function(part, None, [], {}, None, 0)
            finally:
                self.collecting = False
            parts[part] = _ClassPass(self.sites, self.launches, self.reads)

    def _class_body(self, info: ClassInfo) -> None:
        """The assignments of ``info``'s body: what its class attributes hold."""
        frame = Frame({})
        for statement in info.node.body:
            if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
                value = self.value(statement.value, frame)
                targets = (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
                for target in targets:
                    if isinstance(target, ast.Name):
                        info.attributes[target.id] = join(info.attributes.get(target.id), value)

    # Names.

    def qualify(self, node: ast.expr) -> str | None:
        """``np.int64`` -> ``numpy.int64``, through this module's imports."""
        if isinstance(node, ast.Name):
            return self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            if node in self._qualified:
                return self._qualified[node]
            base = self.qualify(node.value)
            name = f"{base}.{node.attr}" if base else None
            self._qualified[node] = name
            return name
        return None

    def dtype(self, node: ast.expr, frame: Frame | None = None) -> Dtype | None:
        """The dtype ``node`` names, if it names one."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return dtypes.numpy_string(node.value)
        if frame is not None and isinstance(node, ast.Name | ast.Attribute):
            # A local, a module constant, self.DTYPE, torch.int64: whatever the name holds.
            return self.value(node, frame).denotes
        if isinstance(node, ast.Name):
            if node.id in self.module_env:
                return self.module_env[node.id].denotes
            if node.id not in self.imports:
                return dtypes.builtin_dtype(node.id)
        return self.library_dtype(node)

    def library_dtype(self, node: ast.expr) -> Dtype | None:
        """``torch.int64``, ``np.uint64``, ``tl.int64``, ``ctypes.c_int32`` (as imported here)."""
        name = self.qualify(node)
        if name is None:
            return None
        module, _, attribute = name.rpartition(".")
        library = DTYPE_MODULES.get(module)
        return dtypes.library_dtype(library, attribute) if library else None

    def record_pass(self, key: str, given: Arguments) -> None:
        """A call of what another module of the tree may define (``key``: a function's
        qualified name, or ``.method``), kept where its arguments hold addresses."""
        # Run for most calls, which pass nothing followed: plain loops, no generator.
        for value in given.positional:
            if value is not NOTHING and carried(value) in _KEPT:
                break
        else:
            for value in given.keywords.values():
                if value is not NOTHING and carried(value) in _KEPT:
                    break
            else:
                return
        keywords = tuple(sorted((k, v) for k, v in given.keywords.items() if k))
        self.passes[key] = with_passed(
            self.passes.get(key, ()), ((tuple(given.positional), keywords),)
        )

    def exported_passes(self) -> dict[str, tuple[Passed, ...]]:
        """After :meth:`run`, :attr:`passes` as the other modules see them (the lines where
        the addresses came from with this module's path)."""
        local = frozenset(self.classes)

        def export(value: Value) -> Value:
            return exported(value, self.module, local)

        return {
            key: tuple(
                (tuple(map(export, positional)), tuple((k, export(v)) for k, v in keywords))
                for positional, keywords in calls
            )
            for key, calls in self.passes.items()
        }

    def consult_member(self, key: str, frame: Frame) -> None:
        """A method called, or a property read (``@name``), on what is not followed here: the
        tree's classes may give addresses through it (:attr:`consulted_members`, and
        :attr:`members_by_definition` where what the statement computes may leave its
        function)."""
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
            root = syntax.root_name(statement.value.func)
            return root == frame.self_name or root in frame.env
        targets = statement.targets
        if not all(isinstance(target, ast.Name) for target in targets):
            return True
        if function not in self._returned:
            self._returned[function] = syntax.returned_names(function.body)
        returned = self._returned[function]
        return returned is None or any(
            isinstance(target, ast.Name) and target.id in returned for target in targets
        )

    def source(self, node: ast.expr) -> str:
        """How a message names where an address came from: "`t.data_ptr()` (line 12)"."""
        return f"`{self.text(node)}` (line {node.lineno})"

    def text(self, node: ast.AST, limit: int = 48) -> str:
        """The source of ``node`` as a message quotes it, cut at ``limit`` characters (unparsed
        once: a function run again reports the same sites)."""
        text = self._texts.get((node, limit))
        if text is None:
            text = ast.unparse(node)
            text = text if len(text) <= limit else text[: limit - 3] + "..."
            self._texts[(node, limit)] = text
        return text

    # Findings.

    def report(
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

    def store(
        self, node: ast.AST, storage: Value, value: Value, frame: Frame, where: ast.expr
    ) -> None:
        """``value`` written into ``storage`` (typed), which the code names ``where``."""
        dtype = storage.dtype
        holds = carried(value)
        if holds not in (Holds.ADDRESS, Holds.BITS):
            self.unknown_into(dtype, value)
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
        message = rules.stored(value, self.text(where), dtype, storage.made)
        itself = syntax.storage_expression(where)
        # A name holding a NumPy view of a tensor: the tensor is what to make unsigned.
        remake = None if storage.viewed and itself is where else self.text(itself)
        library = storage.viewed or dtype.library
        or_bits = rule == "signed-storage" and value.dtype is None
        fix = rules.remade(remake, library, storage.made, or_bits=or_bits)
        self.report(rule, node, frame, message, fix=fix)

    def unknown_into(self, dtype: Dtype | None, value: Value) -> None:
        if dtype is not None and dtype.unsafe and value.dtype is None and carried(value) is None:
            self.unknown_stored = True

    # Statements and values.

    def block(self, statements: Sequence[ast.stmt], frame: Frame) -> None:
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

    def bind(self, target: ast.expr, value: Value, frame: Frame, statement: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            frame.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            if value.items is not None and len(value.items) == len(target.elts):
                parts: Sequence[Value] = value.items
            else:
                parts = [element_of(value)] * len(target.elts)
            for part, item in zip(parts, target.elts, strict=True):
                if isinstance(item, ast.Starred):
                    self.bind(item.value, Value(element=part), frame, statement)
                else:
                    self.bind(item, part, frame, statement)
        elif isinstance(target, ast.Attribute):
            if isinstance(target.value, ast.Name) and target.value.id == frame.self_name:
                self.set_attribute(frame, target.attr, value)
            else:
                self.value(target.value, frame)
        elif isinstance(target, ast.Subscript):
            storage = self.value(target.value, frame)
            self.value(target.slice, frame)
            self.store(statement, storage, value, frame, target.value)
            self._filled(target.value, storage, value, frame)
            self._contained(target.value, storage, value, frame)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, Value(element=value), frame, statement)

    def _filled(self, node: ast.expr, storage: Value, value: Value, frame: Frame) -> None:
        """Unsigned storage that addresses are written into holds addresses from then on (for
        the arithmetic done on it elsewhere)."""
        if storage.dtype is None or storage.dtype.width is not Width.UNSIGNED64:
            return
        if storage.holds is not None or carried(value) is not Holds.ADDRESS:
            return
        self._rebind(node, replace(storage, holds=Holds.ADDRESS, origin=origin_of(value)), frame)

    def _contained(self, node: ast.expr, container: Value, value: Value, frame: Frame) -> None:
        """``table[key] = addresses`` into a list or dict (not typed storage, no instance, no
        string keys): any of its items now holds what ``value`` is (a dict keyed by an int,
        read back as ``table[group]``)."""
        if container.dtype is not None or container.instance is not None or container.keys:
            return
        if carried(value) not in (Holds.ADDRESS, Holds.BITS):
            return
        self._rebind(node, Value(element=join(container.element, value)), frame)

    def _rebind(self, node: ast.expr, value: Value, frame: Frame) -> None:
        """What a local name (one the function has bound) or an attribute of ``self`` is now,
        after a store into it."""
        if isinstance(node, ast.Name) and node.id in frame.env:
            frame.env[node.id] = value
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == frame.self_name
        ):
            self.set_attribute(frame, node.attr, value)

    def set_attribute(self, frame: Frame, name: str, value: Value) -> None:
        """``self.name = value``: in this run, and (in a method run for its class while the
        attributes are collected) in what the class is known to hold."""
        frame.self_attributes[name] = value
        if frame.owner is not None and self.collecting and frame.generic:
            contribute(frame.owner, name, value)

    def value(self, node: ast.expr, frame: Frame) -> Value:
        evaluate = _EVALUATORS.get(type(node))
        return evaluate(self, node, frame) if evaluate is not None else NOTHING

    def item(self, node: ast.expr, frame: Frame) -> Value:
        if isinstance(node, ast.Starred):
            return element_of(self.value(node.value, frame))
        return self.value(node, frame)

    # Calls.

    def arguments(self, node: ast.Call, frame: Frame) -> Arguments:
        arguments = [self.item(arg, frame) for arg in node.args]
        keywords = {kw.arg: self.value(kw.value, frame) for kw in node.keywords if kw.arg}
        for kw in node.keywords:
            if kw.arg is None:
                self.value(kw.value, frame)
        return Arguments(arguments, keywords)

    def dtype_argument(self, node: ast.Call, frame: Frame, position: int | None) -> Dtype | None:
        for keyword in node.keywords:
            if keyword.arg == "dtype":
                return self.dtype(keyword.value, frame)
        for keyword in node.keywords:
            # ``**options``, where ``options = dict(dtype=torch.int64, device=device)``.
            if keyword.arg is None and isinstance(keyword.value, ast.Name):
                given = dict(self.value(keyword.value, frame).keys or ())
                if "dtype" in given:
                    return given["dtype"].denotes
        if position is not None and len(node.args) > position:
            return self.dtype(node.args[position], frame)
        return None

    def has_dtype(self, node: ast.Call, position: int | None) -> bool:
        return any(kw.arg == "dtype" for kw in node.keywords) or (
            position is not None and len(node.args) > position
        )

    def unknown_call(self, node: ast.Call, frame: Frame) -> Value:
        """A call not followed: its arguments are, and it may make storage."""
        self.arguments(node, frame)
        return self.made_with_dtype(node, frame)

    def made_with_dtype(self, node: ast.Call, frame: Frame) -> Value:
        """Given ``dtype=``, a call not followed is taken to make storage of that dtype
        (``make_buffer(n, dtype=torch.int64)``)."""
        dtype = self.dtype_argument(node, frame, None)
        if dtype is None or dtype.library not in ("torch", "numpy"):
            return NOTHING
        return Value(dtype=dtype, made=f"line {node.lineno}")

    # Functions.

    def run_function(
        self,
        function: Function,
        owner: ClassInfo | None,
        arguments: list[Value],
        keywords: dict[str, Value],
        instance: Value | None,
        depth: int,
        *,
        generic: bool = False,
    ) -> tuple[Value, tuple[tuple[str, Value], ...]]:
        """What ``function`` returns given these arguments, and the attributes it leaves set
        on ``self`` (for a constructor); ``generic``: a method run for its class, whatever
        its arguments."""
        key = (function, tuple(arguments), tuple(sorted(keywords.items())), instance, generic)
        known = self._memo.get(key)
        if known is not None:
            if self.collecting and known.trace is not None:
                self._replay(known.trace)
            return known.result, known.attributes
        if key in self._running or depth > self._depth:
            return NOTHING, ()
        self._running.add(key)
        reads, sites, launches = len(self.reads), len(self.sites), len(self.launches)
        try:
            frame = Frame({}, owner, depth=depth + 1, function=function)
            parameters = function.args.posonlyargs + function.args.args
            if instance is not None and parameters:
                frame.self_name = parameters[0].arg
                frame.env[parameters[0].arg] = instance
                frame.self_attributes = dict(instance.keys or ())
                frame.generic = instance.keys is None and (
                    generic or all(value == NOTHING for value in (*arguments, *keywords.values()))
                )
                parameters = parameters[1:]
            for parameter, value in zip(parameters, arguments, strict=False):
                frame.env[parameter.arg] = value
            for parameter in parameters[len(arguments) :] + function.args.kwonlyargs:
                frame.env[parameter.arg] = keywords.get(parameter.arg, NOTHING)
            for parameter in (*parameters, *function.args.kwonlyargs):
                if frame.env[parameter.arg] == NOTHING:
                    annotated = instance_annotated(self, parameter.annotation)
                    frame.env[parameter.arg] = annotated or named_parameter(parameter, function)
            if function.args.vararg is not None:
                frame.env[function.args.vararg.arg] = list_of(
                    join_all(arguments[len(parameters) :])
                )
            if function.args.kwarg is not None:
                frame.env[function.args.kwarg.arg] = NOTHING
            self.block(self._body(function), frame)
            result = join_all(frame.returns)
            attributes = tuple(
                (name, value) for name, value in frame.self_attributes.items() if value != NOTHING
            )
        finally:
            self._running.discard(key)
        trace = None
        if self.collecting:
            trace = _Trace(
                self.reads,
                reads,
                len(self.reads),
                _added(self.sites, sites),
                _added(self.launches, launches),
            )
        self._memo[key] = _Run(result, attributes, trace)
        return result, attributes

    def _replay(self, trace: _Trace) -> None:
        """What a run remembered read and found, as if it ran again (in a class's part that
        did not run it: what that part finds rests on it)."""
        self.reads.extend(trace.reads[trace.first : trace.last])
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


_KEPT = (Holds.ADDRESS, Holds.BITS)


def _added(found: dict[_K, _V], before: int) -> list[tuple[_K, _V]]:
    """The entries added to ``found`` since it held ``before`` (a dict keeps their order)."""
    return list(found.items())[before:] if len(found) > before else []


def _qualified(module: ModuleFile, name: str) -> str:
    return f"{module.name}.{name}" if module.name else name


def _values_of(shape: Shape) -> Iterator[Value]:
    if isinstance(shape, FunctionShape):
        yield shape.returns
    else:
        yield from shape.attributes.values()
        yield from shape.returns.values()
