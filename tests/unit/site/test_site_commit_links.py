"""Commit links go to the repository each point was built from: a source build records its git
URL (``repository`` in the history), GitHub and GitLab URLs become commit pages, any other URL
plain text, and a point without a repository (a release) falls back to the engine's repository."""

from __future__ import annotations

import json
from pathlib import Path

from vkbench.site.series_data import Columns, build_series, chunk_files, load_series, with_commit_links

import history_factory


def _point(k: int, repository: str | None) -> dict:
    return {
        "run_id": f"run-{k}", "timestamp": f"2026-10-0{k + 1}T02:00:00Z", "version": "unstable",
        "commit": f"{k:02d}" + "ab" * 19, "fingerprint_id": "fp", "valid": True, "flags": [],
        "workflow_run_url": f"https://github.com/o/r/actions/runs/{k}",
        "metrics": {"rps": {"median": 100000.0 + k, "ci_low": 99000.0, "ci_high": 101000.0, "cv": 0.01}},
        **({"repository": repository} if repository else {}),
    }


REPOSITORIES = [
    ("https://github.com/some-fork/valkey.git", "https://github.com/some-fork/valkey/commit/"),
    ("git@gitlab.com:group/valkey.git", "https://gitlab.com/group/valkey/-/commit/"),
    ("file:///srv/mirrors/valkey.git", ""),            # no commit pages: plain text
    ("https://git.example.org/valkey.git", ""),          # an unknown host: never a guessed link
    (None, None),                                        # a release: the engine's repository
]


def _link_of(series: dict, i: int):
    return series["repos"][series["r"][i]]


def test_each_point_links_to_the_repository_it_came_from():
    points = [_point(k, repo) for k, (repo, _) in enumerate(REPOSITORIES)]
    main, _ = build_series("sid", points, {}, lambda f: None)
    assert [_link_of(main, i) for i in range(len(points))] == [prefix for _, prefix in REPOSITORIES]


def test_a_series_without_repositories_has_no_repository_columns():
    main, _ = build_series("sid", [_point(0, None), _point(1, None)], {}, lambda f: None)
    assert "r" not in main and "repos" not in main


def test_repositories_survive_an_incremental_build():
    """The columns recovered from a written chunk, extended with new points, give the same chunk
    as building every point at once (the incremental site build relies on it)."""
    first = [_point(0, None), _point(1, "https://github.com/some-fork/valkey.git")]
    later = [_point(2, "file:///srv/mirrors/valkey.git"), _point(3, "https://github.com/some-fork/valkey.git")]
    for already in (first, first[:1]):          # with and without repository columns in the chunk
        cols = Columns()
        cols.append(already)
        main, latency = chunk_files("sid", 2026, cols)
        cols = Columns.from_chunk(json.loads(json.dumps(main)), latency)
        cols.append(later)
        whole = Columns()
        whole.append(already + later)
        assert chunk_files("sid", 2026, cols) == chunk_files("sid", 2026, whole)


def test_incident_ends_link_to_their_repository():
    incident = {"id": "i", "good": {"commit": "a" * 40, "repository": "https://gitlab.com/g/valkey"},
                "bad": {"commit": "b" * 40, "repository": "file:///srv/mirrors/valkey.git"}}
    release = {"id": "j", "good": {"commit": "c" * 8}, "bad": {"commit": "d" * 8}}
    linked, unchanged = with_commit_links([incident, release])
    assert linked["good"]["commit_url"] == "https://gitlab.com/g/valkey/-/commit/" + "a" * 40
    assert linked["bad"]["commit_url"] == ""
    assert unchanged == release and "commit_url" not in incident["good"], "the input is not modified"


def test_a_bisect_culprit_links_to_the_repository_bisected():
    bisected = [{"id": f"i{k}", "bisect": {"culprit": "e" * 40, "repository": repo, "reproduced": True}}
                for k, (repo, _) in enumerate(REPOSITORIES[:4])]
    not_reproduced = {"id": "n", "bisect": {"culprit": None, "repository": REPOSITORIES[0][0], "reproduced": False}}
    *linked, unchanged = with_commit_links([*bisected, not_reproduced])
    assert [i["bisect"]["culprit_url"] for i in linked] == [prefix + "e" * 40 if prefix else "" for _, prefix in REPOSITORIES[:4]]
    assert unchanged == not_reproduced and "culprit_url" not in bisected[0]["bisect"]


def test_the_built_site_links_source_builds_to_their_repository(built_site):
    out, _, facts = built_site
    load = lambda p: json.loads(Path(p).read_text())  # noqa: E731
    fork = history_factory.SOURCE_REPOSITORIES["cloud-x86"].removesuffix(".git") + "/commit/"
    series = lambda sid: load_series(out / "data" / "series", sid)[0]  # noqa: E731
    regression = series(facts['regression_sid'])  # cloud-x86 unstable
    assert {_link_of(regression, i) for i in range(regression["n"])} == {fork}
    improvement = series(facts['improvement_sid'])  # pi-cm4 unstable, file://
    assert {_link_of(improvement, i) for i in range(improvement["n"])} == {""}
    release = next(sid for sid, d in facts["sids"].items() if d["version"] == "9.1.2")
    assert "r" not in series(release)
    assert not [p for p in (out / "data" / "series" / release).iterdir() if "repos" in load(p)], "nor do its chunks"
    incidents = {i["id"]: i for i in load(out / "data" / "detect.json")["incidents"]}
    bad = incidents["inc-set-io2-x86"]["bad"]
    assert bad["commit_url"] == fork + bad["commit"]
    assert incidents["inc-get-io2-pi"]["good"]["commit_url"] == ""
    assert incidents["inc-set-io2-x86"]["bisect"]["culprit_url"] == fork + facts["culprit"]


def test_a_source_build_is_named_by_its_commit_on_the_cards():
    """unstable reports 255.255.255: the card says which commit ran, not that placeholder."""
    from vkbench.site.build import version_label

    sha = "c419524c05d7544636d5bc0cc0cb333052b0a517"
    assert version_label({"version": "unstable", "server_version": "255.255.255", "commit": sha}) == "unstable (c419524c05)"
    assert version_label({"version": sha, "server_version": "255.255.255", "commit": sha}) == sha
    assert version_label({"version": "9.1.2", "server_version": "9.1.2", "commit": None}) == "9.1.2"
    assert version_label({"version": "9.1", "server_version": "9.1.2", "commit": "00000000"}) == "9.1 (9.1.2)"
