"""Users' own subjects: code from outside the harness, checked by the same scenarios.

``--subject`` takes comma-separated items, each a built-in subject's name, the name of an entry
point in the group ``ptrport.subjects``, or ``package.module:factory``. An entry point names a
factory as well; a factory is a callable with no arguments that returns a subject object. With
no ``--subject`` the run takes every built-in subject and every entry point.

A user's subject object provides (addresses and sizes as Python ints in ``[0, 2**64)``):

``name`` (str), required
    How reports and test ids name it; it must not be a built-in subject's name.
``create(capacity, backend)``, required
    Make fresh buffers for ``capacity`` entries on ``backend`` (a :class:`~ptrport.device.backends.
    Backend`: ``.device``, ``.can_pin``, ``.synchronize()``); the next steps act on them.
``stage(batch)``, required
    Write ``batch.entries`` (each ``.src``, ``.dst``, ``.nbytes``) into the host side, after
    what was staged before since ``create``.
``transfer(n)``, required
    Move the first ``n`` staged entries to the device.
``read_back(n)``, required
    The first ``n`` entries the device holds, a list of ``(src, dst, nbytes)`` unsigned ints.
``execute(n)``, optional
    Run the first ``n`` device entries (copy ``nbytes`` from ``src`` to ``dst``). A subject
    without it is not executed, and the checks that copy skip it.
``description`` (str), optional
    One line for reports.
``contract``, optional
    What the subject's columns hold by design, a :class:`~ptrport.check.contracts.Contract` or a
    mapping such as ``{"max_nbytes": 2**31 - 1, "alignment": 8}``: the largest size its sizes
    column holds and an alignment its addresses always have. The scenarios draw within it;
    undeclared means the full range.
``exposed_by`` (collection of str), optional
    Scenarios (``table_round_trip``) or checks (``scenario::test_function``) where this
    subject must fail: for a user's own known-bad subjects, which then run as controls. Leave
    it out for code that should pass.
``exposed_by_upper_half`` (collection of str), optional
    For such a control: scenarios or checks where it must fail too on a backend whose real
    allocations lie at or above ``2**63`` (``cpu-usm``, ``cpu-tbi``, ``xpu``), e.g.
    ``batch_copy`` for pointers kept in ``int64``.
``unavailable_reason(backend) -> str | None``, optional
    Why the subject cannot run on ``backend``, or ``None`` where it can.
``order(n)``, ``in_range(n, base, nbytes)``, ``high_bits(n, shift)``, optional
    For code that computes with the addresses it holds (:class:`~ptrport.check.subjects.
    AddressQueries`): the ``address_arithmetic`` checks ask them about the first ``n``
    ``src`` addresses, and skip a subject without them.

:class:`UserSubject` wraps such an object into a :class:`~ptrport.check.subjects.Subject`. Before a
user's ``execute`` runs, it reads the user's table back and admits each entry against the live
allocations of the staged batches, as the built-in engines do: the harness never hands a
synthetic address to user code that would dereference it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any, SupportsIndex

from ptrport import named
from ptrport.addresses import ADDRESS_LIMIT
from ptrport.check.batches import Batch
from ptrport.check.contracts import ContractError, contract_from
from ptrport.check.engines import AdmittedCopy, admit_entries
from ptrport.check.subjects import Subject
from ptrport.device.allocations import AllocationRegistry
from ptrport.device.backends import Backend
from ptrport.errors import HarnessError, UnknownName, exception_message

ENTRY_POINT_GROUP = "ptrport.subjects"
REQUIRED_METHODS = ("create", "stage", "transfer", "read_back")
QUERY_METHODS = ("order", "in_range", "high_bits")
OPTIONAL_METHODS = ("execute", "unavailable_reason", *QUERY_METHODS)
ROW_FIELDS = ("src", "dst", "nbytes")


class SubjectError(HarnessError):
    """A user's subject could not be loaded, or does not keep to the protocol."""


