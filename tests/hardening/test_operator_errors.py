"""Issue 18, tracebacks where an operator needs a sentence: a full disk during ``ingest`` and
``site build``, a file-size limit (``ulimit -f``) and no usable port on 127.0.0.1 each end with
their own exit code, a message and a hint, no traceback, and nothing written half (a hash of the
target tree is equal before and after).

The full disk is a 1-4 MiB tmpfs mounted inside a private mount namespace (``unshare -m``): the
mount exists only for the shell that made it and disappears with it, whatever the test's
outcome. No port: ``unshare -n`` gives the run a network namespace whose loopback is down. Both
need root (or user namespaces); without them the tests are skipped, never failed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factory import make_result, write_result
from test_escapes import tree_hash

from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore

REPO = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT = 300     # x5 and more of what these take on a loaded 2-core machine

#: Prints tree_hash(argv[1]) (the tests' helper, imported the way pytest's pythonpath does).
HASHER = (
    "import sys; from pathlib import Path; "
    f"sys.path[:0] = {[str(REPO / 'tests' / 'hardening'), str(REPO / 'tests'), str(REPO / 'tests' / 'unit' / 'history')]!r}; "
    "from test_escapes import tree_hash; print(tree_hash(Path(sys.argv[1])))"
)


def child_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(tmp_path / "tmp"),
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "bench"), os.environ.get("PYTHONPATH")])))


def _can(*argv: str) -> bool:
    if shutil.which(argv[0]) is None:
        return False
    try:
        return subprocess.run([*argv, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_mount_ns = pytest.mark.skipif(not _can("unshare", "-m", "--propagation", "private"),
                                    reason="needs unshare -m (root or user namespaces) for a private tmpfs")
needs_net_ns = pytest.mark.skipif(not _can("unshare", "-n"), reason="needs unshare -n (root or user namespaces)")


def assert_sentence(proc: subprocess.CompletedProcess, code: int, *needles: str) -> None:
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, text[-3000:]
    assert proc.returncode == code, text[-3000:]
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text[-3000:]}"


def in_private_tmpfs(tmp_path: Path, size: str, setup: str, command: list[str], target: str) -> dict:
    """In a mount namespace of its own: a tmpfs of ``size`` on tmp_path/mnt, ``setup`` (shell,
    $MNT is the mount), the tree hash of $MNT/``target``, the disk filled to the last byte,
    ``command``, the hash again. Returns rc, output and both hashes (the tmpfs is gone after)."""
    (tmp_path / "mnt").mkdir()
    out = tmp_path / "child"
    out.mkdir()
    script = f"""
