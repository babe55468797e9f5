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


def select_for_changes(catalog: Catalog, changed: list[str]) -> Selection:
    mapping = json.loads(catalog.text(FILES_TO_GROUPS)).get("exact", {})
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
    selection.groups = sorted(groups)
    return selection


def core_specs(catalog: Catalog) -> list[str]:
    return list(json.loads(catalog.text(CORE_SPECS)).get("core_specs", []))
