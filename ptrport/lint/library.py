"""What the lint knows of the libraries an address passes through: which calls of torch, numpy,
ctypes and the builtins make storage (and of which dtype when none is given), which give the
same storage seen another way, which convert or store into it, and which give no address.

Names are as :class:`~ptrport.lint.flow.ModuleFlow` qualifies them through a module's imports:
``numpy.zeros`` for ``np.zeros``."""

from __future__ import annotations

import functools
import re

from ptrport.lint.dtypes import Dtype, library_dtype

ADDRESS_SOURCES = frozenset({"ctypes.addressof"})
"""Calls whose result is an address (besides any ``.data_ptr()``)."""
ARRAY_INTERFACES = frozenset({"__cuda_array_interface__", "__array_interface__"})
"""Attributes whose ``["data"][0]`` is the address of the data."""
SYMMETRIC_MEMORY = "torch symmetric memory handle"
"""What the calls of :data:`SYMMETRIC_MEMORY_HANDLES` give."""
SYMMETRIC_MEMORY_HANDLES = frozenset(
    {
        "torch.distributed._symmetric_memory.rendezvous",
        "torch.distributed._symmetric_memory.get_symm_mem_workspace",
        "torch._C._distributed_c10d._SymmetricMemory.rendezvous",
    }
)
"""Calls giving a torch symmetric memory handle (``symm_mem.rendezvous(t, group)``)."""
SYMMETRIC_MEMORY_ADDRESSES = {
    "buffer_ptrs": True,
    "signal_pad_ptrs": True,
    "multicast_ptr": False,
    "buffer_ptrs_dev": False,
    "signal_pad_ptrs_dev": False,
}
"""A handle's attributes that are addresses, each with whether it is a list of them. The
``_dev`` forms are each the device address of an array of the peers' addresses."""
OUT_POINTERS = frozenset({"byref", "pointer", "addressof"})
"""ctypes calls passing where a C function writes its result (its own result is a status)."""
_IPC_OPEN = re.compile(r"^_*(?:cuda|hip|cu)?(?i:ipc_?open|open_?ipc|(?:ipc_?)?open_?mem_?handle)")


@functools.lru_cache(maxsize=4096)
def opens_ipc_memory(name: str) -> bool:
    """Whether a function or method named ``name`` maps another process's device memory and
    gives its address: its name starts (after ``_``s and a ``cuda``/``hip``/``cu`` prefix) with
    ``IpcOpen``/``ipc_open``/``open_ipc``, or with ``open_mem_handle`` (the runtime call without
    its ``Ipc``, as wrappers of it name it), in any case, and it does not open an IPC event
    (``cudaIpcOpenMemHandle``, ``hipIpcOpenMemHandle``, ``ipc_open``, ``open_ipc_handle``,
    ``heap.open_mem_handle``; not ``cudaIpcOpenEventHandle``, ``is_ipc_open``)."""
    return _IPC_OPEN.match(name) is not None and "event" not in name.lower()


VIEW_ATTRIBUTES = frozenset({"np", "cpu", "gpu", "data", "T", "mT", "host", "device", "real"})
"""Attributes that are the same storage seen another way (vLLM's CpuGpuBuffer has .np/.cpu/.gpu)."""
SAME_STORAGE = frozenset(
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
"""Methods of a tensor or an array whose result holds what it holds, in its dtype."""
VIEWING_CALLS = SAME_STORAGE | {"numpy"}
"""Calls whose result is the storage they are called on, seen another way."""
CONVERTING = frozenset({"view", "to", "astype", "type"})
"""Methods whose result is the storage's values in the dtype they are given."""
STORING = frozenset({"fill_", "fill", "copy_", "index_fill_", "masked_fill_"})
"""Methods that write their last argument into the storage."""

CONSTRUCTORS = {
    "torch.tensor": "torch",
    "torch.as_tensor": "torch",
    "torch.asarray": "torch",
    "numpy.array": "numpy",
    "numpy.asarray": "numpy",
    "numpy.ascontiguousarray": "numpy",
    "numpy.asanyarray": "numpy",
    "numpy.fromiter": "numpy",
}
"""Calls that make storage from data, with the library of each."""
TYPED_TENSORS = {
    "Tensor": "float32",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
}
"""torch's legacy constructors, with the kind of number each stores."""
FACTORIES = {
    **dict.fromkeys(
        ("torch.zeros", "torch.empty", "torch.ones"), library_dtype("torch", "float32")
    ),
    **dict.fromkeys(
        ("numpy.zeros", "numpy.empty", "numpy.ones"), library_dtype("numpy", "float64")
    ),
    "torch.arange": library_dtype("torch", "int64"),
    "numpy.arange": Dtype("np.int64 (np.arange's default)", "int64", "numpy"),
}
"""Calls that make storage, with the dtype each makes when none is given."""
NATIVE_INTEGERS = {
    "cutlass.Int64": Dtype("cutlass.Int64", "int64", "cutlass"),
    "cutlass.Int32": Dtype("cutlass.Int32", "int32", "cutlass"),
    "cutlass.Uint64": Dtype("cutlass.Uint64", "uint64", "cutlass"),
    "tvm_ffi.Shape": Dtype("tvm_ffi.Shape", "int64", "tvm_ffi"),
}
"""Calls of kernel libraries that make a native integer (or a sequence of them) from Python
ints: CuTe DSL's host-side kernel arguments (``Int64(p)`` keeps the 64 bits, as ctypes does:
``Int64(2**64 - 1).value == -1``; ``Int32(p)`` cuts them), TVM-FFI's ``Shape(ptrs)`` (int64
elements: ``ValueError`` at ``2**63``)."""
FILLED = {"torch.full": "torch", "numpy.full": "numpy"}
"""Calls that make storage filled with one value, with the library of each."""
STORAGE_MODULES = frozenset({"torch", "numpy", "triton", "triton.language"})
"""Modules any other call of which, given ``dtype=``, is taken to make storage of that dtype."""
DTYPE_MODULES = {
    "torch": "torch",
    "numpy": "numpy",
    "triton.language": "triton",
    "tl": "triton",
    "ctypes": "ctypes",
}
"""The modules whose attributes are dtypes, as imported: the library of each."""
UNKNOWN = {
    library: Dtype(f"{library} inferred dtype", "", library)
    for library in ("torch", "numpy", "array", "ctypes", "struct")
}
"""Storage of each library made with no dtype from what is not typed: the dtype is inferred."""
BYTES = Dtype("bytes", "", "bytes")
"""What ``struct.pack`` and ``int.to_bytes`` give."""
PACKING = {"struct.pack": 1, "struct.pack_into": 3}
"""struct's packing calls, with the position of the first value packed."""
UNPACKING = frozenset({"struct.unpack", "struct.unpack_from"})
"""struct's unpacking calls: of bytes holding an address, a tuple holding it."""

GROWING = frozenset({"append", "extend", "insert", "add"})
"""Methods of a list or a set that add their last argument to it."""
BUILTIN_CONTAINERS = frozenset({"list", "tuple", "sorted", "set", "reversed", "frozenset"})
"""Builtins whose result holds the elements of their one argument."""
OPAQUE_BUILTINS = frozenset(
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
