"""A user's own tests marked ``@pytest.mark.ptrport``: what the ``ptrport_device`` fixture
gives each of them, on the backend it runs on."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from hypothesis import currently_in_test_context
from hypothesis.control import cleanup

from ptrport.device import presentation
from ptrport.device.backends import Backend


@dataclass(frozen=True)
class PtrportDevice:
    """The backend a marked test runs on, and what it may do there."""

    backend: Backend

    @property
    def device(self) -> torch.device:
        """Where to allocate: ``cpu`` on the CPU backends, ``cuda:0``, ``xpu:0``..."""
        return self.backend.device

    @property
    def name(self) -> str:
        """The backend's name: ``cpu``, ``cpu-usm``, ``cpu-tbi``, ``cpu-placed``, ``cuda``..."""
        return self.backend.name

    @property
    def kind(self) -> str:
        """What it runs on: ``cpu``, ``gpu`` or ``other``."""
        return self.backend.kind

    @property
    def presented(self) -> bool:
        """Whether addresses here are presented where a device would hand them out
        (``cpu-usm``, ``cpu-tbi``, ``cpu-placed``), not the CPU's own."""
        return self.backend.simulated is not None

    @property
    def can_pin(self) -> bool:
        """Whether host memory can be pinned for transfers to :attr:`device`."""
        return self.backend.can_pin

    def place(self, tensor: torch.Tensor, *, at: int) -> None:
        """Present ``tensor`` at exactly ``at`` for the rest of the test (of the Hypothesis
        example, in one): ``tensor.data_ptr() == at`` afterwards, the rest of its storage
        around it, and kernels run there on real memory. ``at`` keeps the tensor's real
        address modulo 64 (any multiple of 64 for a tensor torch allocated), and the storage
        must fit below ``2**64`` clear of memory placed before: otherwise
        :class:`~ptrport.device.presentation.PlacementError`. Where memory cannot be placed
        (a GPU's), the test is skipped with the reason."""
        memory = presentation.active()
        if self.backend.device.type != "cpu" or memory is None:
            pytest.skip(
                f"cannot place memory on {self.name}: only CPU memory is placed (cpu, cpu-usm, "
                "cpu-tbi, cpu-placed)"
            )
        memory.place(tensor, at)
        if currently_in_test_context():
            cleanup(lambda: memory.release(tensor))

    def __repr__(self) -> str:
        return f"<ptrport_device {self.name}>"
