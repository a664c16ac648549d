"""The porting guide's error table against the installed torch: the messages it lists for an
address of ``2**63`` or more handed to a signed 64-bit parameter are the ones torch raises, and
the fix it gives (the ``int64`` bits) goes through."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "porting.md"


def _guide_messages() -> list[str]:
    """The first cell of each row of the guide's error table, without its backquotes."""
    rows = re.findall(r"^\| `([^`]+)` \|", GUIDE.read_text(encoding="utf-8"), re.MULTILINE)
    assert rows, "the porting guide has no error table"
    return rows


@pytest.fixture
def op_with_an_int_parameter() -> Iterator[object]:
    """An op whose schema gives its parameter ``p`` the type ``int``, as an engine's compiled
    ops take addresses; it returns what it got."""
    library = torch.library.Library("ptrport_porting_guide", "DEF")
    library.define("echo(int p) -> int")
    library.impl("echo", lambda p: p, "CompositeExplicitAutograd")
    yield torch.ops.ptrport_porting_guide.echo
    library._destroy()


@pytest.mark.parametrize("address", [2**63, 2**64 - 1, 0xFFFF_85AB_D4E0_0000])
def test_a_torch_op_refuses_an_upper_half_address_with_the_guides_message_and_takes_its_bits(
    op_with_an_int_parameter: object, address: int
) -> None:
    op = op_with_an_int_parameter
    with pytest.raises(RuntimeError) as raised:
        op(address)  # type: ignore[operator]
    first = str(raised.value).splitlines()[0]
    listed = [m for m in _guide_messages() if m.startswith("RuntimeError: ns::op()")]
    assert len(listed) == 1
    pattern = re.escape(listed[0].removeprefix("RuntimeError: ")).replace("ns::op", r"\w+::\w+")
    assert re.fullmatch(pattern, first), first
    bits = address - 2**64
    assert op(bits) == bits  # type: ignore[operator]
    assert op(2**63 - 1) == 2**63 - 1  # type: ignore[operator]


def test_constructing_a_storage_from_an_upper_half_address_is_refused_as_the_guide_says() -> None:
    listed = [m for m in _guide_messages() if "_construct_storage_from_data_pointer" in m]
    assert len(listed) == 1
    with pytest.raises(TypeError) as raised:
        # Refused before any storage is made: nothing is read at the address.
        torch._C._construct_storage_from_data_pointer(2**63, torch.device("cpu"), 16)
    assert str(raised.value).startswith(listed[0].removeprefix("TypeError: "))
