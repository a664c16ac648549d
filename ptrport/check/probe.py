"""Which torch operations work on ``torch.uint64`` on a backend: a catalogue of what pointer code
does with addresses (create, fill, stage, transfer, compare, offset, shift, mask, sort, reduce,
serialize), each run on fresh small tensors holding ``2**63 - 1``, ``2**63``, ``2**64 - 1`` and
an Intel GPU address, and classified against Python integer arithmetic mod ``2**64``.

Nothing here assumes uint64 support: inputs are made as int64 and reinterpreted, and results
are read back through ``view(torch.int64)`` on the host, so an operation under test is the only
uint64 operation that can fail. ``ptrport probe`` and the ``uint64_operations`` scenario run
:data:`OPERATIONS`; :data:`COMPILED_OPERATIONS` are the same tensor functions under
``torch.compile`` (opt-in: the first compile takes tens of seconds). A catalogue of one's own is
any sequence of :class:`Operation`.
"""

from __future__ import annotations

import inspect
import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import torch

from ptrport import named
from ptrport.addresses import (
    HIGH_HALF,
    INT64_MAX,
    LEVEL_ZERO_USM,
    MAX_ADDRESS,
    PAGE_SIZE,
    to_hex,
    to_signed,
    to_unsigned,
)
from ptrport.device.backends import Backend
from ptrport.errors import HarnessError, UnknownName, exception_message
from ptrport.report.op_support import (
    OUTCOMES,
    SCENARIO,
    TEST_NAME,
    OperationVerdict,
    check_id,
    raises_message,
)
from ptrport.report.records import Outcome, Result

Observed: TypeAlias = "int | bool | str | Sequence[Observed]"
"""What an operation gave back, as Python values: unsigned ints for 64-bit integer tensors,
bools for bool tensors, a description for anything else. Sequences compare as lists."""

INTEL_ADDRESS = LEVEL_ZERO_USM.observed[0]
"""``0xffff85abd4e00000``, a Level Zero USM device address."""
VALUES: tuple[int, ...] = (INT64_MAX, HIGH_HALF, MAX_ADDRESS, INTEL_ADDRESS)
"""``x``, the addresses every probe starts from: the last int64, the first address past it,
the last address, an Intel GPU address."""
OTHERS: tuple[int, ...] = (HIGH_HALF, MAX_ADDRESS, INTEL_ADDRESS, INT64_MAX)
"""``y``, the second operand of comparisons: ``x`` rotated, so that the signed and the
unsigned order disagree."""
MASK: tuple[bool, ...] = (True, False, True, False)
INDEX: tuple[int, ...] = (3, 0, 2)
OFFSET = PAGE_SIZE
SHIFT = 12
TAG_MASK = (1 << 56) - 1
"""Clears an ARM top-byte tag."""
LOW_BITS = 0xFFF

_LIMIT = MAX_ADDRESS + 1
TensorFunction = Callable[..., torch.Tensor]
"""A function of some of the input tensors, named by its parameters: ``x`` and ``y``
(uint64, :data:`VALUES` and :data:`OTHERS`), ``mask`` (bool, :data:`MASK`) and ``index``
(int64, :data:`INDEX`)."""


@dataclass(frozen=True)
class Operation:
    """One probe. ``observe`` runs the operation on a backend with fresh tensors and returns
    what came back; ``expected`` is what Python integer arithmetic says it must be."""

    id: str
    description: str
    expected: Observed
    observe: Callable[[Backend], Observed]


@dataclass(frozen=True)
class Finding:
    """What probing one operation on one backend found. ``detail`` is the exception
    (``Type: first line``) for ``raises``, expected and actual values for ``wrong``."""

    operation: str
    backend: str
    verdict: OperationVerdict
    detail: str | None = None
    duration_s: float = 0.0

    @property
    def message(self) -> str | None:
        """The message a result records, the same the scenario's results have."""
        if self.verdict is OperationVerdict.RAISES:
            return raises_message(self.detail or "")
        if self.verdict is OperationVerdict.WRONG:
            return f"AssertionError: {self.detail}"
        return None

    def to_result(self) -> Result:
        """The finding as the ``uint64_operations`` scenario's result for its operation; a
        wrong one carries what ``ptrport report repro`` needs to probe it again."""
        wrong = self.verdict is OperationVerdict.WRONG
        return Result(
            check=check_id(self.operation),
            scenario=SCENARIO,
            subject=None,
            backend=self.backend,
            outcome=OUTCOMES[self.verdict],
            message=self.message,
            example={"operation": self.operation} if wrong else None,
            duration_s=self.duration_s,
            nodeid=f"ptrport/scenarios/test_{SCENARIO}.py::{TEST_NAME}[{self.backend}-{self.operation}]",
            body=f"{__name__}:{check_operation.__name__}" if wrong else None,
        )


