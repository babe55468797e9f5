"""`--require-branch`: the trusted path of ab.yml and bisect.yml (no reviewer) runs only commits
merged into the trusted repository's branch; anything else is refused before anything is built.
Small local repositories, no build (every fetcher refuses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vkbench.ab import require_on_branch
from vkbench.errors import UsageError

from .helpers import git, linear_repo
from cli_outcome import vk  # tests/cli_outcome.py


@pytest.fixture
def upstream(tmp_path: Path) -> dict:
    """unstable: three commits; a fork's pull request on top of the first (refs/pull/7/head); a
    tag named `unstable` on the fork's commit, and a branch `feature` holding it too."""
    repo = tmp_path / "upstream"
    merged = linear_repo(repo, 3)
    git(repo, "checkout", "-q", "-b", "feature", merged[0])
    (repo / "fork").write_text("a fork's change\n")
    git(repo, "add", "fork")
    git(repo, "commit", "-q", "-m", "a fork's change")
    fork = git(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", "refs/pull/7/head", fork)
    # A tag of the branch's name (git fetch prefers refs/tags/ over refs/heads/ for a bare name):
    # it must not stand in for the branch.
    git(repo, "tag", "unstable", fork)
    git(repo, "checkout", "-q", "unstable")
    return {"url": f"file://{repo}", "merged": merged, "fork": fork}


def test_merged_commits_pass(upstream, cache_root):
    first, _, third = upstream["merged"]
    assert require_on_branch(upstream["url"], "unstable", {"good": first[:10], "bad": third}) == {"good": first, "bad": third}


@pytest.mark.parametrize("ref", ["fork", "refs/pull/7/head", "feature"])
def test_a_commit_not_on_the_branch_is_refused(upstream, cache_root, ref):
    candidate = upstream["fork"] if ref == "fork" else ref
    with pytest.raises(UsageError, match=r"candidate .* is not on unstable of file://") as err:
        require_on_branch(upstream["url"], "unstable", {"base": upstream["merged"][0], "candidate": candidate})
    assert upstream["fork"][:12] in err.value.message and "reviewer" in err.value.hint


def test_the_branch_is_a_branch(upstream, cache_root):
    with pytest.raises(UsageError, match="not a branch name"):
        require_on_branch(upstream["url"], "refs/tags/x", {"base": upstream["merged"][0]})


def test_ab_and_bisect_refuse_before_building(upstream, cache_root, no_fetch, tmp_path):
    """A maintainer who sets confirm (or incident) on a fork's commit gets exit 2, nothing built."""
    first = upstream["merged"][0]
    code, out = vk("ab", "--repo", upstream["url"], "--base", first, "--candidate", upstream["fork"],
                   "--require-branch", "unstable", "--out", tmp_path / "ab")
    assert code == 2 and "is not on unstable" in out, out
    code, out = vk("bisect", "--repo", upstream["url"], "--good", first, "--bad", upstream["fork"],
                   "--require-branch", "unstable", "--out", tmp_path / "bisect")
    assert code == 2 and "bad" in out and "is not on unstable" in out, out
    assert no_fetch == [] and not (tmp_path / "bisect").exists()


def _move_after_first_resolve(monkeypatch, upstream_path: Path, ref: str, target: str) -> None:
    """A force-push racing the checks: right after ``ref`` is resolved the first time, the
    upstream moves it to ``target``; any second resolution sees the moved ref."""
    from vkbench.servers.gitmirror import Mirror

    original = Mirror.resolve
    moved = []

    def resolve(self, asked):
        commit = original(self, asked)
        if asked == ref and not moved:
            moved.append(asked)
            git(upstream_path, "update-ref", f"refs/{'pull/7/head' if ref.startswith('refs/pull') else 'heads/' + ref}",
                 target)
        return commit

    monkeypatch.setattr(Mirror, "resolve", resolve)


class _Built(Exception):
    pass


@pytest.mark.parametrize("check", ["approved head", "branch"])
def test_ab_builds_the_very_commits_it_checked(upstream, cache_root, monkeypatch, tmp_path, check):
    """The approved head (--pr-head) and the branch (--require-branch) are checked on the commits
    that get built: a force-push right after the check is never built (each ref is resolved once)."""
    from vkbench import ab
    from vkbench.servers import source_build

    first, _, third = upstream["merged"]
    repo = Path(upstream["url"].removeprefix("file://"))
    git(repo, "update-ref", "refs/pull/7/head", third)
    _move_after_first_resolve(monkeypatch, repo, "refs/pull/7/head", upstream["fork"])
    built = []

    def fetch(version, url=None, progress=None, **_):
        built.append(version)
        entry = tmp_path / "entries" / version
        entry.mkdir(parents=True)
        (entry / "meta.json").write_text('{"build_config": {}}')
        return entry

    def stop(*args, **kwargs):
        raise _Built()

    monkeypatch.setattr(source_build, "fetch", fetch)
    monkeypatch.setattr(ab, "_run_rounds", stop)
    options = ab.ABOptions(base=first, candidate="refs/pull/7/head", url=upstream["url"],
                           expect_candidate=third if check == "approved head" else None,
                           require_branch="unstable" if check == "branch" else None,
                           out_dir=tmp_path / "ab", min_rounds=2, max_rounds=2)
    with pytest.raises(_Built):
        ab.run_ab(options)
    assert built == [first, third]               # not the fork's commit pushed after the check


def test_the_approved_head_is_a_full_sha(upstream, cache_root, no_fetch, tmp_path):
    from vkbench.ab import ABOptions, run_ab

    third = upstream["merged"][2]
    with pytest.raises(UsageError, match="full 40-hex"):
        run_ab(ABOptions(base=upstream["merged"][0], candidate="refs/pull/7/head", url=upstream["url"],
                         expect_candidate=third[:12], out_dir=tmp_path / "ab"))
    code, out = vk("ab", "--repo", upstream["url"], "--base", upstream["merged"][0], "--pr", "7",
                   "--pr-head", third[:12], "--out", tmp_path / "ab")
    assert code == 2 and "full 40-hex" in out, out
    assert no_fetch == []


def test_bisect_runs_on_the_ends_it_checked(upstream, cache_root, monkeypatch, tmp_path):
    """--require-branch checks the ends, and the bisect runs on those commits even when the ref
    moves right after (to a commit that is not on the branch)."""
    from vkbench import bisect
    from vkbench.ab import ABOptions

    first, _, third = upstream["merged"]
    repo = Path(upstream["url"].removeprefix("file://"))
    git(repo, "branch", "release", third)
    _move_after_first_resolve(monkeypatch, repo, "release", upstream["fork"])
    asked = []

    def run_ab(options, progress=None):
        asked.append((options.base, options.candidate))
        raise _Built()

    monkeypatch.setattr(bisect, "run_ab", run_ab)
    template = ABOptions(base="", candidate="", require_branch="unstable")
    with pytest.raises(_Built):
        bisect.run_bisect(upstream["url"], first, "release", template, tmp_path / "bisect")
    assert asked == [(first, third)]
