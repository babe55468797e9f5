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
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from ..errors import ResultFileError

#: The schemas of this module, by the name callers pass (file ``<name>.schema.json``).
NAMES = ("detect-v1", "detect-alerts-v1", "bisects-v1", "confirmations-v1", "ab-v1", "alert-actions-v1")

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


def _unpinned(name: str) -> dict:
    """Schema ``name`` without its ``$schema``: jsonschema swaps a validator for the stock one of
    a subschema's ``$schema`` when it follows a ``$ref``, dropping the finite number type."""
    return {k: v for k, v in schema(name).items() if k != "$schema"}


@lru_cache(maxsize=None)
def _registry() -> Registry:
    return Registry().with_resources((schema(n)["$id"], DRAFT202012.create_resource(_unpinned(n))) for n in NAMES)


@lru_cache(maxsize=None)
def validator(name: str, definition: str | None = None) -> Any:
    """The (cached) validator of schema ``name``, or of its ``$defs/<definition>`` alone."""
    target = _unpinned(name) if definition is None else {"$ref": f"{schema(name)['$id']}#/$defs/{definition}"}
    return _Validator(target, registry=_registry())


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
