"""tools/import_cycles.py finds import circles (lazy imports too); history/ and files.py have none."""

from __future__ import annotations

from pathlib import Path

import import_cycles  # tools/ (pytest pythonpath)

PACKAGE = Path(__file__).resolve().parents[3] / "bench" / "vkbench"


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


def test_history_files_and_markdown_are_in_no_circle():
    involved = {name for circle in _graph(PACKAGE) for name in circle}
    assert not {n for n in involved if n.startswith(("vkbench.history", "vkbench.files", "vkbench.markdown", "vkbench.ci"))}
