#!/usr/bin/env python3
"""Refresh the site's vendored front-end files (bench/vkbench/site/vendor/) from site-src/node_modules.

The package ships uPlot itself so that `vkbench site build` works from a wheel or sdist anywhere,
with no npm and no checkout. The version is the one site-src/package-lock.json pins; `npm ci`
(tools/setup/site.sh) installs it and checks the tarball against the lock file's integrity,
so copying from node_modules after `npm ci` copies exactly what the lock file pins.

    tools/setup/site.sh && .venv/bin/python tools/sync_site_vendor.py          # refresh
    .venv/bin/python tools/sync_site_vendor.py --check                         # exit 1 if stale

vendor/manifest.json records, per package, the version, the lock file's integrity and license,
and the sha256 of every vendored file; tests/unit/site/test_site_vendor.py checks all of it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SITE_SRC = REPO / "site-src"
VENDOR = REPO / "bench" / "vkbench" / "site" / "vendor"

#: npm package -> {file in the package: name in vendor/<package>/}: uPlot, and d3-flame-graph with
#: the d3 modules its UMD build needs (vkbench.site.build.FLAMEGRAPH_PARTS concatenates them).
PACKAGES = {
    "uplot": {"dist/uPlot.iife.min.js": "uPlot.iife.min.js", "dist/uPlot.min.css": "uPlot.min.css", "LICENSE": "LICENSE"},
    "d3-flame-graph": {"dist/d3-flamegraph.umd.min.js": "d3-flamegraph.umd.min.js", "dist/d3-flamegraph.css": "d3-flamegraph.css", "LICENSE": "LICENSE"},
}
for _module in ("internmap", "d3-array", "d3-color", "d3-interpolate", "d3-dispatch", "d3-ease", "d3-format", "d3-selection",
                "d3-time", "d3-time-format", "d3-scale", "d3-timer", "d3-transition", "d3-hierarchy"):
    PACKAGES[_module] = {f"dist/{_module}.min.js": f"{_module}.min.js", "LICENSE": "LICENSE"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def locked(package: str, site_src: Path = SITE_SRC) -> dict:
    """The lock file's entry of a package (version, integrity, license)."""
    lock = json.loads((site_src / "package-lock.json").read_text())
    entry = lock["packages"].get(f"node_modules/{package}")
    if entry is None:
        raise SystemExit(f"error: {package} is not in site-src/package-lock.json")
    return entry


def installed_problem(package: str, site_src: Path = SITE_SRC) -> str | None:
    """Why node_modules does not hold exactly what the lock file pins (None when it does)."""
    want = locked(package, site_src)
    modules = site_src / "node_modules"
    try:
        installed = json.loads((modules / package / "package.json").read_text())
        hidden = json.loads((modules / ".package-lock.json").read_text())["packages"][f"node_modules/{package}"]
    except (OSError, KeyError, json.JSONDecodeError):
        return f"site-src/node_modules has no {package}: run tools/setup/site.sh (npm ci in site-src/)"
    if installed.get("version") != want["version"] or hidden.get("integrity") != want["integrity"]:
        return (f"site-src/node_modules holds {package} {installed.get('version')} ({hidden.get('integrity')}), "
                f"the lock file pins {want['version']} ({want['integrity']}): run tools/setup/site.sh")
    return None


def manifest_for(site_src: Path = SITE_SRC) -> dict:
    out = {"comment": "written by tools/sync_site_vendor.py from site-src/node_modules after npm ci; do not edit", "packages": {}}
    for package, files in PACKAGES.items():
        want = locked(package, site_src)
        out["packages"][package] = {
            "version": want["version"], "integrity": want["integrity"], "license": want.get("license"),
            "files": {dest: sha256(site_src / "node_modules" / package / src) for src, dest in files.items()},
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when the vendored files are stale")
    args = ap.parse_args()
    for package in PACKAGES:
        problem = installed_problem(package)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 1
    manifest = manifest_for()
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if args.check:
        stale = (VENDOR / "manifest.json").read_text() != text if (VENDOR / "manifest.json").is_file() else True
        for package, files in PACKAGES.items():
            for src, dest in files.items():
                have = VENDOR / package / dest
                stale |= not have.is_file() or sha256(have) != manifest["packages"][package]["files"][dest]
        print("vendor: stale, run tools/sync_site_vendor.py" if stale else "vendor: up to date")
        return 1 if stale else 0
    for package, files in PACKAGES.items():
        shutil.rmtree(VENDOR / package, ignore_errors=True)
        (VENDOR / package).mkdir(parents=True)
        for src, dest in files.items():
            shutil.copyfile(SITE_SRC / "node_modules" / package / src, VENDOR / package / dest)
        print(f"vendor: {package} {manifest['packages'][package]['version']} ({len(files)} files)")
    (VENDOR / "manifest.json").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
