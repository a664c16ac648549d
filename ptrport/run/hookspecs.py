"""The hooks ptrport calls in a user's conftest or plugin (registered by the plugin's entry
module, so it is as light: pytest alone)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(historic=True)
def pytest_ptrport_stand_in(stand_in: Any, config: pytest.Config) -> None:
    """Called once the stand-in of ``--ptrport-stand-in`` is installed, before any test module
    is imported (and for a conftest found later, when it is loaded): stand in for an engine's
    own helpers that ask the real device, with ``stand_in.replace(owner, name, value)``, which
    the run undoes when it ends. ``stand_in`` is a
    :class:`ptrport.device.stand_in.CudaStandIn`."""
