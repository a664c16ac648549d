"""Validation of JSON documents against the harness's JSON Schema files.

The schemas in ``harness/schemas/`` use a small part of JSON Schema (draft 2020-12): ``type``,
``const``, ``enum``, ``required``, ``properties``, ``additionalProperties``, ``items``,
``pattern``, ``minimum`` and local ``$ref``. This module implements exactly that part, so
reading a report needs no extra dependency on the machines the harness runs on.
"""

from __future__ import annotations

import functools
import json
import re
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


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """A schema shipped with the harness, e.g. ``report-1``."""
    text = resources.files("harness").joinpath("schemas", f"{name}.schema.json").read_text()
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
            found.append(f"{_where(path)}: {_short(value)} is not of type {' or '.join(names)}")
            return
    if "const" in schema and value != schema["const"]:
        found.append(f"{_where(path)}: {_short(value)} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(str(c) for c in schema["enum"])
        found.append(f"{_where(path)}: {_short(value)} is not one of {choices}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        found.append(f"{_where(path)}: {_short(value)} does not match {schema['pattern']}")
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        found.append(f"{_where(path)}: {value} is less than {schema['minimum']}")
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
            found.append(f"{_where(path)}: {key!r} is missing")
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key in properties:
            _check(item, properties[key], root, where, found)
        elif extra is False:
            found.append(f"{_where(path)}: {key!r} is not allowed")
        elif isinstance(extra, dict):
            _check(item, extra, root, where, found)


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
