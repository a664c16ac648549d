# The corpus runs vLLM on a host with no GPU driver (CUDA_VISIBLE_DEVICES=""). vLLM decides at
# import time whether host buffers are pinned (``PIN_MEMORY`` in ``vllm.utils.torch_utils`` and,
# in the releases that have it, in ``vllm.v1.utils``); pinning needs the driver. Every test here
# runs as vLLM runs on a host without pinned memory: the module-level flags are cleared for the
# test, which is the engine's own fallback (plain host tensors, plain copies).

import importlib

import pytest

_PIN_MEMORY_MODULES = ("vllm.utils.torch_utils", "vllm.v1.utils")


@pytest.fixture(autouse=True)
def _host_without_pinned_memory(monkeypatch):
    for name in _PIN_MEMORY_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "PIN_MEMORY"):
            monkeypatch.setattr(module, "PIN_MEMORY", False)