class UserSubject:
    """A user's subject object as a :class:`~ptrport.check.subjects.Subject`: defaults filled in,
    every batch's allocations registered, every execution admitted first."""

    def __init__(self, inner: object, origin: str, spec: str | None = None) -> None:
        _check_protocol(inner, origin)
        self.inner: Any = inner
        self.origin = origin
        """Where it came from: ``'module:factory'``, with ``(entry point 'NAME')`` for one."""
        self.spec = spec
        """What ``--subject`` names it by (``module:factory`` or the entry point's name), so a
        repro can load it again."""
        self.name = str(getattr(inner, "name", ""))
        self.description: str = getattr(inner, "description", None) or f"user subject {origin}"
        self.exposed_by: frozenset[str] = frozenset(getattr(inner, "exposed_by", None) or ())
        self.exposed_by_upper_half: frozenset[str] = frozenset(
            getattr(inner, "exposed_by_upper_half", None) or ()
        )
        self.executes: bool = callable(getattr(inner, "execute", None))
        self.contract = contract_from(getattr(inner, "contract", None))
        self._backend: Backend | None = None
        self._registry = AllocationRegistry()

    def unavailable_reason(self, backend: Backend) -> str | None:
        """The user's reason, if it gives one. A broken ``unavailable_reason`` is a reason too,
        as a broken backend probe is: it is asked while tests are collected."""
        check = getattr(self.inner, "unavailable_reason", None)
        if check is None:
            return None
        try:
            reason = check(backend)
        except Exception as exc:
            return f"unavailable_reason() raised {exception_message(exc)}"
        if reason is not None and not isinstance(reason, str):
            return f"unavailable_reason() returned {reason!r}, not a str or None"
        return reason or None

    def create(self, capacity: int, backend: Backend) -> object:
        self._backend = backend
        self._registry = AllocationRegistry()
        return self.inner.create(capacity, backend)

    def stage(self, batch: Batch) -> None:
        for allocation in batch.allocations:
            self._registry.add(allocation)
        self.inner.stage(batch)

    def transfer(self, n: int) -> None:
        self.inner.transfer(n)

    def execute(self, n: int) -> list[AdmittedCopy]:
        """Admit the first ``n`` entries the user's table holds, then let the user run them."""
        if not self.executes:
            raise SubjectError(f"{self.name} has no execute()")
        if self._backend is None:
            raise SubjectError(f"{self.name}: create() was not called")
        copies = admit_entries(self.read_back(n), self._registry)
        self.inner.execute(n)
        self._backend.synchronize()
        return copies

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        return _checked_rows(self.name, n, self.inner.read_back(n))

    def __getattr__(self, name: str) -> Any:
        """The user's address queries, where it has them (so that it is an
        :class:`~ptrport.check.subjects.AddressQueries` exactly when the user's object is)."""
        if name in QUERY_METHODS and "inner" in self.__dict__:
            return getattr(self.inner, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<user subject {self.name} from {self.origin}>"


def select_subjects(spec: str | None, builtin: Mapping[str, Subject]) -> dict[str, Subject]:
    """The subjects ``--subject=spec`` names, by name, in the order given; with no spec, every
    built-in subject and then every entry point's. Raises :class:`~ptrport.errors.UnknownName`
    for a name it does not know and :class:`SubjectError` for a subject that fails to load."""
    entry_points = _entry_points()
    if spec is None:
        chosen: dict[str, Subject] = dict(builtin)
        for name, entry_point in entry_points.items():
            _add(chosen, _from_entry_point(name, entry_point, builtin), builtin)
        return chosen
    items = list(dict.fromkeys(item.strip() for item in spec.split(",") if item.strip()))
    known = ", ".join([*builtin, *entry_points])
    if not items:
        raise UnknownName(f"no subject named; known: {known}")
    chosen = {}
    for item in items:
        found: Subject
        if item in builtin:
            found = builtin[item]
        elif item in entry_points:
            found = _from_entry_point(item, entry_points[item], builtin)
        elif ":" in item:
            found = _from_factory_spec(item)
        else:
            raise UnknownName(
                f"unknown subject {item!r}; known: {known}; or name a factory as module:factory"
            )
        _add(chosen, found, builtin)
    return chosen


def load_factory(spec: str) -> Callable[[], object]:
    """The callable ``module:attr`` names; the directory pytest runs in is importable."""
    try:
        factory = named.load(spec, "subject factory")
    except named.LoadError as exc:
        raise SubjectError(str(exc)) from None
    if not callable(factory):
        raise SubjectError(
            f"subject factory {spec!r} is not callable: it is of type {type(factory).__name__}"
        )
    return factory


def make_user_subject(
    factory: Callable[[], object], origin: str, spec: str | None = None
) -> UserSubject:
    """Call ``factory`` and wrap what it returns; any error is one :class:`SubjectError` line."""
    try:
        made = factory()
    except Exception as exc:
        raise SubjectError(f"subject factory {origin} raised {exception_message(exc)}") from None
    return UserSubject(made, origin, spec)


def _from_factory_spec(spec: str) -> UserSubject:
    return make_user_subject(load_factory(spec), repr(spec), spec)


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry_point.name, entry_point)
    return dict(sorted(found.items()))


