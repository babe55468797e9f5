"""Source builds for real: a commit of Valkey's repository built with ccache, cached by commit and
build configuration, benchmarked on both backends with the reported commit checked; the build's
process group dies with vkbench; a repository that is not Valkey gives a clear error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vkbench.results.io import load_result
from vkbench.servers import cache, resolve_server, source_build
from vkbench.servers.gitmirror import Mirror

from .conftest import BASE_COMMIT, git

pytestmark = pytest.mark.sourcebuild

CELL = {"requests": 20000, "keyspace": 5000, "pipeline": 16, "repetitions": 1, "warmup": 2000, "tests": ["set", "get"]}


def vkbench(*args: str, timeout: float = 1800, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vkbench", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="session")
def base_build(valkey_url):
    """BASE_COMMIT built once for the session (and kept in the cache for later ones)."""
    began = time.monotonic()
    binary = resolve_server("valkey", BASE_COMMIT)
    return binary, time.monotonic() - began


def test_short_sha_builds_once_with_the_code_recorded(base_build, valkey_url):
    binary, _ = base_build
    full = Mirror.for_url(valkey_url).resolve(BASE_COMMIT)
    assert len(full) == 40 and full.startswith(BASE_COMMIT)
    assert binary.source in ("source-build", "cache")
    assert binary.code["commit"] == full and binary.code["ref"] == BASE_COMMIT
    assert binary.config["malloc"] == "libc"                       # as the PyPI 9.x wheels
    assert binary.config["cc_version"] and binary.config["make_vars"]["BUILD_TLS"] == "no"
    meta = cache.read_meta(binary.path.parent.parent)
    assert meta["symbols"] is True                                  # not stripped: profiles need them
    assert meta["build_config"]["source_date_epoch"] == meta["code"]["commit_time"]
    version = subprocess.run([str(binary.path), "--version"], capture_output=True, text=True, check=True).stdout
    assert f"sha={full[:8]}" in version
    # A second resolution is a cache hit: no fetch, no build (source "cache" says so; the time
    # bound only rules out a rebuild, minutes, and leaves a loaded machine room).
    began = time.monotonic()
    again = resolve_server("valkey", BASE_COMMIT)
    assert time.monotonic() - began < 60
    assert again.build_id == binary.build_id and again.source == "cache"


def test_same_commit_through_another_url_has_its_own_mirror_and_reuses_the_build(base_build, valkey_url, tmp_path):
    binary, _ = base_build
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    git(other, "fetch", "-q", "--update-shallow", valkey_url, "+refs/heads/unstable:refs/heads/unstable")
    url = f"file://{other}"
    assert Mirror.for_url(url).path != Mirror.for_url(valkey_url).path
    entry = source_build.fetch(BASE_COMMIT, url=url)
    meta = cache.read_meta(entry)
    assert meta["code"]["url"] == url
    assert meta["alias_of"] == cache.read_meta(binary.path.parent.parent)["alias_of"]      # one build
    # The alias written for the other URL is not served when the default URL is asked again.
    assert not source_build.alias_matches(meta, valkey_url, source_build.BuildConfig.from_env())


def test_release_branch_and_tag_resolve_differently(valkey_url):
    mirror = Mirror.for_url(valkey_url)
    branch, tag = mirror.resolve("8.0"), mirror.resolve("8.0.1")
    assert branch != mirror.resolve("unstable")
    assert mirror.is_ancestor(tag, branch) or branch == tag


def test_native_run_reports_the_commit_asked(base_build, tmp_path):
    binary, _ = base_build
    cell = json.dumps({**CELL, "server": f"valkey:{BASE_COMMIT}"})
    proc = vkbench("run", "--cell", cell, "--out", str(tmp_path), "--run-id", "src-native")
    assert proc.returncode == 0, proc.stderr
    result = load_result(next(tmp_path.glob("*.json")))
    subject = result["subject"]
    assert subject["commit"] == binary.code["commit"] and subject["code"]["commit"] == binary.code["commit"]
    assert subject["code"]["ref"] == BASE_COMMIT and subject["code"]["url"]
    assert subject["build"]["config"]["malloc"] == "libc"
    assert subject["build"]["id"] == binary.build_id


@pytest.mark.compose
def test_compose_run_uses_the_build_and_checks_its_commit(base_build, tmp_path):
    binary, _ = base_build
    env = containers_env()
    cell = json.dumps({**CELL, "server": f"valkey:{BASE_COMMIT}"})
    proc = vkbench("run", "--backend", "compose", "--cell", cell, "--out", str(tmp_path), "--run-id", "src-compose",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    result = load_result(next(tmp_path.glob("*.json")))
    subject = result["subject"]
    assert result["run"]["backend"] == "compose"
    # One binary in both backends: the build is the binary's own (its hash, as a native run
    # records it), run in the local image made from it.
    assert subject["build"]["id"] == binary.build_id and "vkbench-valkey:src-" in subject["build"]["image"]["name"]
    assert subject["code"]["commit"] == binary.code["commit"]
    assert subject["server_version"] and subject["build"]["config"]["malloc"] == "libc"


def test_a_repository_that_is_not_valkey_is_a_clear_error(tmp_path):
    repo = tmp_path / "not-valkey"
    git(tmp_path, "init", "-q", str(repo))
    (repo / "Makefile").write_text("all:\n\t@echo nothing to build\n")
    git(repo, "add", "Makefile")
    git(repo, "commit", "-q", "-m", "a Makefile that builds nothing")
    env = {"VKBENCH_VALKEY_GIT_URL": f"file://{repo}", "VKBENCH_CACHE": str(tmp_path / "cache")}
    proc = vkbench("servers", "fetch", "valkey", "HEAD", timeout=300, env=env)
    assert proc.returncode == 3, proc.stderr
    assert "no src/valkey-server" in proc.stderr and "Traceback" not in proc.stderr
    proc = vkbench("servers", "fetch", "valkey", "no-such-branch", timeout=300, env=env)
    assert proc.returncode == 3 and "fatal:" in proc.stderr


def containers_env() -> dict[str, str]:
    """What `. tools/containers-env.sh` exports (as tests/integration/test_compose_backend.py does)."""
    if os.environ.get("DOCKER_HOST"):
        return {}
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(["bash", "-c", f". {repo}/tools/containers-env.sh && env -0"], capture_output=True, check=True)
    exported = dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    names = ("DOCKER_HOST", "DOCKER_CONFIG", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "VKBENCH_CONTAINERS_STATE",
             "VKBENCH_CONTAINERS_BIN")
    return {k: exported[k] for k in names if k in exported}


def _group_alive(pgid: int) -> list[str]:
    out = subprocess.run(["pgrep", "-l", "-g", str(pgid)], capture_output=True, text=True).stdout   # process group
    return [line for line in out.splitlines() if line.strip()]


def _start_build_and_wait_for_make(tmp_path: Path, valkey_url: str) -> tuple[subprocess.Popen, int, Path]:
    cache_root = tmp_path / "cache"
    env = {**os.environ, "VKBENCH_CACHE": str(cache_root), "VKBENCH_VALKEY_GIT_URL": valkey_url, "VKBENCH_CCACHE": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "vkbench", "servers", "fetch", "valkey", BASE_COMMIT], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-P", str(proc.pid), "-f", "vkbench-build"], capture_output=True, text=True)
        leaders = found.stdout.split()
        if leaders and any("make" in line for line in _group_alive(int(leaders[0]))):
            return proc, int(leaders[0]), cache_root
        assert proc.poll() is None, "vkbench ended before make started"
        time.sleep(0.5)
    proc.kill()
    raise AssertionError("make did not start within 300 s")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_vkbench_mid_build_kills_make(tmp_path, valkey_url, sig):
    proc, pgid, cache_root = _start_build_and_wait_for_make(tmp_path, valkey_url)
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _group_alive(pgid) == [], "the build outlived vkbench"
    if sig == signal.SIGTERM:      # cleaned up by vkbench itself; a SIGKILL leaves it to the next run
        assert list((cache_root / ".tmp").iterdir()) == []
        assert not (cache_root / "valkey").exists()
