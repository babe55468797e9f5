"""One cell from the compact JSON of ``vkbench run --cell`` (what the GitHub matrix carries)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from .expand import format_validation_error
from .model import Cell

#: GitHub Actions refuses a matrix with more jobs than this.
GITHUB_MATRIX_LIMIT = 256


def cell_from_arg(arg: str, overrides: dict[str, Any] | None = None) -> Cell:
    try:
        data = json.loads(arg)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--cell is not valid JSON: {exc}", hint="pass the 'cell' field of `vkbench matrix --format github` verbatim") from None
    if not isinstance(data, dict):
        raise ConfigError("--cell must be a JSON object", hint="pass the 'cell' field of `vkbench matrix --format github` verbatim")
    for key, value in (overrides or {}).items():
        # A single value only: a cell is one point of the matrix, not an axis.
        if isinstance(value, list) and key not in ("tests", "tool_args", "extra_server_args"):
            if len(value) != 1:
                raise ConfigError(f"an override of {key} with several values cannot apply to one --cell", hint="give one value")
            value = value[0]
        data[key] = value
    try:
        return Cell.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("--cell is invalid:\n" + format_validation_error(exc, Cell), hint="see docs/matrix.md") from None


def github_matrix(cells: list[Cell]) -> dict:
    """``{"include": [...]}`` for ``strategy.matrix``: each entry self-contained for ``--cell``."""
    if len(cells) > GITHUB_MATRIX_LIMIT:
        raise ConfigError(
            f"{len(cells)} cells exceed GitHub's limit of {GITHUB_MATRIX_LIMIT} jobs per matrix",
            hint="narrow the matrix (--versions, --io-threads, --topologies, --runners) or split it into several runs",
        )
    return {
        "include": [
            {"id": c.cell_id, "runner": c.runner, "name": _label(c), "cell": c.to_arg()}
            for c in cells
        ]
    }


def _label(cell: Cell) -> str:
    counted = f" {cell.instrument}" if cell.instrument != "wallclock" else ""
    return (f"{cell.server} {cell.topology} io{cell.io_threads} {'+'.join(cell.tests)} "
            f"P{cell.pipeline} {cell.tool}{counted} [{cell.runner}]")
