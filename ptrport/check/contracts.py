"""Subject contracts: what a subject declares about the columns of its table, so that the
scenarios draw only what it holds by design.

An inference engine's ``sizes`` column may be ``int32`` on purpose (its copies are far below
2 GiB), and its addresses may always be aligned (tensor slices of 8-byte elements). A subject
says so with a ``contract`` attribute, a :class:`Contract` or a mapping with the same keys::

    contract = {"max_nbytes": 2**31 - 1, "alignment": 8}

Then every size a check stages is at most ``max_nbytes`` and every address (synthetic, and the
real ones of its copies) a multiple of ``alignment``. Undeclared means the full range: sizes up
to ``2**63 - 1``, any address. Reports show a declared contract beside the subject.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ptrport.addresses import INT64_MAX
from ptrport.errors import HarnessError

MAX_ALIGNMENT = 64
"""The largest alignment a contract may declare: every allocation the harness makes starts on
a 64-byte boundary (torch's CPU allocator; GPU allocators align more), so real copies can keep
to it."""


class ContractError(HarnessError):
    """A contract that cannot be honoured or read, with a one-line reason."""


@dataclass(frozen=True)
class Contract:
    """The largest ``nbytes`` a subject's sizes column holds, and the alignment its addresses
    always have."""

    max_nbytes: int = INT64_MAX
    alignment: int = 1

    def __post_init__(self) -> None:
        for name in ("max_nbytes", "alignment"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ContractError(f"contract {name}={value!r} is not an int")
        if not 0 <= self.max_nbytes <= INT64_MAX:
            raise ContractError(f"contract max_nbytes={self.max_nbytes} is not in [0, 2**63 - 1]")
        a = self.alignment
        if a < 1 or a & (a - 1) or a > MAX_ALIGNMENT:
            raise ContractError(
                f"contract alignment={a} is not a power of two from 1 to {MAX_ALIGNMENT}"
            )

    @property
    def declared(self) -> bool:
        """Whether it narrows anything (the default is the full range)."""
        return self != FULL_RANGE

    def to_record(self) -> dict[str, int]:
        return {"max_nbytes": self.max_nbytes, "alignment": self.alignment}

    def __str__(self) -> str:
        parts = []
        if self.max_nbytes != INT64_MAX:
            parts.append(f"nbytes <= {self.max_nbytes:#x}")
        if self.alignment != 1:
            parts.append(f"addresses aligned to {self.alignment}")
        return ", ".join(parts) or "full range"


FULL_RANGE = Contract()


def contract_from(value: object) -> Contract:
    """A subject's ``contract`` attribute as a :class:`Contract` (``None``: the full range)."""
    if value is None:
        return FULL_RANGE
    if isinstance(value, Contract):
        return value
    if not isinstance(value, Mapping):
        raise ContractError(
            f"contract is {value!r}: give a ptrport.check.contracts.Contract or a mapping with "
            "max_nbytes and alignment"
        )
    known = {f.name for f in fields(Contract)}
    unknown = sorted(str(k) for k in value if k not in known)
    if unknown:
        raise ContractError(
            f"contract has unknown keys {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    arguments: dict[str, Any] = dict(value)
    return Contract(**arguments)
