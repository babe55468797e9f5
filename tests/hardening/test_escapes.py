"""Issue 18, writes outside the history or the checkout: each case is refused with its exit code
and a message, prints no traceback, and writes nothing outside (a hash of folders this test
created is equal before and after; non-regular files are hashed by name only, never opened).

Commands run in-process through ``vkbench.cli.main`` (the real CLI edge), except the SIGTERM
case, which needs a process to signal."""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest


from cli_outcome import vk  # noqa: E402
from factory import make_result, write_result  # noqa: E402

from vkbench.errors import UsageError  # noqa: E402
from vkbench.history.publish import publish  # noqa: E402
from vkbench.history.ingest import ingest  # noqa: E402
from vkbench.history.store import HistoryStore  # noqa: E402
from vkbench.paths import check_branch_name, safe_subpath  # noqa: E402


def tree_hash(*roots: Path) -> str:
    """Names, modes, link targets and regular files' bytes under ``roots`` (FIFOs and devices
    by name and type only: opening one could block or never end)."""
    digest = hashlib.sha256()
    for root in roots:
        if not os.path.lexists(root):
            digest.update(f"{root}: absent\n".encode())
            continue
        for path in sorted([root, *root.rglob("*")]):
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                digest.update(f"L {rel} -> {os.readlink(path)}\n".encode())
            elif stat.S_ISDIR(st.st_mode):
                digest.update(f"D {rel} {st.st_mode & 0o777:o}\n".encode())
            elif stat.S_ISREG(st.st_mode):
                digest.update(f"F {rel} {st.st_mode & 0o777:o} ".encode() + hashlib.sha256(path.read_bytes()).digest())
            else:
                digest.update(f"S {rel} {stat.S_IFMT(st.st_mode):o}\n".encode())
    return digest.hexdigest()


def assert_refused(code: int, text: str, expected: int, *needles: str) -> None:
    assert "Traceback" not in text
    assert code == expected, text[-1500:]
    for needle in needles:
        assert needle in text, f"{needle!r} not in: {text[-1500:]}"


