"""Smaller tool schemas that say the same: what an assistant reads for every tool it is offered.

An MCP tool's input and output schemas are each one self-contained JSON Schema document (the protocol has no
place for definitions shared between tools or between a tool's two schemas), so the sharing happens inside
each document:

- a subschema that occurs more than once in a document (the campaign's workspace, a lead filter, the
  states of a list) is stored once under `$defs` and referred to with `$ref`;
- the titles pydantic derives from a property's own name ("title": "Createdat") are dropped: they repeat the
  name in worse spelling. Model titles and every description stay.

The result accepts and describes exactly the same documents (`tests/test_mcp_metadata.py` checks the
arguments of every tool against both forms).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

MIN_SHARED = 160
"""Subschemas shorter than this (as JSON) stay inline: a `$ref` would save little and read worse."""


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without derived property titles, its repeated subschemas shared through `$defs`."""
    result = copy.deepcopy(schema)
    _drop_property_titles(result)
    _share_repeats(result)
    return result


def _drop_property_titles(node: Any) -> None:
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            for name, prop in properties.items():
                if isinstance(prop, dict) and _derived_title(name, prop.get("title")):
                    del prop["title"]
        for value in node.values():
            _drop_property_titles(value)
    elif isinstance(node, list):
        for value in node:
            _drop_property_titles(value)


def _derived_title(name: str, title: Any) -> bool:
    """Pydantic's title for a field: its name with underscores as spaces, each word capitalised."""
    if not isinstance(title, str):
        return False
    simple = re.sub(r"[^a-z0-9]", "", title.lower())
    return simple == re.sub(r"[^a-z0-9]", "", name.lower())


def _share_repeats(schema: dict[str, Any]) -> None:
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    while True:
        counts: dict[str, int] = {}
        _count(schema, counts, top=True)
        repeated = [k for k, n in counts.items() if n > 1 and len(k) >= MIN_SHARED]
        if not repeated:
            break
        key = max(repeated, key=len)  # the largest first: its parts are shared with it
        value = json.loads(key)
        name = _name_for(value, defs)
        defs[name] = value
        _replace(schema, key, {"$ref": f"#/$defs/{name}"}, skip_def=name)
    if not defs:
        del schema["$defs"]


def _count(node: Any, counts: dict[str, int], *, top: bool = False) -> None:
    if isinstance(node, dict):
        if not top and "$ref" not in node:
            key = json.dumps(node, sort_keys=True)
            counts[key] = counts.get(key, 0) + 1
        for k, value in node.items():
            if k in ("properties", "$defs") and isinstance(value, dict):
                for sub in value.values():  # the maps themselves are not schemas
                    _count(sub, counts)
            elif k not in ("enum", "const", "examples", "default", "required"):
                _count(value, counts)
    elif isinstance(node, list):
        for value in node:
            _count(value, counts)


def _replace(node: Any, key: str, ref: dict[str, str], *, skip_def: str) -> Any:
    if isinstance(node, dict):
        for k, value in list(node.items()):
            if k == "$defs" and isinstance(value, dict):
                for name, sub in value.items():
                    if name != skip_def:
                        value[name] = _replaced(sub, key, ref, skip_def)
            elif k == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    value[name] = _replaced(sub, key, ref, skip_def)
            elif k not in ("enum", "const", "examples", "default", "required"):
                node[k] = _replaced(value, key, ref, skip_def)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            node[i] = _replaced(value, key, ref, skip_def)
    return node


def _replaced(node: Any, key: str, ref: dict[str, str], skip_def: str) -> Any:
    if isinstance(node, dict) and "$ref" not in node and json.dumps(node, sort_keys=True) == key:
        return dict(ref)
    return _replace(node, key, ref, skip_def=skip_def)


def _name_for(value: Any, defs: dict[str, Any]) -> str:
    base = value.get("title") if isinstance(value, dict) else None
    if not isinstance(base, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", base):
        base = "Shared"
    name, n = base, 2
    while name in defs:
        name, n = f"{base}{n}", n + 1
    return name