def unavailable(backend: Backend, operations: Sequence[Operation]) -> list[Result]:
    """The results of ``operations`` on a backend that is not available here."""
    return [
        Result(
            check=check_id(op.id),
            scenario=SCENARIO,
            subject=None,
            backend=backend.name,
            outcome=Outcome.UNAVAILABLE,
            message=f"{backend.name}: {backend.unavailable_reason}",
        )
        for op in operations
    ]


# Reading results back without uint64 operations.


def bits(tensor: torch.Tensor) -> Observed:
    """A 64-bit integer tensor's elements as unsigned ints, flattened."""
    if tensor.dtype not in (torch.uint64, torch.int64):
        return _other(tensor)
    values: list[int] = tensor.view(torch.int64).cpu().reshape(-1).tolist()
    return [to_unsigned(v) for v in values]


def flags(tensor: torch.Tensor) -> Observed:
    """A bool tensor's elements, flattened."""
    if tensor.dtype is not torch.bool:
        return _other(tensor)
    return [bool(v) for v in tensor.cpu().reshape(-1).tolist()]


def _other(tensor: torch.Tensor) -> str:
    return f"a {str(tensor.dtype).removeprefix('torch.')} tensor {tensor.cpu().tolist()}"


def _as_lists(value: Observed) -> Observed:
    if isinstance(value, str) or not isinstance(value, Sequence):
        return value
    return [_as_lists(v) for v in value]


def _show(value: Observed) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, bool) or not isinstance(value, int):
        return str(value)
    return to_hex(value) if 0 <= value < _LIMIT else hex(value)


# Inputs, made without uint64 operations.


def _uint64(values: Sequence[int], device: torch.device, *, pinned: bool = False) -> torch.Tensor:
    signed = torch.tensor([to_signed(v) for v in values], dtype=torch.int64)
    if pinned:
        signed = signed.pin_memory()
    return signed.to(device).view(torch.uint64)


def _inputs(device: torch.device) -> dict[str, torch.Tensor]:
    return {
        "x": _uint64(VALUES, device),
        "y": _uint64(OTHERS, device),
        "mask": torch.tensor(MASK, dtype=torch.bool, device=device),
        "index": torch.tensor(INDEX, dtype=torch.int64, device=device),
    }


def _call(function: TensorFunction, device: torch.device) -> torch.Tensor:
    given = _inputs(device)
    return function(*(given[name] for name in inspect.signature(function).parameters))


def _wrap(value: int) -> int:
    return value % _LIMIT


# Operations with their own steps: creation, staging, transfers, Python-side reads.


def _tensor(backend: Backend) -> Observed:
    return bits(torch.tensor(list(VALUES), dtype=torch.uint64, device=backend.device))


def _full(backend: Backend) -> Observed:
    return [bits(torch.full((2,), v, dtype=torch.uint64, device=backend.device)) for v in VALUES]


def _fill(backend: Backend) -> Observed:
    filled = []
    for value in VALUES:
        tensor = torch.empty(2, dtype=torch.uint64, device=backend.device)
        tensor.fill_(value)
        filled.append(bits(tensor))
    return filled


def _numpy_write(backend: Backend) -> Observed:
    host = torch.zeros(len(VALUES), dtype=torch.uint64, pin_memory=backend.can_pin)
    view = host.numpy()
    for i, value in enumerate(VALUES):
        view[i] = value
    return bits(host)


def _setitem(backend: Backend) -> Observed:
    tensor = _uint64([0] * len(VALUES), backend.device)
    for i, value in enumerate(VALUES):
        tensor[i] = value
    return bits(tensor)


def _index_put(backend: Backend) -> Observed:
    given = _inputs(backend.device)
    target = given["y"]
    target.index_put_((given["index"],), given["x"][: len(INDEX)])
    return bits(target)


