# A stand-in for torchvision, used only where the real one cannot be imported.
#
# SGLang imports torchvision at module level on paths these tests go through:
# 0.5.19 in ``sglang.srt.utils.common`` (``torchvision.io.decode_jpeg``, reached by
# every ``import sglang``), and both 0.5.19 and 0.5.23 through
# ``sglang.srt.configs`` (multimodal model helpers using ``torchvision.transforms``),
# which the disaggregation modules import. The torchvision wheels on the package
# index link against CUDA torch and fail to import next to a CPU torch
# (``operator torchvision::nms does not exist``), and none of the code these tests
# run touches an image. So, where ``import torchvision`` fails, every
# ``torchvision.*`` module is served by a placeholder: any name looked up in it is
# a placeholder class whose attributes are placeholders too, and calling one
# raises. Where a working torchvision is installed, nothing changes.

import importlib.abc
import importlib.machinery
import sys
import types

import numpy as np
import pytest
import torch


class _UnavailableMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{cls.__name__}.{name}")

    def __call__(cls, *args, **kwargs):
        raise RuntimeError(f"torchvision is not installed here; {cls.__name__} is unavailable")


def _placeholder(name: str) -> type:
    return _UnavailableMeta(name, (), {})


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{self.__name__}.{name}")


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _StandInModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        module.__version__ = "0.0.0+stand-in"


def _install_stand_in() -> None:
    try:
        import torchvision.io
        import torchvision.transforms  # noqa: F401
    except Exception:
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        sys.meta_path.insert(0, _StandInFinder())


_install_stand_in()


# A stand-in for a NIXL agent, for the tests of SGLang's NIXL connector.
#
# NIXL (``nixl._api.nixl_agent``) is not installed here and needs a network backend
# to move bytes. The connector hands its agent descriptor lists and asks it to
# write; the stand-in takes exactly what NIXL's Python API takes, refuses what it
# refuses, and carries out each posted transfer by looking every descriptor up in
# the memory registered with it (the test's tensors, by their presented
# addresses) and copying tensor bytes: no address is ever dereferenced.
#
# What NIXL takes (``nixl_agent.get_xfer_descs`` / ``prep_xfer_dlist``): a list
# of (address, length, device id) tuples or an Nx3 numpy array of uint64 or int64
# (C-contiguous; the bindings copy the 64-bit words as they are, so an int64
# array carries an address's bits), together with a memory type. From NIXL 1.5
# (ai-dynamo/nixl#1978) ``prep_xfer_dlist`` also takes an Nx5 array, a
# compressed list of runs (address, length, device id, stride, count): ``count``
# blocks of ``length`` bytes, ``stride`` apart, the memory type then mandatory;
# transfer indices select blocks in the order the runs expand to (the order
# SGLang's own per-block expansion gives them too). Before 1.5 an Nx5 array
# makes ``get_xfer_descs`` return None and the bindings raise TypeError, which is
# how SGLang detects an older NIXL (``strided=False`` stands in for one).

_U64 = 1 << 64


class NixlNotFoundError(RuntimeError):
    """NIXL_ERR_NOT_FOUND: a descriptor outside every registered region."""


class _XferDList:
    """A transfer descriptor list (``nixlXferDList``): (address, length, device id)
    blocks as Python integers, exact at any address."""

    def __init__(self, mem_type: str, blocks: list[tuple[int, int, int]]):
        self.mem_type = mem_type
        self.blocks = blocks

    def __len__(self):
        return len(self.blocks)


def _words(array, width: int) -> list[list[int]]:
    if array.ndim != 2 or array.shape[1] != width:
        raise ValueError(f"descs must be a Nx{width} numpy array")
    if array.dtype not in (np.dtype(np.uint64), np.dtype(np.int64)):
        raise ValueError(f"descs must be a Nx{width} numpy array of uint64 or int64")
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError("descs must be a C-contiguous numpy array")
    return array.view(np.uint64).tolist()


