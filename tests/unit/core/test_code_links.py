"""Results name their code: links to the repository a commit came from, history points that keep
it, alerts that link there, and warnings when two builds were configured differently."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from vkbench import repolinks
from vkbench.results.io import validate_result
from vkbench.alerts.summary import build_warning, compare_url
from vkbench.compare import build_warnings
from vkbench.history.series import point_from_result

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "history"))
from factory import make_result  # noqa: E402


@pytest.fixture
def sample_result() -> dict:
    return make_result(rps={"SET": 400_000})


def test_forge_links():
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert repolinks.commit_url("https://github.com/valkey-io/valkey.git", sha) == f"https://github.com/valkey-io/valkey/commit/{sha}"
    assert repolinks.commit_url("git@github.com:me/valkey.git", sha) == f"https://github.com/me/valkey/commit/{sha}"
    assert repolinks.commit_url("https://gitlab.com/g/sub/valkey", sha) == f"https://gitlab.com/g/sub/valkey/-/commit/{sha}"
    assert repolinks.compare_url("https://gitlab.example.org/a/b.git", "x", "y") == "https://gitlab.example.org/a/b/-/compare/x...y"
    assert repolinks.commit_url("file:///srv/valkey.git", sha) is None
    assert repolinks.commit_url("https://example.com/o/r", sha) is None
    assert repolinks.commit_link("file:///srv/valkey.git", sha) == f"`{sha[:10]}` (file:///srv/valkey.git)"


def test_alert_links_the_commits_repository_and_warns_on_build_changes():
    good = {"commit": "a" * 40, "repository": "https://github.com/me/valkey", "build_config": "c1"}
    bad = {"commit": "b" * 40, "repository": "https://github.com/me/valkey", "build_config": "c2"}
    assert compare_url("valkey-io/valkey", good, bad) == f"https://github.com/me/valkey/compare/{'a' * 40}...{'b' * 40}"
    assert compare_url("valkey-io/valkey", {**good, "repository": "file:///m"}, {**bad, "repository": "file:///m"}) is None
    assert compare_url("valkey-io/valkey", {"commit": "a" * 7}, {"commit": "b" * 7}) == "https://github.com/valkey-io/valkey/compare/aaaaaaa...bbbbbbb"
    assert "build configuration differs" in build_warning(good, bad)
    assert build_warning(good, {**bad, "build_config": "c1"}) is None


def _result(sample_result: dict, url: str | None, config_id: str | None, malloc: str = "libc") -> dict:
    result = copy.deepcopy(sample_result)
    if url:
        result["subject"]["code"] = {"url": url, "commit": "c" * 40, "ref": "unstable"}
    if config_id:
        result["subject"]["build"] = {**(result["subject"].get("build") or {}), "config": {"id": config_id, "malloc": malloc}}
    validate_result(result)           # the new fields are in the schema
    return result


def test_points_keep_repository_and_build_config(sample_result):
    point = point_from_result(_result(sample_result, "https://gitlab.com/o/valkey", "cfg1"), "SET")
    assert point["repository"] == "https://gitlab.com/o/valkey" and point["build_config"] == "cfg1"
    plain = point_from_result(sample_result, "SET")
    assert "repository" not in plain and "build_config" not in plain


def test_compare_warns_when_build_configs_differ(sample_result, tmp_path):
    for side, (cfg, malloc) in {"base": ("c1", "libc"), "cand": ("c2", "jemalloc")}.items():
        (tmp_path / side).mkdir()
        (tmp_path / side / "r.json").write_text(json.dumps(_result(sample_result, None, cfg, malloc)))
    warnings = build_warnings(tmp_path / "base", tmp_path / "cand")
    assert warnings == ["build configurations differ (malloc: 'libc' vs 'jemalloc')"]
    assert build_warnings(tmp_path / "base", tmp_path / "base") == []
