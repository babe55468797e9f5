"""Segment boundaries in the series files: where the chart must break its line (another
environment or instruction-count method: points not comparable) and what its marker says."""

from __future__ import annotations

import json

from vkbench.site.build import build_site
from vkbench.site.series_data import build_series, load_series

import history_factory

ENVS = history_factory.environments()


def env_of(fid):
    return ENVS.get(fid)


def point(k: int, fp: str = "fp-x86", method: str | None = None, **extra) -> dict:
    p = {"run_id": f"r{k}", "timestamp": f"2026-10-{k + 1:02d}T02:00:00Z", "fingerprint_id": fp, "valid": True,
         "metrics": {"rps": {"median": 100.0 + k}}, **extra}
    if method:
        p["instructions_method"] = method
    return p


def test_a_method_change_is_a_cut_named_with_both_methods():
    points = [point(k, method="callgrind-abc" if k < 3 else "callgrind-def") for k in range(5)]
    segments = [{"start_index": 0, "fingerprint_id": "fp-x86"}, {"start_index": 3, "fingerprint_id": "fp-x86"}]
    main, _ = build_series("s", points, {"segments": {"s": segments}}, env_of)
    assert main["seg"] == [0, 3]
    assert main["bounds"] == [{"i": 3, "cut": 1, "kind": "method", "text": "method changed: callgrind-abc → callgrind-def"}]
    assert [main["methods"][c] for c in main["im"]] == ["callgrind-abc"] * 3 + ["callgrind-def"] * 2


def test_an_environment_change_names_the_fields_that_changed():
    points = [point(k, fp="fp-pi-old" if k < 2 else "fp-pi-new") for k in range(4)]
    main, _ = build_series("s", points, {}, env_of)   # no detection yet: segments derived from the points
    assert main["seg"] == [0, 2]
    assert main["bounds"] == [{"i": 2, "cut": 1, "kind": "env", "text": "environment changed: kernel 6.6.31 → 6.6.51"}]
    assert "im" not in main, "a series without counts carries no method column"


def test_without_detection_a_method_change_still_starts_a_segment():
    points = [point(k, method="m1" if k < 2 else "m2") for k in range(4)] + [point(4)]
    main, _ = build_series("s", points, {}, env_of)
    assert main["seg"] == [0, 2, 4]
    assert [(b["i"], b["cut"], b["text"]) for b in main["bounds"]] == [
        (2, 1, "method changed: m1 → m2"), (4, 1, "method changed: m2 → none")]


def test_both_changed_and_unknown_fingerprints():
    points = [point(0, fp="fp-gone", method="m1"), point(1, fp="fp-x86", method="m2")]
    main, _ = build_series("s", points, {}, env_of)
    assert main["bounds"] == [{"i": 1, "cut": 1, "kind": "env",
                               "text": "environment changed: fp-gone → fp-x86; method changed: m1 → m2"}]


def test_a_baseline_reset_keeps_the_line():
    points = [point(k) for k in range(4)]
    segments = [{"start_index": 0, "fingerprint_id": "fp-x86"}, {"start_index": 2, "fingerprint_id": "fp-x86", "reset_baseline": True}]
    main, _ = build_series("s", points, {"segments": {"s": segments}}, env_of)
    assert main["seg"] == [0, 2]
    assert main["bounds"] == [{"i": 2, "cut": 0, "kind": "reset", "text": "baseline reset (annotation): same environment and method"}]


def test_a_built_site_carries_the_method_break(tmp_path):
    facts = history_factory.write_counted_history(tmp_path / "history")
    build_site(tmp_path / "history", tmp_path / "site", reference_dir=None)
    main, _ = load_series(tmp_path / "site" / "data" / "series", facts["sid"])
    at = history_factory.METHOD_SWITCH_AT
    assert main["bounds"] == [{"i": at, "cut": 1, "kind": "method",
                               "text": f"method changed: {history_factory.OLD_METHOD} → {history_factory.NEW_METHOD}"}]
    assert main["m"]["instructions_per_op"]["med"][at] < main["m"]["instructions_per_op"]["med"][at - 1] * 0.98
