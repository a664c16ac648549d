"""Calls of libraries (torch, numpy, Triton, ctypes, ``array``, ``struct``), by the name
they are imported as, and of builtins: the storage they make of their arguments, the addresses
they give. Each handler is given the call's arguments, evaluated before it runs; the facts
(which function makes what) are :mod:`ptrport.lint.library`'s."""

from __future__ import annotations

import ast
from dataclasses import replace

from ptrport.lint import dtypes, rules
from ptrport.lint.dtypes import Dtype, Width
from ptrport.lint.flow import syntax
from ptrport.lint.flow.interface import Arguments, BuiltinCall, Flow, LibraryCall
from ptrport.lint.library import (
    ADDRESS_SOURCES,
    BUILTIN_CONTAINERS,
    BYTES,
    CONSTRUCTORS,
    FACTORIES,
    FILLED,
    NATIVE_INTEGERS,
    OPAQUE_BUILTINS,
    OUT_POINTERS,
    PACKING,
    STORAGE_MODULES,
    SYMMETRIC_MEMORY,
    SYMMETRIC_MEMORY_HANDLES,
    TYPED_TENSORS,
    UNKNOWN,
    UNPACKING,
)
from ptrport.lint.values import (
    NOTHING,
    Frame,
    Holds,
    Value,
    bits_kept,
    carried,
    element_of,
    join_all,
    list_of,
    nth,
    origin_of,
    read_back,
)

_TORCH_INFERS = dtypes.library_dtype("torch", "int64")
"""What torch makes of Python ints given no dtype."""


def _construct(
    flow: Flow,
    node: ast.Call,
    data: Value,
    dtype: Dtype | None,
    library: str,
    frame: Frame,
    call: str,
) -> Value:
    """Storage made from ``data``: a tensor, an array or a scalar of ``dtype`` (of an
    instance, by its ``__array__`` or ``__cuda_array_interface__``: not of the addresses its
    attributes hold)."""
    holds = carried(data) if data.instance is None else None
    typed = data.dtype is not None
    made = f"line {node.lineno}"
    # With no dtype, torch infers int64 from Python ints.
    inferred = _TORCH_INFERS if library == "torch" else None
    flow.unknown_into(dtype or inferred, data)
    if dtype is None:
        if library == "torch" and holds is Holds.ADDRESS and not typed:
            flow.report("inferred-int64", node, frame, rules.inferred(data, call))
            return Value(dtype=_TORCH_INFERS, made=made)
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
            flow.report(rule, node, frame, rules.put_in(data, call, dtype), dtype=dtype)
    return Value(dtype=dtype, made=made)


def library_call(flow: Flow, name: str, node: ast.Call, frame: Frame) -> Value | None:
    """A call of torch, numpy, Triton, ctypes, ``array`` or ``struct``; ``None`` for a call
    of any other module."""
    follow = LIBRARY_CALLS.get(name)
    module, _, attribute = name.rpartition(".")
    if (
        follow is None
        and module in DTYPE_CALLS
        and dtypes.library_dtype(module, attribute) is not None
    ):
        follow = DTYPE_CALLS[module]
    if follow is None and module not in STORAGE_MODULES:
        return None
    arguments = flow.arguments(node, frame)
    if follow is None:
        return flow.made_with_dtype(node, frame)
    return follow(flow, name, node, frame, arguments)


