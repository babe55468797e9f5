"""Which specs a change should run: redis-benchmarks-specification's ``files-to-groups.json``.

A changed source file listed there (``t_hash.c`` -> hash) selects its groups' specs; any other
file (server.c, networking.c, headers, new files) is broad, and selects the catalog's curated
core set (``core-specs.json``, one spec per group) instead. Every choice carries its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .fetch import Catalog

FILES_TO_GROUPS = "redis_benchmarks_specification/__common__/files-to-groups.json"
CORE_SPECS = "redis_benchmarks_specification/__common__/core-specs.json"
MAX_FILES = 10000


@dataclass
class Selection:
    groups: list[str] = field(default_factory=list)
    core: bool = False
    reasons: list[str] = field(default_factory=list)     # one line per changed file


@dataclass
class SpecChoice:
    """One spec an A/B of a change runs, and why."""

    name: str
    groups: list[str]
    why: str


def files_to_groups(catalog: Catalog) -> dict[str, list[str]]:
    return dict(json.loads(catalog.text(FILES_TO_GROUPS)).get("exact", {}))


def select_for_changes(catalog: Catalog, changed: list[str]) -> Selection:
    return select_groups(changed, files_to_groups(catalog))


def select_groups(changed: list[str], mapping: dict[str, list[str]]) -> Selection:
    """The groups changed files map to (by file name), and whether a broad file changed."""
    selection = Selection()
    groups: set[str] = set()
    for path in changed[:MAX_FILES]:
        name = PurePosixPath(path).name
        mapped = mapping.get(name)
        if mapped:
            groups.update(mapped)
            selection.reasons.append(f"{path}: {name} -> {', '.join(mapped)}")
        else:
            selection.core = True
            selection.reasons.append(f"{path}: not in files-to-groups.json (a broad file) -> the core set")
    if len(changed) > MAX_FILES:
        selection.core = True
        selection.reasons.append(f"{len(changed)} files changed, more than {MAX_FILES}: the core set as well")
    selection.groups = sorted(groups)
    return selection


def core_specs(catalog: Catalog) -> list[str]:
    return list(json.loads(catalog.text(CORE_SPECS)).get("core_specs", []))


def choose_specs(selection: Selection, runnable: dict[str, list[str]], core: list[str], *,
                 per_group: int = 1) -> list[SpecChoice]:
    """The specs an A/B of a change runs: for each group of ``selection``, the core set's spec of
    that group when it runs here, else the first ``per_group`` runnable specs of the group by name;
    when a broad file changed, every runnable spec of the core set as well. ``runnable``: spec
    name -> groups, only specs that run here. What cannot be covered is added to the reasons."""
    chosen: dict[str, SpecChoice] = {}
    runnable_core = [name for name in core if name in runnable]
    for group in selection.groups:
        of_group = [name for name in runnable_core if group in runnable[name]]
        why = f"group {group}: the core set's spec of the group"
        if not of_group:
            of_group = sorted(name for name, groups in runnable.items() if group in groups)
            why = f"group {group}: the first runnable spec of the group (the core set has none that runs here)"
        if not of_group:
            selection.reasons.append(f"group {group}: no spec of it runs here (nothing to measure)")
        for name in of_group[:per_group]:
            chosen.setdefault(name, SpecChoice(name, runnable[name], why))
    if selection.core:
        for name in runnable_core:
            chosen.setdefault(name, SpecChoice(name, runnable[name], "a broad file changed: the core set"))
        missing = [name for name in core if name not in runnable]
        if missing:
            selection.reasons.append(f"core specs that do not run here (refused): {', '.join(missing)}")
    return list(chosen.values())
