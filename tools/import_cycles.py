#!/usr/bin/env python3
"""Print the import circles of the vkbench package (one line per circle; exit 1 if any).

Every import counts, also the ones inside functions: a lazy import hides a circle from Python,
not from a reader. ``from PKG import NAME`` is an edge to ``PKG.NAME`` when that is a module,
else to ``PKG`` (its ``__init__``). Importing a submodule does not count as importing its
parent package (Python runs the parent's ``__init__`` first, but that is not a dependency).

Usage: python3 tools/import_cycles.py [PACKAGE_DIR]   (default: bench/vkbench)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_names(package_dir: Path) -> dict[str, Path]:
    root = package_dir.parent
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    found.add(sub)
                elif target in modules:
                    found.add(target)
    found.discard(name)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        result.append(sorted(component))
    return sorted(result)


def main(argv: list[str]) -> int:
    package_dir = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parent.parent / "bench" / "vkbench")
    modules = module_names(package_dir)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    found = circles(graph)
    for component in found:
        print(" <-> ".join(component))
    print(f"{len(found)} import circle(s) in {len(modules)} modules", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