def _address_source(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    return Value(holds=Holds.ADDRESS, origin=flow.source(node))


def _symmetric_memory(
    flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments
) -> Value:
    """``symm_mem.rendezvous(t, group)``: a handle, whose ``buffer_ptrs``,
    ``signal_pad_ptrs``, ``multicast_ptr`` (and their ``_dev`` forms) are addresses."""
    return Value(instance=SYMMETRIC_MEMORY)


def _ctypes_cast(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``ctypes.cast(x, ctypes.c_void_p)``: a pointer whose ``.value`` is an address."""
    target = flow.dtype(node.args[1]) if len(node.args) == 2 else None
    if target is None or target.name != "ctypes.c_void_p":
        return NOTHING
    return Value(holds=Holds.ADDRESS, dtype=target, scalar=True, origin=flow.source(node))


def ipc_open(flow: Flow, name: str | None, node: ast.Call, frame: Frame) -> Value:
    """A call opening another process's memory (``lib.cudaIpcOpenMemHandle(h)``): the
    address it is mapped at, as a ``c_void_p`` (cuda-python: ``(err, address)``). The C
    function itself, given where to write the address (``byref(ptr)``), gives an error
    code."""
    flow.arguments(node, frame)
    calls = (arg.func for arg in node.args if isinstance(arg, ast.Call))
    if any(syntax.last_name(call) in OUT_POINTERS for call in calls):
        return NOTHING
    pointer = dtypes.library_dtype("ctypes", "c_void_p")
    address = Value(holds=Holds.ADDRESS, origin=flow.source(node))
    if name is not None and name.startswith("cuda."):
        return Value(items=(NOTHING, address))
    return replace(address, dtype=pointer, scalar=True)


def _constructor(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``torch.tensor(data, dtype=...)``, ``np.array(data, dtype)``."""
    library = CONSTRUCTORS[name]
    position = 1 if library == "numpy" else None
    dtype = flow.dtype_argument(node, frame, position)
    if flow.has_dtype(node, position) and dtype is None:
        return NOTHING
    return _construct(flow, node, nth(given.positional, 0), dtype, library, frame, _short(name))


def _typed_tensor(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``torch.LongTensor(data)``: made from its one argument (a size where there are
    more)."""
    data = given.positional[0] if len(given.positional) == 1 else NOTHING
    dtype = dtypes.library_dtype("torch", TYPED_TENSORS[name.rpartition(".")[2]])
    return _construct(flow, node, data, dtype, "torch", frame, _short(name))


def _full(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``torch.full(size, fill, dtype=...)``, ``np.full(shape, fill, dtype)``."""
    library = FILLED[name]
    positional, keywords = given
    fill = positional[1] if len(positional) > 1 else keywords.get("fill_value", NOTHING)
    dtype = flow.dtype_argument(node, frame, 2 if library == "numpy" else None)
    if dtype is None and (library == "numpy" or flow.has_dtype(node, None)):
        return NOTHING
    return _construct(flow, node, fill, dtype, library, frame, _short(name))


def _factory(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``torch.zeros(n, dtype=...)``: empty storage, of its default dtype where none is
    given."""
    if flow.has_dtype(node, None):
        dtype = flow.dtype_argument(node, frame, None)
    else:
        dtype = FACTORIES[name]
    return Value(dtype=dtype, made=f"line {node.lineno}") if dtype else NOTHING


def _numpy_scalar(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``np.uint64(p)``: a scalar (or, of a list, an array) of that dtype."""
    dtype = dtypes.library_dtype("numpy", name.rpartition(".")[2])
    data = nth(given.positional, 0)
    made = _construct(flow, node, data, dtype, "numpy", frame, _short(name))
    return replace(made, scalar=data.element is None and data.items is None)


def _ctypes_object(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    dtype = dtypes.library_dtype("ctypes", name.rpartition(".")[2])
    assert dtype is not None
    return _native(flow, node, nth(given.positional, 0), dtype, frame, _short(name))


_WRAPPING = frozenset({"ctypes", "cutlass"})
"""Libraries that wrap a Python int into its 64 bits: ``c_int64(p).value`` and CuTe's
``Int64(p)`` (``Int64(2**64 - 1).value == -1``) are bitcasts."""


def _native(
    flow: Flow, node: ast.Call, data: Value, dtype: Dtype, frame: Frame, call: str
) -> Value:
    """A native integer (or a sequence of them) of ``dtype`` made from ``data``."""
    kept = bits_kept(dtype)
    if (
        dtype.library in _WRAPPING
        and kept is not None
        and carried(data) in (Holds.ADDRESS, Holds.BITS)
    ):
        return Value(holds=kept, dtype=dtype, origin=origin_of(data))
    return _construct(flow, node, data, dtype, dtype.library, frame, call)


def _from_numpy(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    data = nth(given.positional, 0)
    if not data.dtype:
        return NOTHING
    return replace(data, dtype=dtypes.in_library(data.dtype, "torch"))


def _copyto(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    if len(given.positional) >= 2:
        storage, stored = given.positional[:2]
        flow.store(node, storage, stored, frame, node.args[0])
    return NOTHING


def _array(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``array.array(typecode, data)``."""
    code = node.args[0] if node.args else None
    if isinstance(code, ast.Constant) and isinstance(code.value, str):
        dtype = dtypes.array_typecode(code.value)
        data = nth(given.positional, 1)
        return _construct(flow, node, data, dtype, "array", frame, "array.array")
    return NOTHING


def _pack(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
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
            flow.report(rule, node, frame, rules.packed(value, dtype), dtype=dtype)
    if len(values) == 1 and packed is not None:
        return Value(holds=packed, dtype=BYTES, origin=origin_of(values[0]))
    return NOTHING


def _unpack(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    fmt = node.args[0] if node.args else None
    data = nth(given.positional, 1)
    if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
        return NOTHING
    fields = dtypes.struct_fields(fmt.value)
    if data.dtype != BYTES or fields is None or len(fields) != 1 or fields[0] is None:
        return NOTHING
    kept = bits_kept(fields[0])
    return Value(items=(Value(holds=kept, origin=data.origin),)) if kept else NOTHING


def from_bytes(flow: Flow, node: ast.Call, frame: Frame) -> Value:
    arguments, _ = flow.arguments(node, frame)
    data = nth(arguments, 0)
    if data.dtype != BYTES:
        return NOTHING
    signed = syntax.signed_keyword(node)
    return Value(holds=Holds.BITS if signed else Holds.ADDRESS, origin=data.origin)


def _int(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    if len(arguments) != 1:
        return NOTHING
    value = arguments[0]
    return read_back(value) if value.dtype is not None else value


def _float(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    if arguments and carried(arguments[0]) in (Holds.ADDRESS, Holds.BITS):
        message = rules.converted(arguments[0], "float()", Width.FLOAT)
        flow.report("float-storage", node, frame, message)
    return NOTHING


def _container(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    """``list(x)``, ``sorted(x)``: the elements of ``x`` (of typed storage, as ints)."""
    if len(arguments) != 1:
        return NOTHING
    value = arguments[0]
    element = element_of(value)
    if value.dtype is not None:
        element = read_back(element)
    return list_of(element)


def _dict_call(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    """``dict(dtype=torch.int64, device=d)``: its keys, as a dict written out has them."""
    if arguments:
        return NOTHING
    keys = tuple((kw.arg, flow.value(kw.value, frame)) for kw in node.keywords if kw.arg)
    return Value(keys=keys) if keys else NOTHING


def _zip(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    parts = tuple(element_of(a) for a in arguments)
    return Value(element=Value(items=parts)) if any(p != NOTHING for p in parts) else NOTHING


def _enumerate(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    element = element_of(nth(arguments, 0))
    return Value(element=Value(items=(NOTHING, element))) if element != NOTHING else NOTHING


def _extreme(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    """``min``, ``max``: one of the arguments, or one element of the only one."""
    if len(arguments) == 1:
        return element_of(arguments[0])
    return join_all(arguments)


def _next(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    return element_of(nth(arguments, 0))


def _opaque(flow: Flow, node: ast.Call, frame: Frame, arguments: list[Value]) -> Value:
    return NOTHING


def _short(name: str) -> str:
    return name.replace("numpy.", "np.")


def _native_integer(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``cutlass.Int64(p)``, ``tvm_ffi.Shape(ptrs)``: native integers of a kernel library."""
    dtype = NATIVE_INTEGERS[name]
    data = nth(given.positional, 0)
    if data is NOTHING:
        # Kernel code makes thousands of these of sizes and indices: what is not followed
        # here is not looked up in the tree.
        return Value(dtype=dtype, scalar=True)
    return _native(flow, node, data, dtype, frame, _short(name))


def _cast(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``typing.cast(int, value)``: the value."""
    return nth(given.positional, 1)


def _chain(flow: Flow, name: str, node: ast.Call, frame: Frame, given: Arguments) -> Value:
    """``itertools.chain(*rows)``: what any row holds; ``chain.from_iterable(rows)`` too."""
    if name.endswith(".from_iterable"):
        return list_of(element_of(element_of(nth(given.positional, 0))))
    return list_of(join_all(element_of(row) for row in given.positional))


LIBRARY_CALLS: dict[str, LibraryCall] = {
    **dict.fromkeys(ADDRESS_SOURCES, _address_source),
    **dict.fromkeys(SYMMETRIC_MEMORY_HANDLES, _symmetric_memory),
    "ctypes.cast": _ctypes_cast,
    **dict.fromkeys(CONSTRUCTORS, _constructor),
    **dict.fromkeys((f"torch.{name}" for name in TYPED_TENSORS), _typed_tensor),
    **dict.fromkeys(FILLED, _full),
    **dict.fromkeys(FACTORIES, _factory),
    "torch.from_numpy": _from_numpy,
    "numpy.copyto": _copyto,
    "array.array": _array,
    **dict.fromkeys(PACKING, _pack),
    **dict.fromkeys(UNPACKING, _unpack),
    "itertools.chain": _chain,
    "typing.cast": _cast,
    **dict.fromkeys(NATIVE_INTEGERS, _native_integer),
    "itertools.chain.from_iterable": _chain,
}
"""The handler that follows each known function of a library, by its qualified name."""

DTYPE_CALLS: dict[str, LibraryCall] = {
    "numpy": _numpy_scalar,
    "ctypes": _ctypes_object,
}
"""What calling a dtype of each library makes of its argument (``np.uint64(p)``)."""

BUILTIN_CALLS: dict[str, BuiltinCall] = {
    "int": _int,
    "float": _float,
    **dict.fromkeys(BUILTIN_CONTAINERS, _container),
    "dict": _dict_call,
    "zip": _zip,
    "enumerate": _enumerate,
    "min": _extreme,
    "max": _extreme,
    "next": _next,
    **dict.fromkeys(OPAQUE_BUILTINS, _opaque),
}
"""The handler that follows each builtin (where no definition or import of the module takes
its name)."""
