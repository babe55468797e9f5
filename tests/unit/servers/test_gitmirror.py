"""Ref resolution through the per-URL mirror, on small local repositories (no network, no build)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers import source_build
from vkbench.servers.gitmirror import Mirror, git_error, mirror_name, redact
from vkbench.servers.catalog import map_version
from vkbench.servers.resolve import is_source_version

from .helpers import git, linear_repo


@pytest.fixture
def upstream(tmp_path: Path) -> dict:
    repo = tmp_path / "upstream"
    commits = linear_repo(repo, 3)
    git(repo, "tag", "8.0.1", commits[0])
    git(repo, "branch", "8.0", commits[1])
    return {"url": f"file://{repo}", "path": repo, "commits": commits}


def test_refs_resolve_to_full_commits(upstream, cache_root):
    mirror = Mirror.for_url(upstream["url"], cache_root)
    first, second, third = upstream["commits"]
    assert mirror.resolve("unstable") == third
    assert mirror.resolve("8.0") == second            # a release branch, not the packaged 8.0.1
    assert mirror.resolve("8.0.1") == first           # a tag
    assert mirror.resolve(second[:7]) == second       # a short SHA
    assert mirror.resolve(first.upper()) == first     # a full SHA, any case
    assert mirror.first_parent_range(first, third) == [second, third]
    assert mirror.is_ancestor(first, third) and not mirror.is_ancestor(third, first)
    assert mirror.commit_time(first) == 1727740800


def test_one_mirror_per_url(upstream, tmp_path, cache_root):
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream["path"]), str(other)], check=True)
    a = Mirror.for_url(upstream["url"], cache_root)
    b = Mirror.for_url(f"file://{other}", cache_root)
    assert a.path != b.path and a.path.parent == b.path.parent
    a.resolve("unstable")
    assert not b.path.exists()


def test_unknown_short_sha_and_ref_keep_gits_reason(upstream, cache_root):
    mirror = Mirror.for_url(upstream["url"], cache_root)
    with pytest.raises(MissingBinaryError) as err:
        mirror.resolve("abcdef1")
    assert "abcdef1" in err.value.message and "SHA" in err.value.hint
    with pytest.raises(MissingBinaryError) as err:
        mirror.resolve("no-such-branch")
    assert "fatal:" in err.value.message


@pytest.mark.parametrize("ref", ["--upload-pack=x", "a..b", "-b", "a b", ""])
def test_bad_refs_are_refused(upstream, cache_root, ref):
    with pytest.raises(MissingBinaryError):
        Mirror.for_url(upstream["url"], cache_root).resolve(ref)


def test_grammar_and_helpers():
    assert source_build.split_source("8.0.1@source") == ("8.0.1", True)
    assert source_build.split_source("unstable") == ("unstable", False)
    assert is_source_version("valkey", "8.0.1@source") and is_source_version("valkey", "unstable")
    assert is_source_version("valkey", "c419524")
    assert not is_source_version("valkey", "8.0.1") and not is_source_version("redis", "unstable")
    assert not is_source_version("valkey", "/opt/valkey-server")
    # Release aliases are releases, never refs: compose must run their image, not a source build.
    for alias in ("9.1", "9", "8.0", "latest"):
        assert not is_source_version("valkey", alias), alias
    assert is_source_version("valkey", "8.0@source")
    # A short SHA of digits only is a ref, not a release "1234567".
    assert is_source_version("valkey", "1234567")
    assert map_version("valkey", "1234567") == "1234567"
    assert redact("https://x-access-token:abc@github.com/o/r") == "https://***@github.com/o/r"
    assert mirror_name("https://github.com/valkey-io/valkey.git").startswith("valkey-")
    assert mirror_name("a") != mirror_name("b")
    assert git_error("hint: x\nfatal: one\nfatal: two\n") == "fatal: one\nfatal: two"


def test_build_config_identity_and_differences(monkeypatch):
    monkeypatch.delenv("VKBENCH_BUILD_MALLOC", raising=False)
    libc = source_build.BuildConfig.from_env()
    assert libc.malloc == "libc"
    monkeypatch.setenv("VKBENCH_BUILD_MALLOC", "jemalloc")
    jemalloc = source_build.BuildConfig.from_env()
    assert libc.config_id != jemalloc.config_id
    diffs = source_build.config_differences(libc.identity(), jemalloc.identity())
    assert diffs == ["malloc: 'libc' vs 'jemalloc'"]
    # Two commits built the same way differ only in what is per build: no warning.
    a = {**libc.identity(), "id": libc.config_id, "source_date_epoch": 1, "ccache": True}
    assert source_build.config_differences(a, {**a, "source_date_epoch": 2, "ccache": False}) == []
    assert "MALLOC=libc" in libc.make_args(Path("/w"))
    assert any(a.startswith("SERVER_CFLAGS=-ffile-prefix-map=/w=") for a in libc.make_args(Path("/w")))
    monkeypatch.setenv("VKBENCH_BUILD_MALLOC", "tcmalloc")
    with pytest.raises(MissingBinaryError):
        source_build.BuildConfig.from_env()


def test_cached_alias_from_another_url_is_not_served(cache_root, monkeypatch):
    config = source_build.BuildConfig()
    meta = {"source": "source-build", "code": {"url": "file:///a"}, "build_config": {"id": config.config_id}}
    assert source_build.alias_matches(meta, "file:///a", config)
    assert not source_build.alias_matches(meta, "file:///b", config)
    assert not source_build.alias_matches({**meta, "build_config": {"id": "other"}}, "file:///a", config)


def test_git_errors_never_show_a_token():
    """Git may name the URL it failed on with its credentials (older versions, some transports,
    remote helpers): git_error redacts every URL's user:token, and nothing else."""
    assert git_error("fatal: unable to access 'https://x-access-token:ghs_secret@github.com/o/r/': 403\n") == \
        "fatal: unable to access 'https://***@github.com/o/r/': 403"
    assert git_error("error: a\nfatal: could not read from https://tok@host/x and ssh://git@h/y\n") == \
        "error: a\nfatal: could not read from https://***@host/x and ssh://***@h/y"
    assert git_error("fatal: bad object deadbeef // at @ 3\n") == "fatal: bad object deadbeef // at @ 3"
