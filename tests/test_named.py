"""``module:attribute`` loading, shared by subject factories, probe catalogues and repro scripts:
imported from the current directory, a dotted attribute followed, each failure one line."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptrport import named
from ptrport.errors import HarnessError


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A current directory holding the module ``named_here``, importable from nowhere else."""
    (tmp_path / "named_here.py").write_text(
        "class Catalogue:\n    OPERATIONS = ('a', 'b')\n\n\nVALUE = 3\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading puts the directory on it
    importlib.invalidate_caches()
    yield tmp_path
    sys.modules.pop("named_here", None)


def test_it_imports_from_the_current_directory_and_follows_a_dotted_attribute(
    here: Path,
) -> None:
    assert named.load("named_here:VALUE", "value") == 3
    assert named.load("named_here:Catalogue.OPERATIONS", "catalogue") == ("a", "b")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (":VALUE", "thing ':VALUE' must be given as module:attribute"),
        ("named_here:", "thing 'named_here:' must be given as module:attribute"),
        ("named_here", "thing 'named_here' must be given as module:attribute"),
        (
            "no_such_module:VALUE",
            "cannot import thing 'no_such_module:VALUE': "
            "ModuleNotFoundError: No module named 'no_such_module'",
        ),
        (
            "named_here:Catalogue.GONE",
            "cannot load thing 'named_here:Catalogue.GONE': "
            "module 'named_here' has no attribute 'Catalogue.GONE'",
        ),
    ],
    ids=["no-module", "no-attribute", "no-colon", "missing-module", "missing-attribute"],
)
def test_a_spec_that_names_nothing_is_one_harness_error_line(
    here: Path, spec: str, message: str
) -> None:
    with pytest.raises(named.LoadError) as raised:
        named.load(spec, "thing")
    assert str(raised.value) == message
    assert isinstance(raised.value, HarnessError)
