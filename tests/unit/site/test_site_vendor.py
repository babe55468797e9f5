"""The package's own copies of front-end assets and reference figures equal their sources.

bench/vkbench/site/vendor/ holds uPlot as site-src/package-lock.json pins it (refreshed by
tools/sync_site_vendor.py); bench/vkbench/reference/ holds results/reference/*.json. Both ship
in the wheel so that `vkbench site build` works outside the repository.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from vkbench.cli import main
from vkbench.site.build import vendor_dir
from vkbench.site.reference import load_references, packaged_reference_dir

REPO = Path(__file__).resolve().parents[3]
SITE_SRC = REPO / "site-src"
LOCK = json.loads((SITE_SRC / "package-lock.json").read_text())
MANIFEST = json.loads((vendor_dir() / "manifest.json").read_text())
from sync_site_vendor import PACKAGES  # noqa: E402  (vendored name <- path inside the npm package)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_manifest_pins_what_the_lock_file_pins():
    assert set(MANIFEST["packages"]) == set(PACKAGES) >= {"uplot", "d3-flame-graph"}
    for package, files in PACKAGES.items():
        locked = LOCK["packages"][f"node_modules/{package}"]
        entry = MANIFEST["packages"][package]
        assert (entry["version"], entry["integrity"], entry["license"]) == (locked["version"], locked["integrity"], locked["license"]), package
        assert set(entry["files"]) == set(files.values()), package


def test_vendored_files_match_the_manifest():
    for package, entry in MANIFEST["packages"].items():
        for name, digest in entry["files"].items():
            assert sha256((vendor_dir() / package / name).read_bytes()) == digest, f"vendor/{package}/{name} changed: run tools/sync_site_vendor.py"


def test_vendored_files_equal_what_npm_ci_installed():
    """node_modules is installed by tools/setup/site.sh (npm ci checks each tarball against the
    lock file's integrity and records it in node_modules/.package-lock.json)."""
    modules = SITE_SRC / "node_modules"
    installed = json.loads((modules / ".package-lock.json").read_text())["packages"]
    for package, files in PACKAGES.items():
        assert (modules / package).is_dir(), f"site-src/node_modules/{package} missing: run tools/setup/site.sh"
        assert installed[f"node_modules/{package}"]["integrity"] == LOCK["packages"][f"node_modules/{package}"]["integrity"]
        for src, name in files.items():
            assert (vendor_dir() / package / name).read_bytes() == (modules / package / src).read_bytes(), f"{package}/{name}: run tools/sync_site_vendor.py"


def npm_cached_tarball(integrity: str) -> Path | None:
    """npm's content-addressed cache stores the tarball under the digest of its integrity."""
    algo, b64 = integrity.split("-", 1)
    digest = base64.b64decode(b64).hex()
    cache = Path(os.environ.get("npm_config_cache") or Path.home() / ".npm")
    path = cache / "_cacache" / "content-v2" / algo / digest[:2] / digest[2:4] / digest[4:]
    return path if path.is_file() else None


def test_vendored_files_come_from_the_tarballs_the_lock_file_names():
    """Where npm's cache holds a tarball (after `npm ci` on this machine), check it against the
    lock file's sha512 and compare the vendored files with its members; node_modules (compared
    above) stands in for a tarball another cache location holds."""
    for package, files in PACKAGES.items():
        integrity = LOCK["packages"][f"node_modules/{package}"]["integrity"]
        tarball = npm_cached_tarball(integrity)
        if tarball is None:
            assert (SITE_SRC / "node_modules" / package).is_dir()
            continue
        data = tarball.read_bytes()
        assert "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode() == integrity
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for src, name in files.items():
                member = tar.extractfile(f"package/{src}")
                assert member is not None and member.read() == (vendor_dir() / package / name).read_bytes(), f"{package}/{name}"


def test_packaged_references_equal_the_repository_ones():
    packaged = packaged_reference_dir()
    ours = {p.name: p.read_bytes() for p in sorted((REPO / "results" / "reference").glob("*.json"))}
    theirs = {p.name: p.read_bytes() for p in sorted(packaged.glob("*.json"))}
    assert ours and theirs == ours
    assert len(load_references(packaged)) == len(ours)


def test_no_code_walks_up_to_the_repository():
    """An installed package has no repository around it: package files come from importlib.resources."""
    offenders = [str(p.relative_to(REPO)) for p in sorted((REPO / "bench" / "vkbench").rglob("*.py")) if "parents[" in p.read_text()]
    assert not offenders, f"Path(__file__).parents[N] reaches outside the package in {offenders}"


def test_sync_tool_finds_the_vendored_files_current():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "sync_site_vendor.py"), "--check"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_site_build_defaults_to_the_packaged_references(small_history, tmp_path):
    root, _ = small_history
    main(["site", "build", "--history", str(root), "--out", str(tmp_path)])
    refs = json.loads((tmp_path / "data" / "reference.json").read_text())["references"]
    assert len(refs) == len(list(packaged_reference_dir().glob("*.json"))) > 0