def git(*args, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *map(str, args)], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def work(tmp_path) -> Path:
    """A history with one result of 2026-11 (so runs/2026-11, series/ and fingerprints/ exist),
    one new result of the same month to ingest, and an ``elsewhere`` folder a link points to."""
    write_result(tmp_path / "old", make_result(run_id="old-run", timestamp="2026-11-02T02:00:00Z"))
    ingest(HistoryStore(tmp_path / "history"), [tmp_path / "old"])
    write_result(tmp_path / "new", make_result(run_id="new-run", timestamp="2026-11-20T02:00:00Z"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_text("not the history's\n")
    return tmp_path


def _relink(link: Path, target: Path) -> None:
    """Replace ``link`` (a real folder) by a symlink to ``target`` holding the same content."""
    import shutil

    shutil.copytree(link, target, dirs_exist_ok=True, symlinks=True)
    shutil.rmtree(link)
    link.symlink_to(target, target_is_directory=True)


# -- ingest: a symlinked folder on the way to a destination ----------------------------------

@pytest.mark.parametrize("folder", ["runs/2026-11", "runs", "fingerprints", "series"])
def test_ingest_refuses_a_symlinked_folder(work, folder):
    _relink(work / "history" / folder, work / "elsewhere" / "target")
    before = tree_hash(work / "history", work / "elsewhere", work / "new")
    code, text = vk("ingest", work / "new", "--history", work / "history")
    assert_refused(code, text, 7, "symlink", folder.split("/")[-1])
    assert tree_hash(work / "history", work / "elsewhere", work / "new") == before


def test_ingest_refuses_a_symlinked_run_folder(work):
    (work / "history" / "runs" / "2026-11" / "new-run").symlink_to(work / "elsewhere", target_is_directory=True)
    before = tree_hash(work / "history", work / "elsewhere")
    code, text = vk("ingest", work / "new", "--history", work / "history")
    assert_refused(code, text, 7, "symlink", "new-run")
    assert tree_hash(work / "history", work / "elsewhere") == before


def test_ingest_through_real_folders_still_works(work):
    code, text = vk("ingest", work / "new", "--history", work / "history", "--json")
    assert code == 0, text
    assert (work / "history" / "runs" / "2026-11" / "new-run").is_dir()


# -- publish: flags that name places and branches --------------------------------------------

@pytest.fixture
def remote(work) -> Path:
    bare = work / "pages.git"
    git("init", "-q", "--bare", bare)
    return bare


def _publish_args(work: Path, remote: Path, *extra: str) -> list:
    return ["publish", work / "new", "--repo-dir", remote, "--no-detect", *extra]


@pytest.mark.parametrize("subdir", ["/abs/dir", "../x", "a/../../x", "", "."])
def test_publish_refuses_a_history_subdir_outside_the_checkout(work, remote, subdir):
    before = tree_hash(remote, work / "elsewhere")
    target = work / "abs-target"
    value = str(target) if subdir == "/abs/dir" else subdir
    code, text = vk(*_publish_args(work, remote, "--history-subdir", value))
    assert_refused(code, text, 2, "--history-subdir")
    assert tree_hash(remote, work / "elsewhere") == before
    assert not target.exists()


@pytest.mark.parametrize("site_out", ["/abs/site", "../site", "history", "."])
def test_publish_refuses_a_site_out_outside_the_checkout_or_on_the_history(work, remote, site_out):
    before = tree_hash(remote)
    code, text = vk(*_publish_args(work, remote, "--site-out", site_out))
    assert_refused(code, text, 2, "--site-out")
    assert tree_hash(remote) == before


@pytest.mark.parametrize("branch", ["-f", "--force", "+gh-pages", "HEAD", "refs/heads/x", "a..b", "x.lock", "a b", "x\ny", ""])
def test_publish_refuses_a_branch_that_is_not_a_plain_name(work, remote, branch):
    before = tree_hash(remote)
    code, text = vk(*_publish_args(work, remote, f"--branch={branch}"))
    assert_refused(code, text, 2, "--branch", "not a plain branch name")
    assert tree_hash(remote) == before


@pytest.mark.parametrize("branch", ["-f", "+gh-pages", "HEAD", "refs/heads/x", "a..b", "x.lock"])
def test_the_library_refuses_the_same_branches(work, remote, branch):
    before = tree_hash(remote)
    with pytest.raises(UsageError, match="not a plain branch name"):
        publish([work / "new"], remote, branch)
    assert tree_hash(remote) == before


@pytest.mark.parametrize("name", ["gh-pages", "main", "release/1.2", "v8.0_x"])
def test_plain_branch_names_pass(name):
    assert check_branch_name(name) == name


@pytest.mark.parametrize("repo_dir", ["--upload-pack=touch pwned", "-oProxyCommand=x"])
def test_publish_refuses_a_repo_dir_that_reads_as_an_option(work, repo_dir):
    before = tree_hash(work / "elsewhere", work / "new")
    code, text = vk("publish", work / "new", f"--repo-dir={repo_dir}", "--no-detect", "--workdir", work / "checkout")
    assert_refused(code, text, 2, "--repo-dir")
    assert tree_hash(work / "elsewhere", work / "new") == before
    assert not (work / "checkout").exists() and not (work / "pwned").exists()


def test_library_refuses_a_history_subdir_outside():
    for value in ("/abs", "../x", "x/../../y"):
        with pytest.raises(UsageError):
            safe_subpath(value, "--history-subdir")
    assert str(safe_subpath("history", "--history-subdir")) == "history"


def test_publish_refuses_a_symlinked_history_on_the_branch(work, remote):
    """A commit on gh-pages can carry ``history`` as a symlink (to an absolute path)."""
    seed = work / "seed"
    seed.mkdir()
    git("init", "-q", "-b", "gh-pages", cwd=seed)
    (seed / "history").symlink_to(work / "elsewhere", target_is_directory=True)
    git("add", "-A", cwd=seed)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hostile", cwd=seed)
    git("push", "-q", remote, "gh-pages", cwd=seed)
    before = tree_hash(remote, work / "elsewhere")
    code, text = vk(*_publish_args(work, remote, "--workdir", work / "checkout"))
    assert_refused(code, text, 7, "symlink", "history")
    assert tree_hash(remote, work / "elsewhere") == before


# -- site build: the output may not be the history or hold it ----------------------------------

@pytest.mark.parametrize("out", ["history", "."])
def test_site_build_refuses_an_out_that_overlaps_the_history(work, out):
    before = tree_hash(work / "history")
    code, text = vk("site", "build", "--history", work / "history", "--out", work / out, "--no-reference")
    assert_refused(code, text, 2, "overlaps the history")
    assert tree_hash(work / "history") == before


# -- SIGTERM during publish: the temporary checkout goes -------------------------------------

def test_sigterm_during_publish_removes_the_temporary_checkout(work, remote):
    """A ``git`` stand-in on PATH signals when publish reached ``ls-remote`` and then waits; the
    test sends SIGTERM there. Generous timeouts only to avoid a hang."""
    bin_dir = work / "bin"
    bin_dir.mkdir()
    real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    marker = work / "reached"
    (bin_dir / "git").write_text(f'#!/bin/sh\nif [ "$1" = ls-remote ]; then : > "{marker}"; exec sleep 60; fi\nexec "{real_git}" "$@"\n')
    (bin_dir / "git").chmod(0o755)
    tmp = work / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", TMPDIR=str(tmp))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2] / "bench"), os.environ.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-m", "vkbench", "publish", str(work / "new"), "--repo-dir", str(remote), "--no-detect"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"publish never reached git ls-remote: {proc.poll()} {proc.stdout.read() if proc.poll() is not None else ''}"
        assert list(tmp.glob("vkbench-publish-*")), "the temporary checkout should exist while publishing"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in out
    assert not list(tmp.glob("vkbench-publish-*")), f"temporary checkout left behind: {list(tmp.iterdir())}"