def _copy(*, to_device: bool, non_blocking: bool) -> Callable[[Backend], Observed]:
    def observe(backend: Backend) -> Observed:
        pinned = non_blocking and backend.can_pin
        host_device = torch.device("cpu")
        if to_device:
            source = _uint64(VALUES, host_device, pinned=pinned)
            target = torch.empty(len(VALUES), dtype=torch.uint64, device=backend.device)
        else:
            source = _uint64(VALUES, backend.device)
            target = torch.empty(len(VALUES), dtype=torch.uint64, pin_memory=pinned)
        target.copy_(source, non_blocking=non_blocking)
        backend.synchronize()
        return bits(target)

    return observe


def _ints(values: list[object]) -> Observed:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return [v for v in values if isinstance(v, int)]
    return f"Python values {values}"


def _tolist(backend: Backend) -> Observed:
    return _ints(_uint64(VALUES, backend.device).tolist())


def _item(backend: Backend) -> Observed:
    tensor = _uint64(VALUES, backend.device)
    return _ints([tensor[i].item() for i in range(len(VALUES))])


def _save_load(backend: Backend) -> Observed:
    buffer = io.BytesIO()
    torch.save(_uint64(VALUES, backend.device), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    if not isinstance(loaded, torch.Tensor):
        return f"a {type(loaded).__name__}"
    return bits(loaded)


def _placed() -> list[int]:
    target = list(OTHERS)
    for position, value in zip(INDEX, VALUES, strict=False):
        target[position] = value
    return target


def _sum(values: Sequence[int]) -> int:
    return _wrap(sum(values))


@dataclass(frozen=True)
class _TensorOperation:
    """An operation that is a function of the input tensors, so that it can be compiled."""

    id: str
    description: str
    function: TensorFunction
    expected: Observed
    read: Callable[[torch.Tensor], Observed] = bits
    compiles: bool = True

    def eager(self) -> Operation:
        def observe(backend: Backend) -> Observed:
            return self.read(_call(self.function, backend.device))

        return Operation(self.id, self.description, self.expected, observe)

    def compiled(self) -> Operation:
        def observe(backend: Backend) -> Observed:
            function = torch.compile(self.function, fullgraph=True, dynamic=False)
            return self.read(_call(function, backend.device))

        return Operation(
            f"compiled:{self.id}",
            f"{self.description}, under torch.compile",
            self.expected,
            observe,
        )


_TENSOR_OPERATIONS: tuple[_TensorOperation, ...] = (
    _TensorOperation(
        "cat",
        "torch.cat of two uint64 tensors",
        lambda x, y: torch.cat([x, y]),
        [*VALUES, *OTHERS],
        compiles=False,
    ),
    _TensorOperation("slice", "x[1:3], a view of the middle", lambda x: x[1:3], list(VALUES[1:3])),
    _TensorOperation("clone", "x.clone()", lambda x: x.clone(), list(VALUES)),
    _TensorOperation(
        "view_int64",
        "x.view(torch.int64).view(torch.uint64): a bitcast there and back",
        lambda x: x.view(torch.int64).view(torch.uint64),
        list(VALUES),
        compiles=False,
    ),
    _TensorOperation(
        "to_int64",
        "x.to(torch.int64): a conversion that must wrap to the same bits",
        lambda x: x.to(torch.int64),
        list(VALUES),
    ),
    _TensorOperation(
        "eq",
        "x == y, elementwise",
        lambda x, y: x == y,
        [a == b for a, b in zip(VALUES, OTHERS, strict=True)],
        read=flags,
    ),
    _TensorOperation(
        "lt",
        "x < y, elementwise, in the unsigned order",
        lambda x, y: x < y,
        [a < b for a, b in zip(VALUES, OTHERS, strict=True)],
        read=flags,
    ),
    _TensorOperation(
        "add",
        f"x + {OFFSET} (a Python int offset), wrapping mod 2**64",
        lambda x: x + OFFSET,
        [_wrap(v + OFFSET) for v in VALUES],
    ),
    _TensorOperation(
        "sub",
        f"x - {OFFSET} (a Python int offset), wrapping mod 2**64",
        lambda x: x - OFFSET,
        [_wrap(v - OFFSET) for v in VALUES],
    ),
    _TensorOperation(
        "rshift",
        f"x >> {SHIFT}, a logical shift (no sign extension)",
        lambda x: x >> SHIFT,
        [v >> SHIFT for v in VALUES],
    ),
    _TensorOperation(
        "lshift",
        "x << 4, dropping the bits shifted out",
        lambda x: x << 4,
        [_wrap(v << 4) for v in VALUES],
    ),
    _TensorOperation(
        "and",
        f"x & {TAG_MASK:#x}, clearing a top-byte tag",
        lambda x: x & TAG_MASK,
        [v & TAG_MASK for v in VALUES],
    ),
    _TensorOperation(
        "or", f"x | {LOW_BITS:#x}", lambda x: x | LOW_BITS, [v | LOW_BITS for v in VALUES]
    ),
    _TensorOperation(
        "xor", f"x ^ {LOW_BITS:#x}", lambda x: x ^ LOW_BITS, [v ^ LOW_BITS for v in VALUES]
    ),
    _TensorOperation("max", "x.max(), in the unsigned order", lambda x: x.max(), [max(VALUES)]),
    _TensorOperation("min", "x.min(), in the unsigned order", lambda x: x.min(), [min(VALUES)]),
    _TensorOperation(
        "sort",
        "x.sort().values, in the unsigned order",
        lambda x: x.sort().values,
        sorted(VALUES),
        compiles=False,
    ),
    _TensorOperation(
        "unique",
        "torch.unique of x and y together, sorted in the unsigned order",
        lambda x, y: torch.unique(torch.cat([x, y])),
        sorted({*VALUES, *OTHERS}),
        compiles=False,
    ),
    _TensorOperation(
        "masked_fill",
        "x.masked_fill(mask, 0)",
        lambda x, mask: x.masked_fill(mask, 0),
        [0 if m else v for v, m in zip(VALUES, MASK, strict=True)],
    ),
    _TensorOperation(
        "index_select",
        f"x.index_select(0, {list(INDEX)})",
        lambda x, index: x.index_select(0, index),
        [VALUES[i] for i in INDEX],
    ),
    _TensorOperation(
        "gather",
        f"x.gather(0, {list(INDEX)})",
        lambda x, index: x.gather(0, index),
        [VALUES[i] for i in INDEX],
    ),
    _TensorOperation(
        "where",
        "torch.where(mask, x, y)",
        lambda x, y, mask: torch.where(mask, x, y),
        [a if m else b for a, b, m in zip(VALUES, OTHERS, MASK, strict=True)],
    ),
    _TensorOperation(
        "sum",
        "x.sum(), mod 2**64 (the bits, whatever dtype torch returns it in)",
        lambda x: x.sum(),
        [_sum(VALUES)],
    ),
)

_COPY_DESCRIPTION = "copy_ from a {0} tensor to a {1} one{2}"
_NON_BLOCKING = ", non_blocking=True from pinned host memory where the backend pins"

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "tensor",
        "torch.tensor([...], dtype=torch.uint64) from Python ints above 2**63",
        list(VALUES),
        _tensor,
    ),
    Operation(
        "full",
        "torch.full((2,), p, dtype=torch.uint64) for each address p",
        [[v, v] for v in VALUES],
        _full,
    ),
    Operation(
        "fill_",
        "torch.empty(2, dtype=torch.uint64).fill_(p) for each address p",
        [[v, v] for v in VALUES],
        _fill,
    ),
    Operation(
        "numpy_write",
        "Python ints written into the numpy view of a host uint64 tensor",
        list(VALUES),
        _numpy_write,
    ),
    Operation(
        "setitem",
        "x[i] = p with a Python int p, up to 2**64 - 1",
        list(VALUES),
        _setitem,
    ),
    Operation(
        "index_put_",
        f"y.index_put_(({list(INDEX)},), x[:{len(INDEX)}])",
        _placed(),
        _index_put,
    ),
    Operation(
        "copy_h2d",
        _COPY_DESCRIPTION.format("host", "device", ""),
        list(VALUES),
        _copy(to_device=True, non_blocking=False),
    ),
    Operation(
        "copy_h2d_non_blocking",
        _COPY_DESCRIPTION.format("host", "device", _NON_BLOCKING),
        list(VALUES),
        _copy(to_device=True, non_blocking=True),
    ),
    Operation(
        "copy_d2h",
        _COPY_DESCRIPTION.format("device", "host", ""),
        list(VALUES),
        _copy(to_device=False, non_blocking=False),
    ),
    Operation(
        "copy_d2h_non_blocking",
        _COPY_DESCRIPTION.format("device", "host", _NON_BLOCKING.replace(" from", " to")),
        list(VALUES),
        _copy(to_device=False, non_blocking=True),
    ),
    *(op.eager() for op in _TENSOR_OPERATIONS),
    Operation("tolist", "x.tolist(): Python ints, unsigned", list(VALUES), _tolist),
    Operation("item", "x[i].item() for each element: Python ints, unsigned", list(VALUES), _item),
    Operation(
        "save_load",
        "torch.save to an in-memory buffer, then torch.load",
        list(VALUES),
        _save_load,
    ),
)
"""The catalogue, in the order pointer code meets the operations."""

