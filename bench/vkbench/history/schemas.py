"""The JSON files the history keeps (and the reports that feed them), checked against their JSON
Schemas in ``vkbench/schema/`` (shipped in the wheel beside the result schema).

:func:`check` validates with Draft 2020-12 and raises a :class:`ResultFileError` (exit 7) naming
the file and the JSON path of the problem the way readers look for it (``incidents/0/status``,
``confirmations/<id>/ab``), instead of a KeyError or TypeError deep in a renderer.

Two choices of the validator the schemas rely on:

- ``number`` is a *finite* number: Python's json module reads ``NaN`` and ``Infinity``, which no
  JSON writer should produce and no reader can format; ``integer`` is an int, never ``1.0`` or
  ``true``.
- a pattern's final ``$`` is the end of the text as in ECMA-262 (Python's ``$`` also matches
  before a trailing newline, which would let ``"<sha>\\n"`` through).

Semantic rules a schema does not express (a format newer than the reader's, an entry's id
equal to its key, fields that depend on each other) stay in the readers' code.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from ..errors import ResultFileError

#: The schemas of this module, by the name callers pass (file ``<name>.schema.json``).
NAMES = ("detect-v1", "detect-alerts-v1", "bisects-v1", "confirmations-v1", "ab-v1", "alert-actions-v1", "checked-v1")

_SAFE_KEY = re.compile(r"[A-Za-z0-9._-]{1,100}")
#: Keywords whose failure reads better as "<value> is not <the subschema's description>".
_DESCRIBED = ("enum", "const", "pattern", "minimum", "minLength", "maxLength", "minItems")
_TYPE_WORDS = {"object": "an object", "array": "a list", "string": "a string", "number": "a finite number",
               "integer": "an integer", "boolean": "true or false", "null": "null"}


def _finite_number(_checker: Any, value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _strict_integer(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict):
    """``pattern`` with ECMA-262's ``$``: the end of the text, not also before a final newline."""
    if isinstance(instance, str) and not _compiled(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={"pattern": _pattern},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"number": _finite_number, "integer": _strict_integer}),
)


def schema_path(name: str) -> Any:
    """The packaged file of schema ``name`` (an importlib.resources Traversable)."""
    return resources.files("vkbench") / "schema" / f"{name}.schema.json"


@lru_cache(maxsize=None)
def schema(name: str) -> dict:
    if name not in NAMES:
        raise ValueError(f"no history schema {name!r} (one of {', '.join(NAMES)})")
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def validator(name: str, definition: str | None = None) -> Any:
    """The (cached) validator of schema ``name``, or of its ``$defs/<definition>`` alone."""
    root = schema(name)
    return _Validator(_inlined({"$ref": f"#/$defs/{definition}"} if definition else root, root))


def _inlined(node: Any, root: dict) -> Any:
    """``node`` with every ``$ref`` (``#/$defs/...`` of ``root``, or ``<name>.schema.json`` of this
    directory) replaced by what it names, and no ``$schema``/``$id``/``$defs``. The schemas have no
    recursion. Why: a third faster than resolving references while validating (detect.json of
    2000 series), and jsonschema swaps in the stock validator (whose numbers may be NaN) when a
    ``$ref`` enters a subschema that declares ``$schema``."""
    if isinstance(node, list):
        return [_inlined(item, root) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _inlined(v, root) for k, v in node.items() if k not in ("$ref", "$defs", "$schema", "$id")}
    if "$ref" not in node:
        return out
    other, _, pointer = node["$ref"].partition("#")
    document = schema(other.removesuffix(".schema.json")) if other else root
    target = document
    for part in filter(None, pointer.split("/")):
        target = target[part]
    target = _inlined(target, document)
    if not out:
        return target
    out["allOf"] = [*out.get("allOf", []), target]
    return out


def check(doc: Any, schema_name: str, path: Path | str, hint: str, *, definition: str | None = None,
          what: str | None = None) -> Any:
    """``doc`` when it is valid against schema ``schema_name`` (or its ``$defs/<definition>``);
    else a ResultFileError: ``<path>: <json path>: <problem>; not <what>`` (``what``: the
    schema's title unless given), with ``hint``."""
    error = best_match(validator(schema_name, definition).iter_errors(doc))
    if error is None:
        return doc
    where, problem = describe(error)
    raise ResultFileError(f"{path}: {where}: {problem}; not {what or schema(schema_name)['title']}", hint=hint)


def describe(error: ValidationError) -> tuple[str, str]:
    """(the JSON path of ``error``'s value as ``a/0/b``, or "top level"; what is wrong with it)."""
    parts = [shown_key(p) for p in error.absolute_path]
    keyword, instance, subschema = error.validator, error.instance, error.schema
    if "propertyNames" in error.absolute_schema_path:       # a key: name it beside its object
        parts.append(shown_key(instance))
        return "/".join(parts), f"{shown(instance)} is not {subschema.get('description') or 'a valid key'}"
    if keyword == "required":
        missing = next((k for k in error.validator_value if isinstance(instance, dict) and k not in instance), None)
        return "/".join(parts + [shown_key(missing)]), "missing"
    where = "/".join(parts) or "top level"
    if keyword == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return where, f"not {' or '.join(_TYPE_WORDS.get(t, t) for t in types)} ({shown(instance)})"
    if isinstance(subschema, dict) and subschema.get("description") and keyword in _DESCRIBED:
        return where, f"{shown(instance)} is not {subschema['description']}"
    if keyword == "enum":
        return where, f"{shown(instance)} is not one of {', '.join(map(str, error.validator_value))}"
    return where, error.message if len(error.message) <= 200 else error.message[:197] + "..."


def shown_key(key: Any) -> str:
    """A path component as it appears in a message: a plain id as is, anything else quoted and cut."""
    text = str(key)
    return text if isinstance(key, int) or _SAFE_KEY.fullmatch(text) else shown(key)


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["NAMES", "check", "describe", "schema", "schema_path", "shown", "validator"]