set -eu
mount -t tmpfs -o size={size},mode=0755 vkbench-test "$MNT"
{setup}
"$PY" -c "$HASHER" "$MNT/{target}" > "$OUT/before"
dd if=/dev/zero of="$MNT/filler" bs=4096 2>/dev/null || true
set +e
"$@" > "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/rc"
"$PY" -c "$HASHER" "$MNT/{target}" > "$OUT/after"
ls -A "$MNT" > "$OUT/listing"
"""
    env = dict(child_env(tmp_path), MNT=str(tmp_path / "mnt"), OUT=str(out), PY=sys.executable, HASHER=HASHER)
    subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script, "bash", *command],
                   env=env, check=True, timeout=CHILD_TIMEOUT)
    return {name: (out / name).read_text() for name in ("rc", "stdout", "stderr", "before", "after", "listing")}


@pytest.fixture
def seeded(tmp_path) -> Path:
    """A history with one result (under tmp_path/seed) and a new result whose raw output is
    256 KiB (more than a full disk or a 64 KiB file-size limit lets through)."""
    write_result(tmp_path / "old", make_result(run_id="old-run", timestamp="2026-11-02T02:00:00Z"))
    ingest(HistoryStore(tmp_path / "seed"), [tmp_path / "old"])
    result = make_result(run_id="new-run", timestamp="2026-11-20T02:00:00Z")
    write_result(tmp_path / "new", result)
    raw = tmp_path / "new" / f"{result['run']['cell_id']}.raw"
    raw.mkdir()
    (raw / "rep-1.txt").write_bytes(os.urandom(256 * 1024))
    return tmp_path


def vkbench(*args) -> list[str]:
    return [sys.executable, "-m", "vkbench", *map(str, args)]


@needs_mount_ns
def test_ingest_on_a_full_disk_says_so_and_leaves_the_history_whole(seeded):
    got = in_private_tmpfs(seeded, "2m", f'cp -a "{seeded / "seed"}" "$MNT/history"',
                           vkbench("ingest", seeded / "new", "--history", seeded / "mnt" / "history"), "history")
    proc = subprocess.CompletedProcess([], int(got["rc"]), got["stdout"], got["stderr"])
    assert_sentence(proc, 16, "no space left on the device", "hint: free space")
    assert got["after"] == got["before"]            # nothing lost, no temp file, no empty run folder
    assert got["listing"].split() == ["filler", "history"]


@needs_mount_ns
def test_site_build_on_a_full_disk_keeps_the_previous_site(seeded):
    ingest(HistoryStore(seeded / "seed"), [seeded / "new"])
    command = vkbench("site", "build", "--history", seeded / "seed", "--out", seeded / "mnt" / "site", "--full")
    got = in_private_tmpfs(seeded, "8m", f'"$PY" -m vkbench site build --history "{seeded / "seed"}" --out "$MNT/site" >/dev/null',
                           command, "site")
    proc = subprocess.CompletedProcess([], int(got["rc"]), got["stdout"], got["stderr"])
    assert_sentence(proc, 16, "no space left on the device", "hint: free space")
    assert got["after"] == got["before"]            # the previous site, whole; no stage folder left
    assert got["listing"].split() == ["filler", "site"]


def test_ingest_past_the_file_size_limit_says_so_and_leaves_the_history_whole(seeded):
    """``ulimit -f 64`` (KiB): the 256 KiB raw copy fails with EFBIG, not with SIGXFSZ."""
    history = seeded / "seed"
    before = tree_hash(history, seeded / "new")
    proc = subprocess.run(["bash", "-c", 'ulimit -f 64; exec "$@"', "bash",
                           *vkbench("ingest", seeded / "new", "--history", history)],
                          env=child_env(seeded), capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    assert_sentence(proc, 17, "file-size limit", "ulimit -f unlimited")
    assert tree_hash(history, seeded / "new") == before


@needs_net_ns
@pytest.mark.integration
def test_run_without_a_loopback_says_so_and_leaves_nothing(tmp_path):
    """In a network namespace 127.0.0.1 cannot be bound: exit 18 at once (not 2000 probes and a
    traceback), and no temp folder, pid file or result left."""
    cell = {"server": "valkey:9.1.2", "requests": 1000, "repetitions": 1, "preload": False, "tests": ["set"]}
    env = child_env(tmp_path)
    proc = subprocess.run(["unshare", "-n", *vkbench("run", "--cell", json.dumps(cell), "--out", tmp_path / "out",
                                                     "--state-dir", tmp_path / "state")],
                          env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    assert_sentence(proc, 18, "no TCP port can be bound and reached on 127.0.0.1", "ip link set lo up")
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not list((tmp_path / "state").glob("*.json")) if (tmp_path / "state").exists() else True
    assert not list((tmp_path / "out").glob("*.json")) if (tmp_path / "out").exists() else True


@pytest.mark.integration
def test_run_with_every_port_of_its_range_taken_says_so(tmp_path):
    """The range narrowed to one port (VKBENCH_PORT_RANGE) that this test holds: exit 18 with
    the range named, nothing left behind."""
    import random
    import socket

    with socket.socket() as holder:
        # A port held for the whole run, inside the range VKBENCH_PORT_RANGE accepts (1024-55535):
        # the OS's own choice (port 0) may lie above it (ip_local_port_range ends at 60999).
        for _ in range(200):
            try:
                holder.bind(("127.0.0.1", random.randrange(20000, 55000)))
                break
            except OSError:
                continue
        else:
            pytest.fail("no free port to hold in 20000-55000")
        holder.listen(1)
        port = holder.getsockname()[1]
        cell = {"server": "valkey:9.1.2", "requests": 1000, "repetitions": 1, "preload": False, "tests": ["set"]}
        env = dict(child_env(tmp_path), VKBENCH_PORT_RANGE=f"{port}-{port}")
        proc = subprocess.run(vkbench("run", "--cell", json.dumps(cell), "--out", tmp_path / "out",
                                      "--state-dir", tmp_path / "state"),
                              env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    assert_sentence(proc, 18, f"found only 0 of 1 free port(s) on 127.0.0.1 in {port}-{port}", "--cleanup-only")
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_allocator_names_the_host_it_could_not_bind():
    from vkbench.errors import NoFreePortError
    from vkbench.topology.procs import allocate_ports

    with pytest.raises(NoFreePortError) as caught:
        allocate_ports(1, cluster=False, host="192.0.2.1")      # TEST-NET-1: never an address of this machine
    assert "no TCP port can be bound and reached on 192.0.2.1" in caught.value.message
    assert caught.value.exit_code == 18
