"""What ``ptrport lint`` reports: its rules, each with its fix; the message of each site, which
says what flows where; and one finding per site."""

from __future__ import annotations

from dataclasses import dataclass

from ptrport.addresses import to_unsigned
from ptrport.lint.dtypes import Dtype, Width
from ptrport.lint.reinterpret import Verdict, as_signed
from ptrport.lint.values import Holds, Kernel, Launch, Value, carried, origin_of


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    """One line: the site this rule finds."""
    why: str
    """What goes wrong there on a device whose addresses reach ``2**63``."""
    fix: str
    """What to write instead: ``{unsigned}`` stands for the storage's unsigned 64-bit dtype as
    its library spells it, ``{bitcast}`` for how that library makes an address's int64 bits."""


RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "signed-storage",
            "a device address stored in signed 64-bit storage (torch.int64, np.int64, 'q')",
            "Addresses at or above 2**63 (Intel GPU USM, tagged ARM64 pointers) do not fit: "
            "torch raises 'Overflow when unpacking long long', numpy and struct raise "
            "OverflowError.",
            "store it as {unsigned}, or store its int64 bits: {bitcast}",
        ),
        Rule(
            "inferred-int64",
            "torch.tensor() of device addresses with no dtype, which torch infers as int64",
            "torch infers int64 from Python ints, which overflows at 2**63.",
            "pass dtype=torch.uint64 (or build uint64 and .view(torch.int64) for int64 bits)",
        ),
        Rule(
            "narrow-storage",
            "a device address stored in 32-bit or narrower integer storage",
            "The high bits are cut off (or the store raises), so the kernel dereferences another "
            "address.",
            "keep addresses in 64-bit storage: {unsigned}",
        ),
        Rule(
            "float-storage",
            "a device address converted to floating point",
            "A double holds 53 bits: above 2**53 the low bits of the address are rounded away.",
            "keep addresses as ints: Python int, torch.uint64 or np.uint64, never float",
        ),
        Rule(
            "triton-signed-param",
            "a device address passed to a Triton kernel parameter annotated tl.int64 or narrower",
            "The launch cannot pass 2**63 or more as tl.int64 (and truncates a narrower type).",
            "annotate the parameter tl.uint64, or pass its int64 bits: "
            "p - 2**64 if p >= 2**63 else p",
        ),
        Rule(
            "mixed-sign-numpy",
            "numpy uint64 address arithmetic mixed with signed numpy integers",
            "NumPy promotes uint64 with a signed integer to float64: the low bits of the address "
            "are rounded away.",
            "make the other operand unsigned first: idx.astype(np.uint64)",
        ),
        Rule(
            "signed-compare",
            "values read back from int64 storage compared with unsigned device addresses",
            "Upper-half addresses read back negative from int64 storage and never compare equal "
            "to the address they were stored from.",
            "compare unsigned values: read back through .view(torch.uint64) / .view(np.uint64), "
            "or convert each with v & 0xFFFF_FFFF_FFFF_FFFF",
        ),
        Rule(
            "bad-bitcast",
            "a reinterpretation between an address and int64 that is wrong for some addresses",
            "The same 64 bits read as int64 are p - 2**64 for p >= 2**63 and p otherwise; any "
            "other arithmetic changes some address.",
            "int64 bits of an address: p - 2**64 if p >= 2**63 else p; "
            "the address from int64 bits: v & 0xFFFF_FFFF_FFFF_FFFF",
        ),
    )
}


WIDTH_RULES = {
    Width.SIGNED64: ("signed-storage", "values at or above 2**63 overflow"),
    Width.NARROW: ("narrow-storage", "the high bits are cut off"),
    Width.FLOAT: ("float-storage", "the low bits are rounded away above 2**53"),
}
"""The rule an address breaks in storage of each unsafe width, and what happens to it there."""
INT64_BITS = "p - 2**64 if p >= 2**63 else p"
"""An address's int64 bits in plain Python."""
_UNSIGNED = {
    "torch": "dtype=torch.uint64",
    "numpy": "dtype=np.uint64",
    "triton": "tl.uint64",
    "ctypes": "ctypes.c_uint64",
    "array": "typecode 'Q'",
    "struct": "format 'Q'",
    "cutlass": "cutlass.Uint64",
    "tvm_ffi": "a torch.uint64 tensor (a tvm_ffi.Shape holds int64)",
}
_BITCASTS = {
    "torch": "tensor(..., dtype=torch.uint64).view(torch.int64)",
    "numpy": "np.array(..., dtype=np.uint64).view(np.int64)",
}
_CARRIED: dict[Holds | None, str] = {
    Holds.BITS: "the int64 bits of an address",
    Holds.READ_BACK: "ints read back from int64 storage",
}


def unsigned(library: str) -> str:
    """Unsigned 64-bit storage as ``library`` spells it (torch's for a library with none)."""
    return _UNSIGNED.get(library, "dtype=torch.uint64")


def fix_for(rule: str, dtype: Dtype | None) -> str:
    """The fix of ``rule`` that fits the storage at hand (torch's where none is known)."""
    library = dtype.library if dtype else "torch"
    bitcast = _BITCASTS.get(library, INT64_BITS)
    return RULES[rule].fix.format(unsigned=unsigned(library), bitcast=bitcast)


def remade(storage: str | None, library: str, made: str, *, or_bits: bool) -> str:
    """The fix of a store into signed or narrow storage: make ``storage`` (``None``: the
    tensor that a NumPy view views) unsigned where it is made, or (``or_bits``) store the
    address's int64 bits."""
    named = f"`{storage}`" if storage is not None else "the tensor it views"
    at = f" (at {made})" if made else ""
    fix = f"create {named} with {unsigned(library)}{at}"
    return f"{fix}, or store the int64 bits: {INT64_BITS}" if or_bits else fix