def _from_entry_point(
    name: str, entry_point: importlib.metadata.EntryPoint, builtin: Mapping[str, Subject]
) -> UserSubject:
    origin = f"{entry_point.value!r} (entry point {name!r})"
    if name in builtin:
        raise SubjectError(
            f"entry point {name!r} in {ENTRY_POINT_GROUP} has a built-in subject's name; rename it"
        )
    try:
        factory = entry_point.load()
    except Exception as exc:
        raise SubjectError(
            f"cannot load subject factory {origin}: {exception_message(exc)}"
        ) from None
    if not callable(factory):
        raise SubjectError(
            f"subject factory {origin} is not callable: it is of type {type(factory).__name__}"
        )
    return make_user_subject(factory, origin, name)


def _add(chosen: dict[str, Subject], found: Subject, builtin: Mapping[str, Subject]) -> None:
    if isinstance(found, UserSubject):
        if found.name in builtin:
            raise SubjectError(
                f"subject from {found.origin} is named {found.name!r}, like a built-in "
                "subject; give it another name"
            )
        other = chosen.get(found.name)
        if isinstance(other, UserSubject) and other.origin != found.origin:
            raise SubjectError(
                f"subjects from {other.origin} and {found.origin} are both named "
                f"{found.name!r}; give them different names"
            )
    chosen[found.name] = found


def _check_protocol(inner: object, origin: str) -> None:
    """Raise one :class:`SubjectError` line for everything ``inner`` lacks or gets wrong."""
    missing = [] if hasattr(inner, "name") else ["name"]
    missing += [m for m in REQUIRED_METHODS if not callable(getattr(inner, m, None))]
    wrong = []
    name = getattr(inner, "name", None)
    if "name" not in missing and not (isinstance(name, str) and name.strip()):
        wrong.append(f"name is {name!r}, not a non-empty str")
    description = getattr(inner, "description", None)
    if description is not None and not isinstance(description, str):
        wrong.append(f"description is {description!r}, not a str")
    for attribute in ("exposed_by", "exposed_by_upper_half"):
        names = getattr(inner, attribute, None)
        if names is not None and not _is_names(names):
            wrong.append(f"{attribute} is {names!r}, not a collection of scenario names")
    for method in OPTIONAL_METHODS:
        value = getattr(inner, method, None)
        if value is not None and not callable(value):
            wrong.append(f"{method} is {value!r}, not a method")
    try:
        contract_from(getattr(inner, "contract", None))
    except ContractError as exc:
        wrong.append(str(exc))
    problems = ([f"missing {', '.join(missing)}"] if missing else []) + wrong
    if problems:
        raise SubjectError(
            f"subject from {origin} does not fit the protocol: {'; '.join(problems)}"
        )


def _is_names(value: object) -> bool:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        return False
    return all(isinstance(v, str) for v in value)


def _checked_rows(name: str, n: int, rows: object) -> list[tuple[int, int, int]]:
    """``rows`` as a list of ``n`` unsigned ``(src, dst, nbytes)``, or one line saying what is
    wrong with what a user's ``read_back(n)`` returned."""
    call = f"{name}: read_back({n})"
    if isinstance(rows, str | bytes | Mapping) or not isinstance(rows, Iterable):
        raise SubjectError(f"{call} returned {rows!r}, not a list of (src, dst, nbytes)")
    listed = list(rows)
    if len(listed) != n:
        raise SubjectError(f"{call} returned {len(listed)} rows, not {n}")
    checked = []
    for i, row in enumerate(listed):
        if not isinstance(row, tuple | list) or len(row) != len(ROW_FIELDS):
            raise SubjectError(f"{call}: row {i} is {row!r}, not a (src, dst, nbytes) tuple")
        values = []
        for field, value in zip(ROW_FIELDS, row, strict=True):
            values.append(_unsigned(f"{call}: row {i} {field}", value))
        checked.append((values[0], values[1], values[2]))
    return checked


def _unsigned(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise SubjectError(f"{where} is {value!r} ({type(value).__name__}), not an int")
    number = operator.index(value)
    if not 0 <= number < ADDRESS_LIMIT:
        hint = "; a signed int64? read it back as unsigned" if number < 0 else ""
        raise SubjectError(f"{where} is {number}, outside [0, 2**64){hint}")
    return number