class StandInNixlAgent:
    """Takes what ``nixl_agent`` takes; carries out what it is asked to write."""

    def __init__(self, registered, *, strided: bool = True):
        self.strided = strided
        self.regions = []
        for t in registered:
            assert t.is_contiguous() and t.storage_offset() == 0
            self.regions.append((t.data_ptr(), t.untyped_storage().nbytes(), t))
        self.prepped: list[str] = []  # "strided" or "per_block", per prep_xfer_dlist
        self.posted: list[tuple[str, int]] = []  # (operation, descriptors) per transfer
        self._dlists: dict[int, _XferDList] = {}
        self._xfers: dict[int, tuple[str, list]] = {}

    # -- descriptor lists --------------------------------------------------------
    def get_xfer_descs(self, descs, mem_type=None):
        if isinstance(descs, _XferDList):
            return descs
        if isinstance(descs, np.ndarray):
            if mem_type is None or descs.ndim != 2 or descs.shape[1] != 3:
                return None  # NIXL logs the misuse and returns None
            return self._checked(_XferDList(mem_type, [tuple(r) for r in _words(descs, 3)]))
        if len(descs) and isinstance(descs[0], tuple):
            if mem_type is None or len(descs[0]) != 3:
                return None
            blocks = [tuple(int(w) for w in d) for d in descs]
            if any(not 0 <= w < _U64 for d in blocks for w in d):
                raise TypeError("descriptor words must be 64-bit unsigned integers")
            return self._checked(_XferDList(mem_type, blocks))
        return None

    def prep_xfer_dlist(self, agent_name, xfer_list, mem_type=None, backends=()):
        runs = isinstance(xfer_list, np.ndarray) and xfer_list.ndim == 2
        if self.strided and runs and xfer_list.shape[1] == 5:
            if mem_type is None:
                raise ValueError("Please specify a mem type for strided descriptors")
            blocks = [
                (addr + i * stride, length, dev)
                for addr, length, dev, stride, count in _words(xfer_list, 5)
                for i in range(count)
            ]
            dlist = self._checked(_XferDList(mem_type, blocks))
            kind = "strided"
        else:
            dlist = self.get_xfer_descs(xfer_list, mem_type)
            if dlist is None:
                raise TypeError("prepXferDlist(): incompatible function arguments")
            kind = "per_block"
        self.prepped.append(kind)
        handle = len(self._dlists) + 1
        self._dlists[handle] = dlist
        return handle

    # -- transfers ----------------------------------------------------------------
    def make_prepped_xfer(
        self,
        operation,
        local,
        local_indices,
        remote,
        remote_indices,
        notif_msg=b"",
        backends=(),
        skip_desc_merge=False,
    ):
        mine, theirs = self._dlists[local].blocks, self._dlists[remote].blocks
        local_indices, remote_indices = list(local_indices), list(remote_indices)
        if len(local_indices) != len(remote_indices):
            raise ValueError("local and remote index lists differ in length")
        indices = list(zip(local_indices, remote_indices, strict=True))
        for i, j in indices:
            if not (0 <= i < len(mine) and 0 <= j < len(theirs)):
                raise IndexError(f"descriptor index {i} or {j} out of the prepped lists")
        pairs = [(mine[i], theirs[j]) for i, j in indices]
        return self._request(operation, pairs)

    def initialize_xfer(
        self, operation, local_descs, remote_descs, remote_agent, notif_msg=b"", backends=()
    ):
        if len(local_descs) != len(remote_descs):
            raise ValueError("local and remote descriptor lists differ in length")
        return self._request(
            operation, list(zip(local_descs.blocks, remote_descs.blocks, strict=True))
        )

    def transfer(self, handle, notif_msg=b""):
        operation, pairs = self._xfers[handle]
        for (l_addr, l_len, _), (r_addr, r_len, _) in pairs:
            local, remote = self._bytes(l_addr, l_len), self._bytes(r_addr, r_len)
            if operation == "WRITE":
                remote.copy_(local)
            else:
                local.copy_(remote)
        self.posted.append((operation, len(pairs)))
        return "DONE"

    def check_xfer_state(self, handle):
        return "DONE"

    def _request(self, operation, pairs):
        if operation not in ("WRITE", "READ"):
            raise ValueError(f"Invalid op code {operation!r}")
        for (_, l_len, _), (_, r_len, _) in pairs:
            if l_len != r_len:
                raise ValueError(f"descriptor lengths differ: {l_len} and {r_len}")
        handle = len(self._xfers) + 1
        self._xfers[handle] = (operation, pairs)
        return handle

    # -- registered memory --------------------------------------------------------
    def _checked(self, dlist: _XferDList) -> _XferDList:
        for addr, length, _ in dlist.blocks:
            self._region(addr, length)
        return dlist

    def _region(self, addr: int, length: int):
        for base, size, t in self.regions:
            if base <= addr and addr + length <= base + size:
                return base, t
        raise NixlNotFoundError(
            f"NIXL_ERR_NOT_FOUND: descriptor {addr:#x}+{length} lies in no registered region: "
            + ", ".join(f"[{b:#x}, {b + s:#x})" for b, s, _ in self.regions)
        )

    def _bytes(self, addr: int, length: int):
        base, t = self._region(addr, length)
        offset = addr - base
        return t.view(-1).view(torch.uint8)[offset : offset + length]


@pytest.fixture
def nixl_agent():
    """``nixl_agent(tensors, strided=True)``: a :class:`StandInNixlAgent` with ``tensors``
    registered, as NIXL 1.5 and later (``strided=False``: as an older NIXL)."""
    return StandInNixlAgent


@pytest.fixture
def cuda_stand_in():
    """ptrport's CUDA stand-in for the test's duration: ``torch.cuda`` answers as one device
    would, and tensors asked for on ``cuda`` are made on the CPU (for engine code that names
    CUDA outright)."""
    from ptrport.device.stand_in import CudaStandIn

    with CudaStandIn().installed() as stand_in:
        yield stand_in