# The message of each site: what flows where, and what happens to it there.


def _what(holds: Holds | None, origin: str) -> str:
    """How a message names what flows: "an address from `t.data_ptr()` (line 12)"."""
    what = _CARRIED.get(holds, "an address")
    return f"{what} from {origin}" if origin else what


def _carried(value: Value) -> str:
    """How a message names what ``value`` carries, itself or in its elements."""
    return _what(carried(value), origin_of(value))


def _lost(value: Value, how: str, width: Width) -> str:
    """``value`` put into a number of ``width`` (``how``), and what that does to it."""
    return f"{_carried(value)} {how}: {WIDTH_RULES[width][1]}"


def stored(value: Value, storage: str, dtype: Dtype, made: str) -> str:
    """``value`` written into typed storage that the code names ``storage``."""
    made_at = f", made at {made}" if made else ""
    return _lost(value, f"is stored in `{storage}` ({dtype.name}{made_at})", dtype.width)


def put_in(data: Value, call: str, dtype: Dtype) -> str:
    """Storage of ``dtype`` made from ``data`` by ``call``."""
    return _lost(data, f"is put in `{call}(...)` as {dtype.name}", dtype.width)


def packed(value: Value, dtype: Dtype) -> str:
    """``value`` packed by ``struct.pack`` into a field of ``dtype``."""
    return _lost(value, f"is packed by `struct.pack` as {dtype.name}", dtype.width)


def converted(value: Value, conversion: str, width: Width) -> str:
    """``value`` converted by ``conversion`` (``float()``) to a number of ``width``."""
    return _lost(value, f"is converted by `{conversion}`", width)


def inferred(data: Value, call: str) -> str:
    """Storage made from ``data`` by ``call`` with no dtype, which torch infers."""
    return (
        f"{_carried(data)} is put in `{call}(...)` with no dtype: torch infers torch.int64, "
        "which overflows at 2**63"
    )


def reinterpreted(expression: str, operand: Value, verdict: Verdict, *, signed_input: bool) -> str:
    """``expression`` reading ``operand`` wrongly, shown at the sample where it goes astray."""
    sample, got = verdict.sample, verdict.got
    if signed_input:
        wanted = f"{to_unsigned(sample):#x} (or {sample} unchanged)"
    else:
        wanted = f"its int64 bits {as_signed(sample)} (or {sample:#x} unchanged)"
    given = sample if signed_input else hex(sample)
    return (
        f"`{expression}` reinterprets {_carried(operand)} wrongly: for {given} it gives {got}, "
        f"not {wanted}"
    )


def mixed_sign(address: Value, address_dtype: Dtype, signed_dtype: Dtype, expression: str) -> str:
    """NumPy arithmetic on an unsigned address and a signed operand."""
    return (
        f"{_carried(address)} ({address_dtype.name}) meets a signed {signed_dtype.name} value in "
        f"`{expression}`: NumPy promotes the result to float64, rounding the address"
    )


def compared(signed_side: Value, unsigned_side: Value) -> str:
    """Values read back from int64 storage compared with addresses."""
    return (
        f"{_carried(signed_side)} are compared with {_carried(unsigned_side)}: an upper-half "
        "address reads back negative and never matches"
    )


def signed_parameters(passed: list[tuple[Value, str, str]], callee: str, why: str) -> str:
    """Addresses passed to native parameters that C++ takes as ``int64_t``: each (value,
    parameter, its type in the schema) of one call of ``callee``; ``why`` they are signed."""
    named = []
    for value, parameter, kind in passed:
        where = parameter if parameter.startswith("argument ") else f"`{parameter}`"
        named.append(f"{_carried(value)} is passed to {where}" + (f" ({kind})" if kind else ""))
    return f"{'; '.join(named)} of `{callee}` ({why}): values at or above 2**63 raise"


SIGNED_BY_SCHEMA = "int in its schema: an int64_t"
SIGNED_TORCH_OPS = "a torch.ops int is an int64_t; the tree defines no schema for it"
SIGNED_LIBRARY = "an int64_t parameter"
SIGNED_PARAMETER_FIX = (
    f"pass its int64 bits: {INT64_BITS} (the same 64 bits, which C++ casts back to the "
    "pointer), or pass the addresses as a torch.uint64 tensor"
)


def unsigned_undone(expression: str, signed: Dtype, asked: Dtype) -> str:
    """A patch that gives ``signed`` storage where the code it wraps asks for ``asked``."""
    return (
        f"`{expression}` gives {signed.name} where the code asks for {asked.name}: the "
        "addresses that storage is made for overflow at 2**63"
    )


def unsigned_kept(asked: Dtype) -> str:
    """The fix of a patch that undoes unsigned storage."""
    return (
        f"keep {asked.name}; where an operation lacks it, view that storage as int64 for "
        "that operation only (the same bits)"
    )


def passed(launch: Launch, parameter: str, kernel: Kernel, kernel_path: str, dtype: Dtype) -> str:
    """A launch passing an address to a kernel parameter annotated ``dtype``."""
    consequence = (
        "values at or above 2**63 overflow" if dtype.width is Width.SIGNED64 else "truncated"
    )
    return (
        f"{_what(launch.holds, launch.origin)} is passed to `{parameter}` of Triton kernel "
        f"`{kernel.name}` ({kernel_path}:{kernel.line}), annotated {dtype.name}: {consequence}"
    )


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    column: int
    """1-based, in characters."""
    end_line: int
    end_column: int
    """1-based, one past the last character."""
    rule: str
    message: str
    """What flows where."""
    fix: str
    suppressed: str | None = None
    """The reason given by a ``# ptrport: ignore[rule]`` comment, for an accepted site."""

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.rule)
