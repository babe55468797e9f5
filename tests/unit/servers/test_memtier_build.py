"""The memtier recipe's checks that need no build: the archive's sha256 and the patches."""

from __future__ import annotations

from pathlib import Path

import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers import memtier_build

REPO = Path(__file__).resolve().parents[3]


def test_an_archive_with_another_sha256_is_refused(tmp_path):
    fake = tmp_path / "memtier_benchmark-2.3.0.tar.gz"
    fake.write_bytes(b"not the release")
    with pytest.raises(MissingBinaryError, match="expected c093d855"):
        memtier_build.verify(fake, str(fake))


def test_source_defaults_to_github_and_takes_the_environment(monkeypatch):
    monkeypatch.delenv("VKBENCH_MEMTIER_SOURCE", raising=False)
    assert memtier_build.source().startswith("https://github.com/RedisLabs/memtier_benchmark/")
    monkeypatch.setenv("VKBENCH_MEMTIER_SOURCE", "/somewhere/memtier_benchmark-2.3.0.tar.gz")
    assert memtier_build.source() == "/somewhere/memtier_benchmark-2.3.0.tar.gz"


def test_patches_ship_with_the_package_and_match_the_image_copies():
    patches = dict(memtier_build.patches())
    assert set(patches) == {"memtier-2.3.0-totals-latency.patch", "memtier-2.3.0-timestamp-average.patch"}
    for name, body in patches.items():
        assert (REPO / "compose" / "images" / "memtier-patches" / name).read_bytes() == body
        assert b"--- a/" in body and b"+++ b/" in body
    dockerfile = (REPO / "compose" / "images" / "bench.Dockerfile").read_text()
    assert memtier_build.MEMTIER_SHA256 in dockerfile


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _setup_script(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """tools/setup/memtier.sh with a memtier_benchmark 2.3.0 on PATH, an empty cache of its own, the
    build dependencies reported present (stubs: nothing is installed or built) and an archive
    source that does not exist, so a build attempt stops at once with its own error."""
    import os

    stubs = tmp_path / "bin"
    stubs.mkdir()
    _stub(stubs, "memtier_benchmark", 'echo "memtier_benchmark 2.3.0"')
    _stub(stubs, "dpkg-query", 'echo "install ok installed"')
    for tool in memtier_build.BUILD_TOOLS:
        _stub(stubs, tool, "exit 0")
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "VKBENCH_CACHE": str(tmp_path / "cache"),
           "VKBENCH_MEMTIER_SOURCE": str(tmp_path / "no-such-archive.tar.gz")}
    env.pop("VKBENCH_TOOL_MEMTIER_BENCHMARK", None)
    return ["bash", str(REPO / "tools" / "setup" / "memtier.sh")], env


def test_setup_builds_into_the_cache_although_a_memtier_is_on_path(tmp_path):
    import subprocess

    argv, env = _setup_script(tmp_path)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert "cached" not in proc.stdout, "a memtier_benchmark on PATH was taken for the cache's build"
    # It went on to build 2.3.0 into the cache, and stopped at the archive that is not there.
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no-such-archive.tar.gz is not a file" in proc.stderr
    assert (tmp_path / "bin" / "memtier_benchmark").is_file()   # the PATH copy is left alone


def test_setup_only_checks_a_cached_build(tmp_path):
    import subprocess

    argv, env = _setup_script(tmp_path)
    entry = tmp_path / "cache" / "memtier" / memtier_build.MEMTIER_VERSION
    (entry / "bin").mkdir(parents=True)
    _stub(entry / "bin", "memtier_benchmark", 'echo "memtier_benchmark 2.3.0"')
    (entry / "meta.json").write_text('{"engine": "memtier", "version": "2.3.0"}\n')
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "memtier_benchmark: cached\n"), proc.stderr


def test_a_build_step_that_times_out_takes_its_whole_process_group_down(tmp_path, monkeypatch):
    """make runs sub-makes and compilers: on a timeout (or Ctrl-C) every one of them stops, not
    only the process vkbench started."""
    import os
    import time

    monkeypatch.setattr(memtier_build, "BUILD_TIMEOUT_S", 1.0)
    pid_file = tmp_path / "child.pid"
    log = tmp_path / "build.log"
    # A "make" that leaves a child behind: the child must not outlive the timeout.
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    try:
        with pytest.raises(MissingBinaryError, match="memtier build: make.*timed out"):
            memtier_build._run(["sh", "-c", script], tmp_path, log, "make")
        assert time.monotonic() - started < 30
        child = int(pid_file.read_text())
        deadline = time.monotonic() + 10
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(child), "the build step's child outlived the timeout"
        assert "$ sh -c" in log.read_text()
    finally:
        if pid_file.exists() and _running(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), 9)     # the sleep this test started


def _running(pid: int) -> bool:
    """Alive and not a zombie (a reparented child may wait a moment to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
