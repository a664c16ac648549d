"""Validation of JSON documents against the harness's JSON Schema files.

The schemas in ``ptrport/report/schemas/`` use a small part of JSON Schema (draft 2020-12):
``type``, ``const``, ``enum``, ``required``, ``properties``, ``additionalProperties``, ``items``,
``pattern``, ``minimum`` and local ``$ref``. This module implements exactly that part, so
reading a report needs no extra dependency on the machines the harness runs on.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_KNOWN = {
    "$schema", "$id", "$defs", "title", "description", "type", "const", "enum", "required",
    "properties", "additionalProperties", "items", "pattern", "minimum", "$ref",
}  # fmt: skip
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,60}")
"""A key that can be named as ``.key`` in a location; any other is named ``['key']``."""
SHORT = 60
"""The most characters :func:`short` shows of a value."""


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """A schema shipped with the harness, e.g. ``report-1``."""
    text = resources.files("ptrport.report").joinpath("schemas", f"{name}.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def errors(document: Any, schema: dict[str, Any]) -> list[str]:
    """Every way ``document`` breaks ``schema``, each as ``path: problem``; empty if valid."""
    found: list[str] = []
    _check(document, schema, schema, "", found)
    return found


def _is(value: Any, type_name: str) -> bool:
    if isinstance(value, bool) and type_name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[type_name])


def _where(path: str) -> str:
    return path or "(top level)"


def _check(
    value: Any, schema: dict[str, Any], root: dict[str, Any], path: str, found: list[str]
) -> None:
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"schema keyword(s) not supported: {', '.join(sorted(unknown))}")
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        _check(value, target, root, path, found)
        return
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, n) for n in names):
            found.append(f"{_where(path)}: {short(value)} is not of type {' or '.join(names)}")
            return
    if "const" in schema and value != schema["const"]:
        found.append(f"{_where(path)}: {short(value)} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(str(c) for c in schema["enum"])
        found.append(f"{_where(path)}: {short(value)} is not one of {choices}")
    if (
        "pattern" in schema
        and isinstance(value, str)
        and not _pattern(schema["pattern"]).search(value)
    ):
        found.append(f"{_where(path)}: {short(value)} does not match {schema['pattern']}")
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        found.append(f"{_where(path)}: {short(value)} is less than {schema['minimum']}")
    if isinstance(value, dict):
        _check_object(value, schema, root, path, found)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], root, f"{path}[{i}]", found)


def _check_object(
    value: dict[str, Any], schema: dict[str, Any], root: dict[str, Any], path: str, found: list[str]
) -> None:
    for key in schema.get("required", ()):
        if key not in value:
            found.append(f"{_where(path)}: {short(key)} is missing")
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = member(path, key)
        if key in properties:
            _check(item, properties[key], root, where, found)
        elif extra is False:
            found.append(f"{_where(path)}: {short(key)} is not allowed")
        elif isinstance(extra, dict):
            _check(item, extra, root, where, found)


def member(path: str, key: str) -> str:
    """The location of ``key`` in the object at ``path``: ``path.key``, or ``path['key']`` for
    a key that is long or holds anything but letters, digits, ``_`` and ``-`` (a dot, a space,
    a line break), so that a location stays one unambiguous line."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{short(key)}]"


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` as JSON Schema means it (ECMA-262): ``$`` is the end of the string, where
    Python's ``$`` also matches before a last line break (``'lab-1\\n'`` would pass
    ``^[a-z0-9-]+$``)."""
    translated: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            translated.append(r"\Z")
            continue
        translated.append(char)
    return re.compile("".join(translated))


def short(value: Any) -> str:
    """``value`` for a one-line message: a string as Python writes it, anything else as JSON,
    cut to :data:`SHORT` characters. Only what is shown is looked at, so a value nested
    thousands deep or megabytes long costs no more than a small one, and an integer of
    thousands of digits is described rather than converted."""
    if isinstance(value, str):
        text = repr(value[: SHORT + 1])
    else:
        text = ""
        for piece in _pieces(value):
            text += piece
            if len(text) > SHORT:
                break
    return text if len(text) <= SHORT else text[: SHORT - 3] + "..."


def _pieces(value: Any) -> Iterator[str]:
    """``json.dumps(value)`` piece by piece, each string cut past what :func:`short` shows."""
    if isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ", " if i else ""
            yield json.dumps(str(key)[: SHORT + 1]) + ": "
            yield from _pieces(item)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for i, item in enumerate(value):
            yield ", " if i else ""
            yield from _pieces(item)
        yield "]"
    elif isinstance(value, str):
        yield json.dumps(value[: SHORT + 1])
    elif isinstance(value, bool) or value is None:
        yield json.dumps(value)
    elif isinstance(value, int):
        bits = value.bit_length()
        yield str(value) if bits <= 4 * SHORT else f"<{'-' if value < 0 else ''}{bits}-bit integer>"
    elif isinstance(value, float):
        yield json.dumps(value)
    else:
        yield repr(value)[: SHORT + 1]
