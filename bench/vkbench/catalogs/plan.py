"""What ``vkbench run SOURCE`` does with a catalog source: the cells it runs and the refusals.

Sources:
  a spec file (.yml/.yaml with clientconfig)      one redis-benchmarks-specification spec
  a folder of spec files                          every spec in it (defaults.yml aside)
  specs:GLOB                                      specs of the pinned catalog by name (fnmatch)
  specs:core | specs:group=NAME                   the catalog's core set, or one group's specs
  specs:changed=FILE,FILE                         the specs of the groups changed source files
                                                  touch (files-to-groups.json; else the core set)
  perf:FILE                                       a valkey-perf-benchmark config (a path, or a
                                                  file name in the pinned catalog's configs/)
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, UsageError
from ..matrix.model import Cell
from . import perf, specs
from ..bounded_yaml import CATALOG_BOUNDS, load_yaml
from .fetch import PERF_CONFIGS, SPECS, load_catalog

if TYPE_CHECKING:
    from .select import Selection, SpecChoice

DEFAULT_SERVER = "valkey:9.1.2"
SUITES = "redis_benchmarks_specification/test-suites/"
CORE_SPECS = "redis_benchmarks_specification/__common__/core-specs.json"
#: Overrides a catalog source takes; the others would change what the spec measures.
CATALOG_OVERRIDES = {"server", "io_threads", "duration", "requests", "repetitions", "runner"}
MAX_SPEC_FILES = 5000


@dataclass
class CatalogPlan:
    source: str
    cells: list[Cell] = field(default_factory=list)
    refusals: list[specs.Refusal] = field(default_factory=list)
    entries: int = 0                      # specs or config entries read

    def runnable_names(self) -> list[str]:
        return sorted({c.catalog.name for c in self.cells if c.catalog})

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "entries": self.entries, "runnable": len(self.runnable_names()),
                "cells": [{"id": c.cell_id, **c.model_dump(mode="json")} for c in self.cells],
                "refused": [r.to_json() for r in self.refusals]}


def is_catalog_source(source: str | None) -> bool:
    if not source:
        return False
    if source.startswith(("specs:", "perf:")):
        return True
    path = Path(source)
    if path.is_dir():
        return True
    if path.suffix in (".yml", ".yaml") and path.is_file():
        try:
            head = path.read_text(errors="replace")[:65536]
        except OSError:
            return False
        return any(line.startswith(("clientconfig", "tested-groups:", "dbconfig:")) for line in head.splitlines())
    return False


def _overrides(overrides: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    unknown = sorted(set(overrides) - CATALOG_OVERRIDES)
    if unknown:
        flags = ", ".join("--" + {"topology": "topologies", "server": "versions"}.get(k, k).replace("_", "-") for k in unknown)
        raise UsageError(f"{flags} cannot apply to catalog specs: the spec says what it measures",
                         hint="use --versions, --io-threads (one value), --duration, --requests, --repetitions")
    servers = overrides.get("server") or [DEFAULT_SERVER]
    out = {k: v for k, v in overrides.items() if k not in ("server", "runner")}
    if "io_threads" in out:
        if len(out["io_threads"]) != 1:
            raise UsageError("--io-threads takes one value for catalog specs", hint="e.g. --io-threads 2")
        out["io_threads"] = out["io_threads"][0]
    return servers, out


def plan_catalog(source: str, overrides: dict[str, Any] | None = None) -> CatalogPlan:
    overrides = dict(overrides or {})
    runner = overrides.get("runner")
    servers, opts = _overrides(overrides)
    plan = CatalogPlan(source=source)
    if source.startswith("perf:"):
        text, file_name = _perf_text(source[5:])
        cells, refusals = perf.config_cells(text, file_name=file_name, servers=servers, overrides=opts)
        plan.cells, plan.refusals = cells, refusals
        plan.entries = len({c.catalog.name for c in cells}) + len(refusals)
    else:
        for origin, text in _spec_texts(source):
            plan.entries += 1
            _add_spec(plan, origin, text, servers, opts)
    if runner:
        if len(runner) != 1:
            raise UsageError("--runners takes one runner for catalog specs", hint="e.g. --runners cloud-x86")
        plan.cells = [c.model_copy(update={"runner": runner[0]}) for c in plan.cells]
    return plan


def _add_spec(plan: CatalogPlan, origin: str, text: str, servers: list[str], opts: dict[str, Any]) -> None:
    stem = Path(origin).stem
    try:
        doc = load_yaml(text, origin, CATALOG_BOUNDS)
    except ConfigError as exc:
        plan.refusals.append(specs.Refusal(stem, specs.R_INVALID, exc.message))
        return
    name = doc.get("name", stem) if isinstance(doc, dict) else stem
    groups = [str(g).lower() for g in (doc.get("tested-groups") or [])] if isinstance(doc, dict) else []
    try:
        plan.cells += specs.spec_cells(doc, origin=origin, servers=servers, overrides=opts)
    except specs.Refused as exc:
        plan.refusals.append(specs.Refusal(str(name), exc.reason, exc.detail, groups=groups))


def _perf_text(name: str) -> tuple[str, str]:
    path = Path(name)
    if path.is_file():
        if path.stat().st_size > 1024 * 1024:
            raise UsageError(f"{path} is larger than 1 MB", hint="a valkey-perf-benchmark config is a few KB")
        return path.read_text(errors="replace"), path.name
    catalog = load_catalog(PERF_CONFIGS)
    key = f"configs/{name}" if not name.startswith("configs/") else name
    if key not in catalog.files:
        names = ", ".join(p.split("/", 1)[1] for p in catalog.matching("configs/*.json"))
        raise UsageError(f"perf:{name} is neither a file nor a config of valkey-perf-benchmark",
                         hint=f"configs at {PERF_CONFIGS.commit[:12]}: {names}")
    return catalog.text(key), Path(key).name


def _spec_texts(source: str) -> list[tuple[str, str]]:
    if source.startswith("specs:"):
        return catalog_specs(source[6:])
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.y*ml") if p.is_file() and p.name not in ("defaults.yml", "defaults.yaml"))
        if len(files) > MAX_SPEC_FILES:
            raise UsageError(f"{path} holds {len(files)} spec files, more than {MAX_SPEC_FILES}", hint="give a smaller folder")
        if not files:
            raise UsageError(f"{path} holds no .yml spec files", hint="give a folder of redis-benchmarks-specification specs")
        return [(str(p), p.read_bytes().decode("utf-8", errors="replace")) for p in files]
    return [(str(path), path.read_bytes().decode("utf-8", errors="replace"))]


def catalog_specs(selector: str) -> list[tuple[str, str]]:
    """Specs of the pinned catalog: ``GLOB`` on spec names, ``core``, or ``group=NAME``."""
    catalog = load_catalog(SPECS)
    paths = [p for p in catalog.matching(SUITES + "*.yml") if not p.endswith("/defaults.yml")]
    by_stem = {Path(p).stem: p for p in paths}
    if selector == "core":
        core = json.loads(catalog.text(CORE_SPECS)).get("core_specs", [])
        chosen = [by_stem[s] for s in core if s in by_stem]
    elif selector.startswith("changed="):
        from .select import core_specs, select_for_changes

        chosen_groups = select_for_changes(catalog, [f for f in selector[8:].split(",") if f])
        chosen = [p for p in paths if chosen_groups.groups and set(chosen_groups.groups) & _groups_of(catalog.text(p))]
        if chosen_groups.core:
            chosen += [by_stem[s] for s in core_specs(catalog) if s in by_stem and by_stem[s] not in chosen]
    elif selector.startswith("group="):
        group = selector[6:].lower()
        chosen = [p for p in paths if group in _groups_of(catalog.text(p))]
    else:
        chosen = [by_stem[s] for s in sorted(by_stem) if fnmatch.fnmatchcase(s, selector)]
    if not chosen:
        raise UsageError(f"specs:{selector} matches no spec of redis-benchmarks-specification at {SPECS.commit[:12]}",
                         hint="give a glob on spec names (specs:memtier_benchmark-1Mkeys-string-*), specs:core or "
                              "specs:group=hash")
    return [(f"{SPECS.name}/{p}", catalog.text(p)) for p in chosen]


def _groups_of(text: str) -> set[str]:
    """The tested-groups of a spec without a full parse (for selecting by group)."""
    try:
        doc = load_yaml(text, "spec", CATALOG_BOUNDS)
    except ConfigError:
        return set()
    return {str(g).lower() for g in (doc.get("tested-groups") or [])} if isinstance(doc, dict) else set()


def plan_for_changes(changed: list[str], overrides: dict[str, Any] | None = None, *,
                     per_group: int = 1) -> tuple[CatalogPlan, Selection, list[SpecChoice]]:
    """The cells an A/B of a change runs (select.choose_specs: the core spec of each group the
    changed files touch, the core set for broad files), with the selection and every choice's reason."""
    from .select import choose_specs, core_specs, files_to_groups, select_groups

    catalog = load_catalog(SPECS)
    selection = select_groups(changed, files_to_groups(catalog))
    core = core_specs(catalog)
    paths = [p for p in catalog.matching(SUITES + "*.yml") if not p.endswith("/defaults.yml")]
    wanted = set(selection.groups)
    candidates = [p for p in paths if Path(p).stem in core or (wanted and wanted & _groups_of(catalog.text(p)))]
    servers, opts = _overrides(dict(overrides or {}))
    full = CatalogPlan(source="changed files")
    for path in candidates:
        full.entries += 1
        _add_spec(full, f"{SPECS.name}/{path}", catalog.text(path), servers, opts)
    runnable = {c.catalog.name: list(c.catalog.groups) for c in full.cells if c.catalog}
    choices = choose_specs(selection, runnable, core, per_group=per_group)
    names = {choice.name for choice in choices}
    plan = CatalogPlan(source="changed files", cells=[c for c in full.cells if c.catalog and c.catalog.name in names],
                       refusals=[r for r in full.refusals if r.name in core or set(r.groups) & wanted],
                       entries=len(names))
    return plan, selection, choices


def plan_spec_names(names: list[str], overrides: dict[str, Any] | None = None) -> CatalogPlan:
    """The cells of these specs of the pinned catalog, by exact name; an unknown name is an error."""
    catalog = load_catalog(SPECS)
    by_stem = {Path(p).stem: p for p in catalog.matching(SUITES + "*.yml") if not p.endswith("/defaults.yml")}
    unknown = [name for name in names if name not in by_stem]
    if unknown:
        raise UsageError(f"no spec named {', '.join(unknown[:5])} in redis-benchmarks-specification at {SPECS.commit[:12]}",
                         hint="vkbench run 'specs:*' --dry-run lists them")
    servers, opts = _overrides(dict(overrides or {}))
    plan = CatalogPlan(source="specs: " + ",".join(names)[:200])
    for name in dict.fromkeys(names):
        plan.entries += 1
        _add_spec(plan, f"{SPECS.name}/{by_stem[name]}", catalog.text(by_stem[name]), servers, opts)
    runners = (overrides or {}).get("runner")
    if runners:       # a matrix's --runners: every cell on every runner class, as for its groups
        runners = runners if isinstance(runners, list) else [runners]
        plan.cells = [c.model_copy(update={"runner": r}) for r in runners for c in plan.cells]
    return plan
