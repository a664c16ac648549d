"""Subject contracts: what they accept, the one-line refusals, and a subject with an ``int32``
sizes column that fails undeclared and passes once it declares what it holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ptrport.addresses import INT64_MAX
from ptrport.check.contracts import FULL_RANGE, Contract, ContractError, contract_from
from ptrport.check.subjects import builtin_subjects
from ptrport.check.user_subjects import SubjectError, UserSubject
from tests.scenario_runs import copy_scenarios, use_profile


def test_undeclared_is_the_full_range() -> None:
    assert contract_from(None) == FULL_RANGE == Contract()
    assert (FULL_RANGE.max_nbytes, FULL_RANGE.alignment) == (INT64_MAX, 1)
    assert not FULL_RANGE.declared
    assert str(FULL_RANGE) == "full range"
    assert all(s.contract == FULL_RANGE for s in builtin_subjects().values())


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"max_nbytes": 2**31 - 1}, Contract(max_nbytes=2**31 - 1)),
        ({"alignment": 8}, Contract(alignment=8)),
        ({"max_nbytes": 0, "alignment": 64}, Contract(max_nbytes=0, alignment=64)),
        (Contract(alignment=2), Contract(alignment=2)),
    ],
    ids=str,
)
def test_a_contract_is_given_as_a_mapping_or_a_contract(given: object, expected: Contract) -> None:
    found = contract_from(given)
    assert found == expected and found.declared
    assert Contract(**found.to_record()) == found


def test_a_declared_contract_reads_as_what_it_narrows() -> None:
    assert str(Contract(max_nbytes=2**31 - 1)) == "nbytes <= 0x7fffffff"
    both = Contract(max_nbytes=255, alignment=8)
    assert str(both) == "nbytes <= 0xff, addresses aligned to 8"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"alignment": 3}, "contract alignment=3 is not a power of two from 1 to 64"),
        ({"alignment": 128}, "contract alignment=128 is not a power of two from 1 to 64"),
        ({"alignment": 0}, "contract alignment=0 is not a power of two from 1 to 64"),
        ({"alignment": True}, "contract alignment=True is not an int"),
        ({"max_nbytes": -1}, r"contract max_nbytes=-1 is not in \[0, 2\*\*63 - 1\]"),
        ({"max_nbytes": 2**63}, r"contract max_nbytes=9223372036854775808 is not in"),
        ({"max_nbytes": "2GiB"}, "contract max_nbytes='2GiB' is not an int"),
        ({"max_bytes": 1}, "contract has unknown keys max_bytes; known: alignment, max_nbytes"),
        ([2**31 - 1], r"contract is \[2147483647\]: give a ptrport.check.contracts.Contract"),
    ],
    ids=str,
)
def test_a_contract_that_cannot_be_honoured_is_refused_in_one_line(
    given: Any, message: str
) -> None:
    with pytest.raises(ContractError, match=message) as raised:
        contract_from(given)
    assert "\n" not in str(raised.value)


class _Rows:
    name = "rows"

    def __init__(self, contract: object) -> None:
        self.contract = contract

    def create(self, capacity: int, backend: object) -> None: ...

    def stage(self, batch: object) -> None: ...

    def transfer(self, n: int) -> None: ...

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        return []


def test_a_users_subject_carries_its_contract_and_a_bad_one_is_a_protocol_error() -> None:
    assert UserSubject(_Rows({"max_nbytes": 100}), "m:f").contract == Contract(max_nbytes=100)
    assert UserSubject(_Rows(None), "m:f").contract == FULL_RANGE
    with pytest.raises(SubjectError, match="does not fit the protocol: contract alignment=5"):
        UserSubject(_Rows({"alignment": 5}), "m:f")


INT32_SIZES = """
import torch


class Int32Sizes:
    '''Pointers in uint64, sizes in int32 numpy views; {contract}'''

    def __init__(self, contract):
        self.name = "int32-sizes-of-mine"
        if contract is not None:
            self.contract = contract

    def create(self, capacity, backend):
        self.src = torch.zeros(capacity, dtype=torch.uint64)
        self.dst = torch.zeros(capacity, dtype=torch.uint64)
        self.sizes = torch.zeros(capacity, dtype=torch.int32)
        self.offset = 0

    def stage(self, batch):
        views = self.src.numpy(), self.dst.numpy(), self.sizes.numpy()
        for entry in batch.entries:
            views[0][self.offset] = entry.src
            views[1][self.offset] = entry.dst
            views[2][self.offset] = entry.nbytes
            self.offset += 1

    def transfer(self, n):
        pass

    def read_back(self, n):
        columns = (self.src[:n].tolist(), self.dst[:n].tolist(), self.sizes[:n].tolist())
        return list(zip(*columns))


def undeclared():
    return Int32Sizes(None)


def declared():
    return Int32Sizes({"max_nbytes": 2**31 - 1, "alignment": 8})
"""


def test_an_int32_sizes_column_fails_undeclared_and_passes_once_declared(
    pytester: pytest.Pytester,
) -> None:
    use_profile(pytester)
    pytester.makepyfile(my_subjects=INT32_SIZES)
    copy_scenarios(pytester, "test_table_round_trip", "test_buffer_creation")
    common = ["--backend=cpu-usm", "--no-isolate", "--platform-name=plat"]
    undeclared = pytester.runpytest(*common, "--subject=my_subjects:undeclared")
    undeclared.assert_outcomes(failed=3, passed=0, skipped=3)
    undeclared.stdout.fnmatch_lines(["*OverflowError*"])

    declared = pytester.runpytest(*common, "--subject=my_subjects:declared")
    declared.assert_outcomes(passed=3, skipped=3)
    declared.stdout.fnmatch_lines(
        ["ptrport: int32-sizes-of-mine declares nbytes <= 0x7fffffff, addresses aligned to 8"]
    )
    report = json.loads((pytester.path / "reports" / "plat.json").read_text())
    assert report["run"]["contracts"] == {
        "int32-sizes-of-mine": {"max_nbytes": 2**31 - 1, "alignment": 8}
    }
