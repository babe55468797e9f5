"""Published figures (results/reference/*.json) -> ``data/reference.json`` for the overlay.

Reference files are ordinary result files (schema v1) with ``kind: vkbench.reference``,
``run.backend: reference`` and a ``provenance`` block, so the same validator guards them.
The site shows where a figure comes from as plain text: the output holds no external URL.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import ResultFileError
from ..results.io import load_result
from .compact import num

_DIM_KEYS = ("io_threads", "topology", "pipeline", "clients", "client_threads", "data_size", "keyspace", "requests", "tool", "tests")


def packaged_reference_dir() -> Path:
    """The published figures shipped inside the package (a copy of results/reference/*.json)."""
    return Path(str(resources.files("vkbench") / "reference"))


def load_references(reference_dir: Path) -> list[dict]:
    """Every reference file in the directory, validated; a plain result file there is an error."""
    reference_dir = Path(reference_dir)
    if not reference_dir.is_dir():
        raise ResultFileError(f"{reference_dir}: no such reference directory", hint="pass a directory of reference files (results/reference of the repository), or omit --reference for the packaged ones")
    found = []
    for path in sorted(reference_dir.glob("*.json")):
        data = load_result(path)
        run = data["run"]
        if data["kind"] != "vkbench.reference" or run["backend"] != "reference" or run["trigger"] != "reference" or not data.get("provenance"):
            raise ResultFileError(
                f"{path}: not a reference file (needs kind vkbench.reference, run.backend and run.trigger 'reference', and provenance)",
                hint="reference files hold published figures; measured results belong in the history",
            )
        found.append(data)
    return found


def _link_text(url: str | None) -> str | None:
    """Where to find the source, without a scheme: readable, copyable, and not a live link."""
    if not url:
        return None
    return url.split("://", 1)[-1]


def site_reference(data: dict) -> dict:
    run, subject, dims, env, prov = data["run"], data["subject"], data["dimensions"], data["environment"], data["provenance"]
    values = {
        command: {metric: num(stat.get("median")) for metric, stat in metrics.items()}
        for command, metrics in data["summary"].items()
    }
    return {
        "id": run["cell_id"],
        "label": prov.get("label") or prov.get("source"),
        "group": prov.get("group") or prov.get("source"),
        "source": prov.get("source"),
        "published": prov.get("published"),
        "where": _link_text(prov.get("url")),
        "notes": prov.get("notes"),
        "engine": subject["engine"],
        "version": subject["version"],
        "machine_class": run["machine_class"],
        "arch": env.get("arch"),
        "cpu": env.get("cpu_model"),
        "cores": env.get("cores"),
        "dims": {k: dims.get(k) for k in _DIM_KEYS},
        "values": values,
        "ok": 1 if data["validity"]["valid"] else 0,
        "flags": [f["code"] for f in data["validity"]["flags"]],
    }


def reference_data(reference_dir: Path | None) -> dict:
    refs = load_references(reference_dir) if reference_dir is not None else []
    return {"references": [site_reference(r) for r in refs]}
