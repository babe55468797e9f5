"""Detection of counted metrics (issue 19): instructions per operation and bytes per key are
nearly deterministic, so their minimum effect follows their own tiny noise and one night at a new
level is a finding, while a noisy wall-clock series keeps the 2 % floor and three nights."""

from __future__ import annotations

import copy

import numpy as np
from factory import make_result, write_result

from vkbench.detect import run_detection
from vkbench.detect.params import DetectionParams
from vkbench.detect.segmented import detect_segmented
from vkbench.history import HistoryStore
from vkbench.history.ingest import ingest
from vkbench.results.io import validate_result

#: Per-seed offsets of a fresh server's count (the hash seed decides command-table collisions:
#: docs/instructions.md); the same seeds every night, so these are not night-to-night noise.
SEED_OFFSETS = (0.0, 0.0011, -0.0007)
SET_BASE, GET_BASE = 9875.0, 7852.5


def counted_result(night: int, *, set_ops: float, get_ops: float, bytes_per_key: float, rps: float,
                   method: str = "m-1", rng: np.random.Generator, cv: float = 0.0002) -> dict:
    """A ``both`` cell of one night: rps (noisy) plus the counts of 3 fresh servers (seeds 1..3)."""
    result = make_result(run_id=f"run-{night:04d}", timestamp=f"2026-{9 + night // 28:02d}-{night % 28 + 1:02d}T02:17:00Z",
                         commit=f"{night:06x}" + "ab" * 17, rps={"SET": rps, "GET": rps * 1.1}, spread=0.03)
    out = copy.deepcopy(result)
    commands = {}
    for name, level in (("set", set_ops), ("get", get_ops)):
        per_server = [level * (1 + off) * (1 + rng.normal(0, cv)) for off in SEED_OFFSETS]
        commands[name] = {"per_op": float(np.median(per_server)), "values": per_server, "cv_pct": 0.02,
                          "per_server": per_server}
    out["instructions"] = {"method": {"tool": "callgrind", "windows": 4, "window_requests": 20000,
                                      "servers": 3, "id": method}, "commands": commands}
    out["memory"] = {"keys": 10000, "used_memory_before": 1_000_000,
                     "used_memory_after": 1_000_000 + int(bytes_per_key * 10000), "bytes_per_key": bytes_per_key}
    return validate_result(out, source="test")


def nights(tmp_path, n: int, *, step_at: int | None = None, set_step: float = 0.0, get_step: float = 0.0,
           bytes_step: float = 0.0, rps_factor=lambda night: 1.0, seed: int = 7, method=lambda night: "m-1",
           count_cv: float = 0.0002, bytes_cv: float = 0.0005) -> HistoryStore:
    """``n`` nights ingested one by one; from ``step_at`` on the counts are moved by the steps."""
    rng = np.random.default_rng(seed)
    store = HistoryStore(tmp_path / "history")
    for night in range(n):
        after = step_at is not None and night >= step_at
        result = counted_result(
            night, rng=rng, cv=count_cv, method=method(night),
            set_ops=SET_BASE * (1 + (set_step if after else 0.0)),
            get_ops=GET_BASE * (1 + (get_step if after else 0.0)),
            bytes_per_key=60.25 * (1 + (bytes_step if after else 0.0)) * (1 + rng.normal(0, bytes_cv)),
            rps=400_000.0 * rps_factor(night) * (1 + rng.normal(0, 0.05)),
        )
        write_result(tmp_path / "res" / f"n{night}", result)
        ingest(store, [tmp_path / "res" / f"n{night}"])
    return store


def regressions(doc: dict, metric: str) -> list[dict]:
    return [cp for cp in doc["change_points"] if cp["metric"] == metric and cp["direction"] == "regression"]


def test_half_percent_instruction_step_is_found_on_its_first_night(tmp_path):
    store = nights(tmp_path, 21, step_at=20, set_step=0.005)
    doc = run_detection(store.path, write=False)
    (cp,) = regressions(doc, "instructions_per_op")
    assert cp["run_id"] == "run-0020" and cp["index"] == 20
    assert cp["series_name"].startswith("SET ")
    assert 0.004 < cp["magnitude"] < 0.006
    assert cp["min_effect"] < 0.003           # not the 2 % floor of timed metrics
    assert cp["bad"]["commit"].startswith("000014")
    (incident,) = [i for i in doc["incidents"] if i["direction"] == "regression"]
    assert incident["metrics"] == ["instructions_per_op"]
    assert incident["status"] == "open" and not incident.get("silenced")
    # the count noise detection measured for itself is tiny, and recorded
    noise = doc["noise"][cp["series_id"]]["instructions_per_op"]["cv"]
    assert 0 < noise < 0.0006


