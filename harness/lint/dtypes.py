"""Which storage can hold an address: the dtypes of torch, numpy, Triton, ctypes, ``array`` and
``struct``, each sorted by whether it keeps every value in ``[0, 2**64)``."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Width(enum.Enum):
    """What a dtype does to an address."""

    UNSIGNED64 = "holds every address"
    SIGNED64 = "overflows at 2**63"
    NARROW = "truncates it"
    FLOAT = "rounds it"
    OTHER = "is not an integer"


@dataclass(frozen=True)
class Dtype:
    name: str
    """As code writes it: ``torch.int64``, ``np.uint64``, ``'q'``."""
    width: Width
    library: str
    """``torch``, ``numpy``, ``triton``, ``ctypes``, ``array`` or ``struct``."""

    @property
    def unsafe(self) -> bool:
        return self.width in (Width.SIGNED64, Width.NARROW, Width.FLOAT)


_U64, _S64, _NARROW, _FLOAT = Width.UNSIGNED64, Width.SIGNED64, Width.NARROW, Width.FLOAT

_TORCH = {
    "uint64": _U64,
    "int64": _S64,
    "long": _S64,
    **dict.fromkeys(
        ("int32", "int", "int16", "short", "int8", "uint8", "uint16", "uint32"), _NARROW
    ),
    **dict.fromkeys(
        ("float64", "double", "float32", "float", "float16", "half", "bfloat16"), _FLOAT
    ),
}
_NUMPY = {
    **dict.fromkeys(("uint64", "uintp", "ulonglong", "ulong", "uint"), _U64),
    **dict.fromkeys(("int64", "intp", "int_", "longlong", "long"), _S64),
    **dict.fromkeys(
        [
            "int32",
            "int16",
            "int8",
            "uint32",
            "uint16",
            "uint8",
            "intc",
            "uintc",
            "short",
            "ushort",
            "byte",
            "ubyte",
        ],
        _NARROW,
    ),
    **dict.fromkeys(
        ("float64", "float32", "float16", "double", "single", "half", "longdouble", "float_"),
        _FLOAT,
    ),
}
_TRITON = {
    "uint64": _U64,
    "int64": _S64,
    **dict.fromkeys(("int32", "int16", "int8", "uint32", "uint16", "uint8"), _NARROW),
    **dict.fromkeys(("float64", "float32", "float16", "bfloat16"), _FLOAT),
}
_CTYPES = {
    **dict.fromkeys(("c_uint64", "c_ulonglong", "c_size_t", "c_void_p", "c_ulong"), _U64),
    **dict.fromkeys(("c_int64", "c_longlong", "c_ssize_t", "c_long"), _S64),
    **dict.fromkeys(
        [
            "c_int32",
            "c_uint32",
            "c_int",
            "c_uint",
            "c_int16",
            "c_uint16",
            "c_short",
            "c_ushort",
            "c_int8",
            "c_uint8",
            "c_byte",
            "c_ubyte",
        ],
        _NARROW,
    ),
    **dict.fromkeys(("c_float", "c_double", "c_longdouble"), _FLOAT),
}
_NUMPY_STRINGS = {
    **dict.fromkeys(("uint64", "u8", "<u8", "=u8", "Q", "uint", "uintp"), _U64),
    **dict.fromkeys(("int64", "i8", "<i8", "=i8", "q", "int", "long", "intp", "int_"), _S64),
    **dict.fromkeys(
        ("int32", "i4", "<i4", "uint32", "u4", "<u4", "int16", "i2", "int8", "i1", "uint8", "u1"),
        _NARROW,
    ),
    **dict.fromkeys(
        ("float64", "f8", "<f8", "float32", "f4", "<f4", "float16", "f2", "float", "double"),
        _FLOAT,
    ),
}
# array.array typecodes and struct format characters, on a 64-bit Linux or macOS build.
_TYPECODES = {
    **dict.fromkeys("QLNP", _U64),
    **dict.fromkeys("qln", _S64),
    **dict.fromkeys("iIhHbB", _NARROW),
    **dict.fromkeys("efd", _FLOAT),
}
_STRUCT_STANDARD = {"l": _NARROW, "L": _NARROW}
"""With a byte-order prefix, struct's ``l``/``L`` are 4 bytes."""


_LIBRARIES = {
    "torch": ("torch.", _TORCH),
    "numpy": ("np.", _NUMPY),
    "triton": ("tl.", _TRITON),
    "ctypes": ("ctypes.", _CTYPES),
}


def library_dtype(library: str, attribute: str) -> Dtype | None:
    """``torch.int64`` is ``library_dtype("torch", "int64")``; ``None`` for a name that is no
    dtype of that library."""
    prefix, table = _LIBRARIES[library]
    width = table.get(attribute)
    return Dtype(f"{prefix}{attribute}", width, library) if width else None


def torch_dtype(attribute: str) -> Dtype | None:
    return library_dtype("torch", attribute)


def numpy_dtype(attribute: str) -> Dtype | None:
    return library_dtype("numpy", attribute)


def numpy_string(text: str) -> Dtype | None:
    """A dtype written as a string, ``dtype="int64"``: numpy's spelling (torch takes none)."""
    width = _NUMPY_STRINGS.get(text)
    return Dtype(repr(text), width, "numpy") if width else None


def builtin_dtype(name: str) -> Dtype | None:
    """``dtype=int`` (numpy's int64) or ``dtype=float``."""
    if name == "int":
        return Dtype("int", _S64, "numpy")
    if name == "float":
        return Dtype("float", _FLOAT, "numpy")
    return None


def array_typecode(code: str) -> Dtype | None:
    width = _TYPECODES.get(code)
    return Dtype(repr(code), width, "array") if width else None


_STRUCT_ITEM = re.compile(r"(\d*)([xcbB?hHiIlLqQnNefdspP])")


def struct_fields(fmt: str) -> list[Dtype | None] | None:
    """What each value packed by ``struct.pack(fmt, ...)`` goes into, in order; ``None`` where
    the format is not one this reads."""
    standard = fmt[:1] in "<>!="
    body = fmt[1:] if fmt[:1] in "@<>!=" else fmt
    if _STRUCT_ITEM.sub("", body.replace(" ", "")):
        return None
    fields: list[Dtype | None] = []
    for count, code in _STRUCT_ITEM.findall(body):
        if code == "x":
            continue
        repeat = 1 if code in "sp" else int(count or 1)
        width = (_STRUCT_STANDARD.get(code) if standard else None) or _TYPECODES.get(code)
        fields.extend([Dtype(repr(code), width, "struct") if width else None] * repeat)
    return fields


NAMES = frozenset(_TORCH) | frozenset(_NUMPY) | frozenset(_TRITON) | frozenset(_CTYPES)
"""Every attribute name that is a dtype of one of the libraries."""
