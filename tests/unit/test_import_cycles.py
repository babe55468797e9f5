"""tools/import_cycles.py finds import circles (lazy imports too); the package has none."""

from __future__ import annotations

from pathlib import Path

import import_cycles  # tools/ (pytest pythonpath)

PACKAGE = Path(__file__).resolve().parents[2] / "bench" / "vkbench"


def _graph(package: Path) -> list[list[str]]:
    modules = import_cycles.module_names(package)
    return import_cycles.circles({name: import_cycles.imports_of(name, path, modules) for name, path in modules.items()})


def test_a_lazy_import_back_is_a_circle(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import thing\n")
    (pkg / "b.py").write_text("def thing():\n    from . import a\n")
    (pkg / "c.py").write_text("from pkg import a\n")
    assert _graph(pkg) == [["pkg.a", "pkg.b"]]


def test_the_package_has_no_import_circle():
    """topology/ had the last one (backend's factory importing its implementations, compose
    importing native's signal handling): the factory is topology/factory.py, signals topology/signals.py."""
    assert _graph(PACKAGE) == []
