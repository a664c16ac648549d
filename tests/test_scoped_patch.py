"""One mechanism patches classes while scopes are open (``data_ptr`` of tensors, Triton's
launches): set on the first scope, restored on the last, whatever ended it."""

from __future__ import annotations

import pytest

from ptrport.device.scoped_patch import ScopedPatch


class Base:
    def who(self) -> str:
        return "base"


class Own(Base):
    def who(self) -> str:
        return "own"


class Inherits(Base):
    pass


def _patched(self: object) -> str:
    return "patched"


def test_nested_scopes_patch_once_and_restore_on_the_last_exit() -> None:
    patch = ScopedPatch((Own, "who", _patched), (Inherits, "who", _patched))
    with patch.applied():
        assert Own().who() == Inherits().who() == "patched"
        with patch.applied():
            assert Own().who() == "patched"
        assert Own().who() == Inherits().who() == "patched"
    assert Own().who() == "own"
    assert Inherits().who() == "base"
    assert "who" not in Inherits.__dict__


def test_an_exception_in_the_scope_restores_the_class() -> None:
    patch = ScopedPatch((Own, "who", _patched))
    with pytest.raises(RuntimeError), patch.applied():
        assert Own().who() == "patched"
        raise RuntimeError("the check failed")
    assert Own().who() == "own"
    with patch.applied():
        assert Own().who() == "patched"
    assert Own().who() == "own"
