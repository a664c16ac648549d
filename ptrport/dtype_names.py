"""torch dtypes as records name them (``float16``, ``uint64``): written where allocations are
recorded, which knows torch, and where examples are described, which must not import it."""

from __future__ import annotations

import sys


def dtype_name(dtype: object) -> str:
    """How records name a torch dtype: ``torch.float16`` as ``float16``."""
    return str(dtype).removeprefix("torch.")


def is_dtype(value: object) -> bool:
    """Whether ``value`` is a torch dtype, without importing torch: a dtype exists only where
    torch is loaded already."""
    loaded = sys.modules.get("torch")
    return loaded is not None and isinstance(value, loaded.dtype)
