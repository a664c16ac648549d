"""pytest's configuration, found again when our option's value misled it.

pytest looks for its configuration file (and so its ``rootdir`` and ``testpaths``) before it
loads plugins, so it does not know our options yet: in ``pytest --report-dir /abs/out`` it
takes ``/abs/out`` for a path to test, looks for a configuration above it, finds none, and
would collect the whole invocation directory. Once our options are known, the same lookup is
made without the values they took; where it finds another configuration, the run uses that one,
as it would have with ``--report-dir=/abs/out``.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

APPLIED_BEFORE_PLUGINS = ("addopts", "pythonpath", "required_plugins", "minversion")
"""Settings pytest applies before plugins load, which a configuration found later cannot get."""


def relocate_if_misled(config: pytest.Config, args: list[str], option: str) -> None:
    """Find pytest's configuration again without the values ``option`` took as separate
    arguments, and use it if it differs from the one pytest found."""
    values = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == option]
    if not values:
        return
    namespace = config.known_args_namespace
    found = _determine_setup(namespace, config)
    if found is None:
        raise pytest.UsageError(_write_it_joined(option, values[0]))
    rootpath, inipath, inicfg = found
    if rootpath == config.rootpath and inipath == config.inipath:
        return
    if any(key in inicfg for key in APPLIED_BEFORE_PLUGINS) or not _replace(
        config, rootpath, inipath, inicfg
    ):
        raise pytest.UsageError(_write_it_joined(option, values[0]))
    if not any(arg.startswith("--confcutdir") for arg in args):
        namespace.confcutdir = str(inipath.parent if inipath is not None else rootpath)


def _write_it_joined(option: str, value: str) -> str:
    return (
        f"{option} {value}: pytest took {value} for a path to test when it looked for its "
        f"configuration; write {option}={value}"
    )


def _determine_setup(namespace: Any, config: pytest.Config) -> tuple[Any, Any, Any] | None:
    """``determine_setup`` as pytest called it, with the arguments as they are now parsed."""
    offered = {
        "inifile": namespace.inifilename,
        "override_ini": namespace.override_ini,
        "args": namespace.file_or_dir,
        "rootdir_cmd_arg": namespace.rootdir or None,
        "invocation_dir": config.invocation_params.dir,
    }
    try:
        from _pytest.config.findpaths import determine_setup
    except ImportError:
        return None
    try:
        accepted = inspect.signature(determine_setup).parameters
        found = determine_setup(**{k: v for k, v in offered.items() if k in accepted})
    except (TypeError, ValueError):
        return None
    rootpath, inipath, inicfg = found[:3]
    return rootpath, inipath, inicfg


def _replace(config: pytest.Config, rootpath: Any, inipath: Any, inicfg: Any) -> bool:
    """Put the configuration found into ``config``; ``False`` if this pytest keeps it where
    we do not know."""
    where = next((name for name in ("_inicfg", "inicfg") if hasattr(config, name)), None)
    cache = getattr(config, "_inicache", None)
    if where is None or cache is None or not hasattr(config, "_rootpath"):
        return False
    config._rootpath = rootpath
    config._inipath = inipath
    setattr(config, where, inicfg)
    cache.clear()
    extra_info = getattr(config._parser, "extra_info", None)
    if isinstance(extra_info, dict):
        extra_info["rootdir"] = str(rootpath)
        extra_info["inifile"] = str(inipath)
    return True
