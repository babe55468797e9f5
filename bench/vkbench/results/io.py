"""Read and write result files. Reading never guesses: a corrupt file, a file that fails the
schema or a file newer than this code is a :class:`ResultFileError` naming the file."""

from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import jsonschema

from .. import RESULT_SCHEMA_VERSION
from ..errors import ResultFileError
from .aggregate import split_aggregate
from .checks import check_result, format_checker


@lru_cache(maxsize=None)
def schema(version: int = RESULT_SCHEMA_VERSION) -> dict:
    text = (resources.files("vkbench") / "schema" / f"result-v{version}.schema.json").read_text()
    return json.loads(text)


def validate_result(data: Any, *, source: str = "<result>") -> dict:
    """Check ``schema_version`` first (so a newer file gets the right message), then the schema.
    Returns the result in today's shape: an all-commands row that older results hold as a
    command (memtier's TOTALS) is moved to ``aggregate`` (:mod:`vkbench.results.aggregate`)."""
    if not isinstance(data, dict):
        raise ResultFileError(f"{source}: not a vkbench result (top level is not an object)", hint="pass result files written by `vkbench run`")
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ResultFileError(f"{source}: no integer schema_version; not a vkbench result", hint="pass result files written by `vkbench run`")
    if version < 1:
        raise ResultFileError(
            f"{source}: schema_version {version} is not a result format version (1..{RESULT_SCHEMA_VERSION})",
            hint="pass result files written by `vkbench run`",
        )
    if version > RESULT_SCHEMA_VERSION:
        raise ResultFileError(
            f"{source}: schema_version {version} is newer than this vkbench understands ({RESULT_SCHEMA_VERSION})",
            hint="upgrade vkbench (pip install -U vkbench, or pull the repository) before reading this file",
        )
    validator = jsonschema.Draft202012Validator(schema(version), format_checker=format_checker())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise ResultFileError(
            f"{source}: fails result schema v{version} at {where}: {first.message}{more}",
            hint="the file was edited or truncated; restore it from the run's artifact",
        )
    check_result(data, source)
    return split_aggregate(data)


def load_result(path: str | os.PathLike) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such result file", hint="check the path") from None
    except IsADirectoryError:
        raise ResultFileError(f"{path}: a directory, not a result file", hint="check the path") from None
    except RecursionError:
        raise ResultFileError(f"{path}: nested too deeply to be a result", hint="the file was edited; restore it from the run's artifact") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultFileError(f"{path}: corrupt JSON ({exc})", hint="the file was truncated or edited; restore it from the run's artifact") from None
    return validate_result(data, source=str(path))


def result_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Expand files and directories (recursively) into result JSON files, sorted."""
    found: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*.json") if not q.name.startswith(".")))
        elif p.exists():
            found.append(p)
        else:
            raise ResultFileError(f"{p}: no such file or directory", hint="pass result files or the --out directory of `vkbench run`")
    return found


def write_json_atomic(path: str | os.PathLike, data: Any, *, indent: int | None = 2) -> None:
    """Write to a temp file in the same directory, fsync, rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_result(path: str | os.PathLike, data: dict) -> None:
    validate_result(data, source=str(path))
    write_json_atomic(path, data)