COMPILED_OPERATIONS: tuple[Operation, ...] = tuple(
    op.compiled() for op in _TENSOR_OPERATIONS if op.compiles
)
"""Elementwise and reduction operations under ``torch.compile`` (opt-in, slow to compile)."""


def catalogue(*, compiled: bool = False) -> tuple[Operation, ...]:
    """:data:`OPERATIONS`, then :data:`COMPILED_OPERATIONS` if ``compiled``."""
    return OPERATIONS + COMPILED_OPERATIONS if compiled else OPERATIONS


def probe(backend: Backend, operation: Operation) -> Finding:
    """Run one operation on ``backend`` and classify what happened. Any ``Exception`` the
    operation raises, a failed compilation included, is the finding ``raises``."""
    started = time.perf_counter()
    detail: str | None = None
    try:
        observed = operation.observe(backend)
    except Exception as exc:
        verdict, detail = OperationVerdict.RAISES, exception_message(exc)
    else:
        if _as_lists(observed) == _as_lists(operation.expected):
            verdict = OperationVerdict.WORKS
        else:
            verdict = OperationVerdict.WRONG
            detail = f"expected {_show(operation.expected)}, got {_show(observed)}"
    return Finding(
        operation=operation.id,
        backend=backend.name,
        verdict=verdict,
        detail=detail,
        duration_s=time.perf_counter() - started,
    )


