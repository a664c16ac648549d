"""uint64 operations: each torch operation that pointer code uses, run on the backend with
uint64 tensors holding addresses at and above ``2**63``. An operation that works passes; one
the platform lacks (it raises) is skipped with ``raises <Type>: <first line>``; one that gives a
silently wrong result fails with what was expected and what came back, in hex.

The catalogue is :data:`ptrport.check.probe.OPERATIONS`; ``ptrport probe`` records the same results
without pytest, and with ``--compile`` adds the operations under ``torch.compile``."""

from __future__ import annotations

import pytest

from ptrport.check import probe
from ptrport.device.backends import Backend
from ptrport.report.op_support import OperationVerdict

pytestmark = pytest.mark.ptrport_scenario

OPERATION_IDS = [op.id for op in probe.OPERATIONS]


@pytest.mark.parametrize("operation", OPERATION_IDS, ids=OPERATION_IDS)
def test_operation(backend: Backend, operation: str) -> None:
    found = probe.check_operation(backend, operation)
    if found.verdict is OperationVerdict.RAISES:
        pytest.skip(found.message or "raises")