def test_the_same_step_stays_one_change_point_the_nights_after(tmp_path):
    store = nights(tmp_path, 24, step_at=20, set_step=0.005)
    doc = run_detection(store.path, write=False)
    (cp,) = regressions(doc, "instructions_per_op")
    assert cp["index"] == 20


def test_thirty_aa_nights_of_counts_raise_nothing(tmp_path):
    store = nights(tmp_path, 30, seed=11)
    doc = run_detection(store.path, write=False)
    assert doc["change_points"] == [] and doc["incidents"] == []


def test_aa_nights_detected_night_by_night_raise_nothing(tmp_path):
    """As the nightly sees it: detection on every prefix (every night), several noise draws."""
    params = DetectionParams().for_metric("instructions_per_op")
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        values = list(SET_BASE * (1 + rng.normal(0, 0.0002, 30)))
        for n in range(4, 31):
            found = detect_segmented(values[:n], bigger_is_better=False, params=params)
            assert found.changes == [], (seed, n)


def test_small_steps_found_on_their_first_night_across_draws():
    """0.3 % and 0.5 % in a 0.02 % series: the night they land, in every draw."""
    params = DetectionParams().for_metric("instructions_per_op")
    for step in (0.003, 0.005):
        for seed in range(20):
            rng = np.random.default_rng(seed)
            values = list(SET_BASE * (1 + rng.normal(0, 0.0002, 20))) + [SET_BASE * (1 + step) * (1 + rng.normal(0, 0.0002))]
            found = detect_segmented(values, bigger_is_better=False, params=params)
            assert [(c.index, c.direction) for c in found.changes] == [(20, "regression")], (step, seed)


def test_fewer_instructions_is_an_improvement(tmp_path):
    store = nights(tmp_path, 21, step_at=20, get_step=-0.004)
    doc = run_detection(store.path, write=False)
    (cp,) = [c for c in doc["change_points"] if c["metric"] == "instructions_per_op"]
    assert cp["direction"] == "improvement" and cp["series_name"].startswith("GET ")
    assert not [i for i in doc["incidents"] if i["direction"] == "regression"]


def test_memory_per_key_step_found_first_night_and_aa_quiet(tmp_path):
    store = nights(tmp_path, 21, step_at=20, bytes_step=0.03)
    doc = run_detection(store.path, write=False)
    found = regressions(doc, "bytes_per_key")
    assert {cp["index"] for cp in found} == {20}
    assert {cp["series_name"].split()[0] for cp in found} == {"SET", "GET"}    # one cell: both series
    (incident,) = [i for i in doc["incidents"] if i["direction"] == "regression"]
    assert incident["metrics"] == ["bytes_per_key"]

    quiet = nights(tmp_path / "aa", 30, seed=5)
    assert run_detection(quiet.path, write=False)["incidents"] == []


def test_noisy_shifted_wallclock_series_stays_quiet_while_counts_speak(tmp_path):
    """rps with 5 % noise shifted by 1.5 % (below its floor) from night 20: nothing on rps; the
    0.5 % count step the same night is found."""
    store = nights(tmp_path, 24, step_at=20, set_step=0.005, rps_factor=lambda night: 0.985 if night >= 20 else 1.0)
    doc = run_detection(store.path, write=False)
    assert {cp["metric"] for cp in doc["change_points"]} == {"instructions_per_op"}


def test_a_method_change_is_a_boundary_not_a_regression(tmp_path):
    store = nights(tmp_path, 26, step_at=20, set_step=0.01, method=lambda night: "m-2" if night >= 20 else "m-1")
    doc = run_detection(store.path, write=False)
    assert [cp for cp in doc["change_points"] if cp["metric"] == "instructions_per_op"] == []
    segs = next(iter(doc["segments"].values()))
    assert [s["start_index"] for s in segs] == [0, 20]


def test_count_rule_is_per_metric_and_recorded():
    params = DetectionParams()
    assert "instructions_per_op" in params.metrics and "bytes_per_key" in params.metrics
    counts = params.for_metric("instructions_per_op")
    assert counts.min_after == 1 and not counts.sample_test
    assert counts.min_effect(0.0002) == 0.001          # the documented floor: 0.1 %
    assert counts.min_effect(0.001) == 0.005           # else 5 x the series' own CV
    assert params.for_metric("rps") is params and params.min_effect(0.0002) == 0.02
    recorded = params.to_dict()
    assert recorded["count_min_magnitude"] == 0.001 and recorded["count_metrics"] == ["instructions_per_op", "bytes_per_key"]