def probe_all(backend: Backend, operations: Sequence[Operation] = OPERATIONS) -> list[Finding]:
    """:func:`probe` each operation on ``backend``, in order."""
    return [probe(backend, op) for op in operations]


def find_operation(name: str, operations: Sequence[Operation] | None = None) -> Operation:
    """The operation with id ``name`` in ``operations`` (default: the whole catalogue,
    compiled variants included); :class:`~ptrport.errors.UnknownName` if there is none."""
    for operation in catalogue(compiled=True) if operations is None else operations:
        if operation.id == name:
            return operation
    raise UnknownName(f"unknown operation {name!r}")


def check_operation(
    backend: Backend, operation: str, operations: Sequence[Operation] | None = None
) -> Finding:
    """Probe ``operation`` (an id in ``operations``, by default the whole catalogue) on
    ``backend``, as the ``uint64_operations`` scenario does; raise ``AssertionError`` saying
    what was expected and what came back when its result is wrong."""
    found = probe(backend, find_operation(operation, operations))
    if found.verdict is OperationVerdict.WRONG:
        raise AssertionError(found.detail)
    return found


class CatalogueError(HarnessError):
    """A catalogue of one's own that cannot be loaded, with a one-line reason."""


def load_operations(spec: str) -> tuple[Operation, ...]:
    """The catalogue that ``spec`` (``package.module:attribute``) names: a sequence of
    :class:`Operation` with distinct ids. The current directory is importable, as it is for
    ``python -m``."""
    try:
        found = named.load(spec, "operation catalogue")
    except named.LoadError as exc:
        raise CatalogueError(str(exc)) from None
    if isinstance(found, str | bytes) or not isinstance(found, Sequence):
        raise CatalogueError(
            f"operations {spec!r}: not a sequence of ptrport.check.probe.Operation"
        )
    operations = tuple(found)
    if not all(isinstance(op, Operation) for op in operations):
        raise CatalogueError(
            f"operations {spec!r}: not a sequence of ptrport.check.probe.Operation"
        )
    ids = [op.id for op in operations]
    twice = next((i for i in ids if ids.count(i) > 1), None)
    if twice is not None:
        raise CatalogueError(f"operations {spec!r}: two operations have the id {twice!r}")
    return operations
