"""vkbench from its wheel, outside the repository: the whole chain works with what the package ships.

The sdist is built from the checkout and the wheel from that sdist (`python -m build`, as a
release does), the wheel is installed into a fresh virtualenv in a temporary directory, and
from there (cwd outside the repository, no PYTHONPATH) `vkbench run` measures two cells on real
servers (native backend, small requests), then `ingest`, `detect`, `site build` and `publish`
into a local bare repository run. The site must carry uPlot and the reference overlay.

Two shortcuts keep this inside its CI budget (2.5 min on a loaded 2-core machine), both narrow:
- the build backend comes from the test environment (`--no-isolation`; setuptools is in the
  test extras) instead of being downloaded into an isolated environment per build;
- the fresh venv gets the wheel with `--no-deps`, and its third-party dependencies by a .pth
  line pointing at the test environment's site-packages (installing numpy/scipy from PyPI takes
  minutes). Only the wheel provides `vkbench` there (asserted), and the wheel's declared
  requirements are checked against what is importable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SMALL = {"requests": 20000, "keyspace": 5000, "pipeline": 16, "repetitions": 2, "warmup": 2000, "tests": ["set", "get"]}
#: What the CLI needs at run time, by path inside the wheel.
PACKAGE_DATA = ("vkbench/matrix/presets/smoke.yaml", "vkbench/schema/result-v1.schema.json", "vkbench/site/static/index.html",
                "vkbench/site/static/main.js", "vkbench/site/vendor/manifest.json", "vkbench/site/vendor/uplot/uPlot.iife.min.js",
                "vkbench/site/vendor/uplot/uPlot.min.css", "vkbench/site/vendor/uplot/LICENSE")


def run(cmd: list, *, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, REPO], cwd=REPO, timeout=300)
    wheels = list(dist.glob("vkbench-*.whl"))
    assert len(wheels) == 1 and list(dist.glob("vkbench-*.tar.gz"))
    print(f"wheel {wheels[0].name}: {wheels[0].stat().st_size} bytes, built in {time.monotonic() - started:.0f} s")
    return wheels[0]


def test_wheel_holds_the_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [n for n in PACKAGE_DATA if n not in names]
    assert not missing, f"not in the wheel: {missing}"
    references = [n for n in names if n.startswith("vkbench/reference/") and n.endswith(".json")]
    assert len(references) == len(list((REPO / "results" / "reference").glob("*.json")))
    assert not [n for n in names if "node_modules" in n or n.startswith("tests/")]
    # every JSON Schema: the result's and those of the history's files (vkbench.history.schemas)
    schemas = sorted(p.name for p in (REPO / "bench" / "vkbench" / "schema").glob("*.schema.json"))
    assert len(schemas) >= 7 and "detect-v1.schema.json" in schemas, schemas
    assert not [s for s in schemas if f"vkbench/schema/{s}" not in names], f"schemas not in the wheel: {schemas}"


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("outside")
    assert REPO not in base.parents, "the fresh venv must live outside the repository"
    env_dir = base / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", env_dir], cwd=base, timeout=180)
    python = env_dir / "bin" / "python"
    # the test environment's pip installs into the fresh venv (ensurepip there would cost ~25 s)
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--disable-pip-version-check", "--no-deps", wheel],
        cwd=base, timeout=180)
    site_packages = run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=base).stdout.strip()
    deps = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(site_packages, "zz_test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return base, env


def test_only_the_wheel_provides_vkbench_and_its_requirements_hold(venv):
    base, env = venv
    check = """
import importlib.metadata as md, json, vkbench
from packaging.requirements import Requirement
bad = []
for text in md.requires("vkbench") or []:
    req = Requirement(text)
    if req.marker and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        if not req.specifier.contains(md.version(req.name), prereleases=True):
            bad.append(f"{text}: have {md.version(req.name)}")
    except md.PackageNotFoundError:
        bad.append(f"{text}: missing")
print(json.dumps({"file": vkbench.__file__, "bad": bad}))
"""
    out = json.loads(run(["python", "-c", check], cwd=base, env=env).stdout)
    assert out["file"].startswith(str(base / "venv")), out["file"]
    assert out["bad"] == []


def test_run_ingest_detect_site_and_publish_outside_the_repository(venv):
    base, env = venv
    cells = [dict(SMALL, server="valkey:9.1.2"), dict(SMALL, server="valkey:9.1.2", io_threads=2)]
    args = [a for c in cells for a in ("--cell", json.dumps(c))]
    run(["vkbench", "run", *args, "--out", "results", "--run-id", "wheel-1", "--machine-class", "wheel-box"], cwd=base, env=env, timeout=400)
    results = sorted((base / "results").glob("*.json"))
    assert len(results) == 2
    run(["vkbench", "ingest", "results", "--history", "history"], cwd=base, env=env)
    run(["vkbench", "detect", "--history", "history", "--format", "json"], cwd=base, env=env)
    built = run(["vkbench", "site", "build", "--history", "history", "--out", "site"], cwd=base, env=env).stdout
    assert "full build" in built
    check_site(base / "site", series=4)  # 2 cells x SET, GET

    run(["git", "init", "-q", "--bare", "pages.git"], cwd=base)
    run(["vkbench", "publish", "results", "--repo-dir", "pages.git", "--site-out", "site"], cwd=base, env=env)
    run(["git", "clone", "-q", "--branch", "gh-pages", "pages.git", "pages"], cwd=base)
    check_site(base / "pages" / "site", series=4)


def check_site(site: Path, series: int) -> None:
    vendor = site / "assets" / "vendor"
    assert (vendor / "uPlot.iife.min.js").read_bytes().startswith(b"/*! https://github.com/leeoniya/uPlot (v1.6.32)")
    assert (vendor / "uPlot.min.css").is_file() and (vendor / "uPlot.LICENSE.txt").is_file()
    refs = json.loads((site / "data" / "reference.json").read_text())["references"]
    assert len(refs) == len(list((REPO / "results" / "reference").glob("*.json")))
    assert {r["group"] for r in refs} >= {"Raspberry Pi CM4 blog", "Valkey 8 launch (c7g.16xlarge)"}
    index = json.loads((site / "data" / "index.json").read_text())
    assert len(index["series"]) == series
    assert (site / "data" / "build-manifest.json").is_file()
