"""Which storage can hold an address: the dtypes of torch, numpy, Triton, ctypes, ``array`` and
``struct``, each sorted by whether it keeps every value in ``[0, 2**64)``."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace


class Width(enum.Enum):
    """What a dtype does to an address."""

    UNSIGNED64 = "holds every address"
    SIGNED64 = "overflows at 2**63"
    NARROW = "truncates it"
    FLOAT = "rounds it"
    OTHER = "is not an integer"


_KINDS = {
    "uint64": Width.UNSIGNED64,
    "int64": Width.SIGNED64,
    **dict.fromkeys(("int32", "int16", "int8", "uint32", "uint16", "uint8"), Width.NARROW),
    **dict.fromkeys(("float64", "float32", "float16", "bfloat16", "longdouble"), Width.FLOAT),
}
"""What each kind of number does to an address; a kind is numpy's name for it."""


@dataclass(frozen=True)
class Dtype:
    name: str
    """As code writes it: ``torch.int64``, ``np.uint64``, ``'q'``."""
    kind: str
    """The number it stores, whatever the spelling: ``int64`` for ``torch.long``, ``'q'`` and
    ``ctypes.c_longlong``; empty for what is no number (bytes, a dtype left to inference)."""
    library: str
    """``torch``, ``numpy``, ``triton``, ``ctypes``, ``array`` or ``struct``."""

    @property
    def width(self) -> Width:
        return _KINDS.get(self.kind, Width.OTHER)

    @property
    def unsafe(self) -> bool:
        return self.width in (Width.SIGNED64, Width.NARROW, Width.FLOAT)

    @property
    def signed_integer(self) -> bool:
        return self.kind.startswith("int")


def _same(*kinds: str) -> dict[str, str]:
    return {kind: kind for kind in kinds}


_INTEGERS = ("uint64", "int64", "int32", "int16", "int8", "uint32", "uint16", "uint8")
_TORCH = {
    **_same(*_INTEGERS, "float64", "float32", "float16", "bfloat16"),
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "double": "float64",
    "float": "float32",
    "half": "float16",
}
_NUMPY = {
    **_same(*_INTEGERS, "float64", "float32", "float16", "longdouble"),
    **dict.fromkeys(("uintp", "ulonglong", "ulong", "uint"), "uint64"),
    **dict.fromkeys(("intp", "int_", "longlong", "long"), "int64"),
    "intc": "int32",
    "uintc": "uint32",
    "short": "int16",
    "ushort": "uint16",
    "byte": "int8",
    "ubyte": "uint8",
    "double": "float64",
    "float_": "float64",
    "single": "float32",
    "half": "float16",
}
_TRITON = _same(*_INTEGERS, "float64", "float32", "float16", "bfloat16")
_CTYPES = {
    **dict.fromkeys(("c_uint64", "c_ulonglong", "c_size_t", "c_void_p", "c_ulong"), "uint64"),
    **dict.fromkeys(("c_int64", "c_longlong", "c_ssize_t", "c_long"), "int64"),
    **dict.fromkeys(("c_int32", "c_int"), "int32"),
    **dict.fromkeys(("c_uint32", "c_uint"), "uint32"),
    **dict.fromkeys(("c_int16", "c_short"), "int16"),
    **dict.fromkeys(("c_uint16", "c_ushort"), "uint16"),
    **dict.fromkeys(("c_int8", "c_byte"), "int8"),
    **dict.fromkeys(("c_uint8", "c_ubyte"), "uint8"),
    "c_float": "float32",
    "c_double": "float64",
    "c_longdouble": "longdouble",
}
_NUMPY_STRINGS = {
    **dict.fromkeys(("uint64", "u8", "<u8", "=u8", "Q", "uint", "uintp"), "uint64"),
    **dict.fromkeys(("int64", "i8", "<i8", "=i8", "q", "int", "long", "intp", "int_"), "int64"),
    **dict.fromkeys(("int32", "i4", "<i4"), "int32"),
    **dict.fromkeys(("uint32", "u4", "<u4"), "uint32"),
    **dict.fromkeys(("int16", "i2"), "int16"),
    **dict.fromkeys(("int8", "i1"), "int8"),
    **dict.fromkeys(("uint8", "u1"), "uint8"),
    **dict.fromkeys(("float64", "f8", "<f8", "float", "double"), "float64"),
    **dict.fromkeys(("float32", "f4", "<f4"), "float32"),
    **dict.fromkeys(("float16", "f2"), "float16"),
}
# array.array typecodes and struct format characters, on a 64-bit Linux or macOS build.
_TYPECODES = {
    **dict.fromkeys("QLNP", "uint64"),
    **dict.fromkeys("qln", "int64"),
    **{"i": "int32", "I": "uint32", "h": "int16", "H": "uint16", "b": "int8", "B": "uint8"},
    **{"e": "float16", "f": "float32", "d": "float64"},
}
_STRUCT_STANDARD = {"l": "int32", "L": "uint32"}
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
    kind = table.get(attribute)
    return Dtype(f"{prefix}{attribute}", kind, library) if kind else None


def in_library(dtype: Dtype | None, library: str) -> Dtype | None:
    """The same dtype, seen from ``library`` (a torch tensor's ``.numpy()``)."""
    if dtype is None or dtype.library == library or library not in ("torch", "numpy"):
        return dtype
    if dtype.library not in ("torch", "numpy"):
        return dtype
    return library_dtype(library, dtype.kind) or replace(dtype, library=library)


def numpy_string(text: str) -> Dtype | None:
    """A dtype written as a string, ``dtype="int64"``: numpy's spelling (torch takes none)."""
    kind = _NUMPY_STRINGS.get(text)
    return Dtype(repr(text), kind, "numpy") if kind else None


def builtin_dtype(name: str) -> Dtype | None:
    """``dtype=int`` (numpy's int64) or ``dtype=float``."""
    if name == "int":
        return Dtype("int", "int64", "numpy")
    if name == "float":
        return Dtype("float", "float64", "numpy")
    return None


def array_typecode(code: str) -> Dtype | None:
    kind = _TYPECODES.get(code)
    return Dtype(repr(code), kind, "array") if kind else None


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
        kind = (_STRUCT_STANDARD.get(code) if standard else None) or _TYPECODES.get(code)
        fields.extend([Dtype(repr(code), kind, "struct") if kind else None] * repeat)
    return fields


NAMES = frozenset(_TORCH) | frozenset(_NUMPY) | frozenset(_TRITON) | frozenset(_CTYPES)
"""Every attribute name that is a dtype of one of the libraries."""
