"""Load a matrix (file or preset), validate it and expand it into cells."""

from __future__ import annotations

import itertools
import math
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..bounded_yaml import load_yaml
from ..errors import ConfigError, UsageError
from .model import Cell, MatrixFile

#: Fields whose value is itself a list: a list there is a value, not an axis.
LIST_VALUED = {"tests", "extra_server_args", "tool_args"}
_RANGE = re.compile(r"^\s*(\d+)\s*\.\.\s*(cores|\d+)\s*(?:\+\s*(\d+))?\s*$")


def preset_names() -> list[str]:
    folder = resources.files("vkbench.matrix") / "presets"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_matrix(file_or_preset: str) -> MatrixFile:
    """``file_or_preset`` is a path to a YAML file or the name of a shipped preset."""
    path = Path(file_or_preset)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.exists():
            raise UsageError(f"matrix file {file_or_preset} does not exist", hint="give a YAML file or a preset: " + ", ".join(preset_names()))
        text, origin = path.read_text(), str(path)
    else:
        if file_or_preset not in preset_names():
            raise UsageError(
                f"unknown preset {file_or_preset!r}",
                hint="presets: " + ", ".join(preset_names()) + " (or give a path to a matrix YAML file)",
            )
        text = (resources.files("vkbench.matrix") / "presets" / f"{file_or_preset}.yaml").read_text()
        origin = f"preset {file_or_preset}"
    data = load_yaml(text, origin)   # ConfigError for bad syntax and broken bounds alike
    if not isinstance(data, dict):
        raise ConfigError(f"{origin} must be a mapping with name, defaults and groups", hint="see docs/matrix.md")
    try:
        return MatrixFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{origin} is invalid:\n" + format_validation_error(exc, MatrixFile), hint="see docs/matrix.md") from None


#: Most cells one matrix may expand to, checked before expanding (GitHub's strategy.matrix takes
#: GITHUB_MATRIX_JOBS; a local run of more than this is a typo, not a plan).
MAX_CELLS = 1024
GITHUB_MATRIX_JOBS = 256


def expand_matrix(
    matrix: MatrixFile,
    *,
    overrides: dict[str, Any] | None = None,
    cores: int | None = None,
) -> list[Cell]:
    """Cartesian product of every group, with ``overrides`` (from CLI flags) replacing fields in all groups."""
    cores = cores or os.cpu_count() or 1
    cells: list[Cell] = []
    seen: set[str] = set()
    groups = []
    total = 0
    for group in matrix.groups:
        merged = {**matrix.defaults, **group, **(overrides or {})}
        axes = {key: _axis_values(key, value, cores) for key, value in merged.items()}
        groups.append(axes)
        total += math.prod(len(values) for values in axes.values())
    # counted before anything is built: a few lines of YAML can name millions of cells
    if total > MAX_CELLS:
        raise ConfigError(f"{matrix.name}: expands to {total} cells; a matrix has at most {MAX_CELLS} "
                          f"(GitHub runs {GITHUB_MATRIX_JOBS} jobs per matrix)",
                          hint="narrow the matrix (--versions, --io-threads, --topologies, --runners) or split it into several files")
    catalog_cells = _catalog_cells(matrix, overrides or {})
    if total + len(catalog_cells) > MAX_CELLS:
        raise ConfigError(f"{matrix.name}: expands to {total + len(catalog_cells)} cells; a matrix has at most {MAX_CELLS}",
                          hint="narrow the matrix or split it into several files")
    for group_index, axes in enumerate(groups):
        keys = list(axes)
        for combo in itertools.product(*(axes[k] for k in keys)):
            raw = dict(zip(keys, combo))
            try:
                cell = Cell.model_validate(raw)
            except ValidationError as exc:
                if _count_refused_by_override(raw, overrides):
                    continue
                raise ConfigError(
                    f"{matrix.name}: group {group_index + 1} gives an invalid cell:\n" + format_validation_error(exc, Cell),
                    hint="fix the group in the matrix file, or the flag that overrides it",
                ) from None
            if cell.cell_id not in seen:
                seen.add(cell.cell_id)
                cells.append(cell)
    for cell in catalog_cells:
        if cell.cell_id not in seen:
            seen.add(cell.cell_id)
            cells.append(cell)
    return cells


def _count_refused_by_override(raw: dict[str, Any], overrides: dict[str, Any] | None) -> bool:
    """A group that counts instructions (its own ``instrument``), crossed with a flag that gives it
    what counts cannot measure (``--io-threads 2,4``, ``--topologies cluster:3``): that combination
    is left out, not an error - the flag was meant for the wall-clock groups. The same cell with the
    wall clock must be valid (anything else is the group's own mistake, reported as such)."""
    if not overrides or "instrument" in overrides or raw.get("instrument", "wallclock") == "wallclock":
        return False
    try:
        Cell.model_validate({**raw, "instrument": "wallclock"})
    except ValidationError:
        return False
    return True


def _catalog_cells(matrix: MatrixFile, overrides: dict[str, Any]) -> list[Cell]:
    """The cells of the matrix's catalog specs; CLI overrides (--versions, --duration, ...) win
    over the matrix's own catalog settings. A spec that does not run here refuses the matrix."""
    if matrix.catalog is None:
        return []
    from ..catalogs.plan import plan_spec_names

    selection = matrix.catalog
    settings: dict[str, Any] = {"server": selection.server}
    if selection.duration is not None:
        settings["duration"] = selection.duration
    if selection.repetitions is not None:
        settings["repetitions"] = selection.repetitions
    settings.update({k: v for k, v in overrides.items() if k != "tests"})
    if isinstance(settings.get("server"), str):
        settings["server"] = [settings["server"]]
    plan = plan_spec_names(selection.specs, settings)
    if plan.refusals:
        refused = "; ".join(f"{r.name}: {r.reason}" for r in plan.refusals[:5])
        raise ConfigError(f"{matrix.name}: {len(plan.refusals)} of its catalog specs do not run here: {refused}",
                          hint="drop them from the matrix's catalog.specs (vkbench run specs:NAME --dry-run says why)")
    return plan.cells


def _axis_values(key: str, value: Any, cores: int) -> list[Any]:
    if key == "io_threads" and isinstance(value, str):
        match = _RANGE.match(value)
        if not match:
            raise ConfigError(f"io_threads {value!r} is neither a number, a list nor a range", hint="write e.g. 4, [1, 2, 4] or '1..cores+1'")
        start = int(match.group(1))
        end = cores if match.group(2) == "cores" else int(match.group(2))
        end += int(match.group(3) or 0)
        return list(range(start, end + 1))
    if key in LIST_VALUED:
        if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            return value  # a list of lists: an axis of lists
        return [value]
    if isinstance(value, list):
        return value or [None]
    return [value]


def format_validation_error(exc: ValidationError, model: type) -> str:
    """One line per problem: the field path, what is wrong, the allowed values when there is a set."""
    lines = []
    fields = sorted(getattr(model, "model_fields", {}))
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = f"unknown field; allowed fields: {', '.join(fields)}"
        elif err["type"] == "missing":
            msg = "required field is missing"
        got = err.get("input")
        shown = repr(got) if len(repr(got)) <= 80 else repr(got)[:77] + "..."   # a hostile value may be huge
        suffix = f" (got {shown})" if err["type"] not in ("missing", "extra_forbidden") and not isinstance(got, dict) else ""
        lines.append(f"  - {where}: {msg}{suffix}")
    return "\n".join(lines)
