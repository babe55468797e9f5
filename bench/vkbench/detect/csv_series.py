"""The evaluation interface: one series from a CSV file, change points as plain JSON.

Stable, documented in docs/detection.md, used by evaluation harnesses::

    vkbench detect --series FILE.csv [--bigger-is-better|--smaller-is-better] --format json

CSV columns: ``id,value`` and optionally ``samples`` (repetitions, ``;``-separated).
Output: ``{"change_points": [{"index", "id", "direction", "magnitude", "p_value"}]}`` where
``index`` is the 0-based row of the first point after the change.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from ..errors import ResultFileError
from .changepoints import detect_changes
from .params import DetectionParams


def read_series_csv(path: str | os.PathLike) -> tuple[list[str], list[float], list[list[float]] | None]:
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            fields = [f.strip() for f in (reader.fieldnames or [])]
            if "id" not in fields or "value" not in fields:
                raise ResultFileError(f"{path}: needs the columns id,value (found {','.join(fields) or 'none'})", hint="write a header line: id,value[,samples]")
            ids, values, samples = [], [], []
            has_samples = "samples" in fields
            for lineno, row in enumerate(reader, 2):
                row = {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
                try:
                    value = float(row["value"])
                    reps = [float(x) for x in row.get("samples", "").split(";") if x.strip()] if has_samples else []
                except ValueError:
                    raise ResultFileError(f"{path}:{lineno}: not a number in value/samples", hint="values are plain numbers; samples are ;-separated") from None
                if value <= 0:
                    raise ResultFileError(f"{path}:{lineno}: value must be > 0 (changes are relative)", hint="drop the row or fix the value")
                ids.append(row["id"])
                values.append(value)
                samples.append(reps)
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such file", hint="check the path") from None
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: not UTF-8 text ({exc})", hint="write the CSV as UTF-8") from None
    return ids, values, (samples if any(samples) else None)


def detect_csv(path: str | os.PathLike, *, bigger_is_better: bool = True, params: DetectionParams | None = None) -> dict:
    ids, values, samples = read_series_csv(path)
    changes = detect_changes(values, samples, bigger_is_better=bigger_is_better, params=params)
    return {
        "change_points": [
            {
                "index": c.index,
                "id": ids[c.index],
                "direction": c.direction,
                "magnitude": round(c.magnitude, 5),
                "p_value": float(f"{c.p_value:.3g}"),
            }
            for c in changes
        ]
    }
