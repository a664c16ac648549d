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
