"""What ``ptrport lint`` reports: its rules, and one finding per site."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    """One line: the site this rule finds."""
    why: str
    """What goes wrong there on a device whose addresses reach ``2**63``."""


RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "signed-storage",
            "a device address stored in signed 64-bit storage (torch.int64, np.int64, 'q')",
            "Addresses at or above 2**63 (Intel GPU USM, tagged ARM64 pointers) do not fit: "
            "torch raises 'Overflow when unpacking long', numpy and struct raise OverflowError.",
        ),
        Rule(
            "inferred-int64",
            "torch.tensor() of device addresses with no dtype, which torch infers as int64",
            "torch infers int64 from Python ints, which overflows at 2**63.",
        ),
        Rule(
            "narrow-storage",
            "a device address stored in 32-bit or narrower integer storage",
            "The high bits are cut off (or the store raises), so the kernel dereferences another "
            "address.",
        ),
        Rule(
            "float-storage",
            "a device address converted to floating point",
            "A double holds 53 bits: above 2**53 the low bits of the address are rounded away.",
        ),
        Rule(
            "triton-signed-param",
            "a device address passed to a Triton kernel parameter annotated tl.int64 or narrower",
            "The launch cannot pass 2**63 or more as tl.int64 (and truncates a narrower type).",
        ),
        Rule(
            "mixed-sign-numpy",
            "numpy uint64 address arithmetic mixed with signed numpy integers",
            "NumPy promotes uint64 with a signed integer to float64: the low bits of the address "
            "are rounded away.",
        ),
        Rule(
            "signed-compare",
            "values read back from int64 storage compared with unsigned device addresses",
            "Upper-half addresses read back negative from int64 storage and never compare equal "
            "to the address they were stored from.",
        ),
        Rule(
            "bad-bitcast",
            "a reinterpretation between an address and int64 that is wrong for some addresses",
            "The same 64 bits read as int64 are p - 2**64 for p >= 2**63 and p otherwise; any "
            "other arithmetic changes some address.",
        ),
    )
}


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
