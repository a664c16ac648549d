"""Hypothesis strategies for code that keeps device addresses in tensors: ptrport's public
strategy API, the same functions its scenarios use.

- :func:`addresses`: 64-bit addresses by platform shape (``user-space``, ``level-zero-usm``,
  ``arm-tagged``, ``x86-kernel``) and by boundary (``boundary``: the int32, uint32, float64
  and int64 limits, the top of the range); :func:`high_addresses`: those ``>= 2**63``.
- :func:`allocations`: allocations of real memory with guard bands on a backend, each an
  ``Allocation`` with its tensor (``.tensor``) and address (``.address``), placed where the
  strategy chooses on ``cpu-placed`` (across ``2**63``, ending at ``2**64``...).
- :func:`entries`, :func:`copy_batches`: copy requests ``(src, dst, nbytes)``, real ones between
  allocations and synthetic ones at high addresses; :func:`pointer_tables`: empty pointer
  tables (``src``, ``dst``, ``sizes``: host tensor, device mirror, numpy view).

The strategies that make real memory take the backend of the running test when given none, so
that in a test marked ``@pytest.mark.ptrport`` they draw on each backend in turn::

    @pytest.mark.ptrport
    @given(batch=ptrport.strategies.copy_batches(min_entries=1))
    def test_my_copy(ptrport_device, batch): ...

Every strategy validates its keyword-only arguments when called, raising
:class:`hypothesis.errors.InvalidArgument`; failures shrink towards the boundaries (an address
that must not fit int64 shrinks to ``2**63``), and the same seed draws the same values on every
backend but the addresses of real allocations.
"""

from ptrport.check.strategies import (
    CLASS_NAMES,
    addresses,
    allocations,
    copy_batches,
    entries,
    high_addresses,
    pointer_tables,
)

__all__ = [
    "CLASS_NAMES",
    "addresses",
    "allocations",
    "copy_batches",
    "entries",
    "high_addresses",
    "pointer_tables",
]
