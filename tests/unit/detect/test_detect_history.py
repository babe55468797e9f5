"""Detection over a history: detect.json, incidents, ids, recovery, annotations, CLI gates."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from factory import make_result, write_result

from vkbench.cli import main
from vkbench.cli.detect import detect_cmd
from vkbench.detect import run_detection
from vkbench.errors import ConfigError
from vkbench.history.ingest import ingest
from vkbench.history import HistoryStore


def commit_of(night: int) -> str:
    return f"{night:06x}" + "ab" * 17


def build_history(tmp_path, levels, *, nights=50, cv=0.01, seed=1, io_threads=(2, 4), commands=("SET", "GET"),
                  fingerprint=lambda night: "fp-1", start=0, commit=commit_of):
    """One result per (night, io-threads) with every command; ``levels(night)`` is the rps
    factor of that night (1.0 = baseline)."""
    rng = np.random.default_rng(seed)
    out = tmp_path / "res"
    for night in range(start, nights):
        for io in io_threads:
            rps = {cmd: 400_000 * (1 + 0.1 * k) * levels(night) * (1 + rng.normal(0, cv)) for k, cmd in enumerate(commands)}
            result = make_result(
                run_id=f"night-{night:03d}", cell_id=f"io{io}", rps=rps, io_threads=io, spread=cv / 2,
                timestamp=f"2026-{9 + night // 28:02d}-{night % 28 + 1:02d}T02:00:00Z", commit=commit(night),
                fingerprint_id=fingerprint(night), workflow_run_url=f"https://github.com/o/r/actions/runs/{night}",
            )
            write_result(out / f"{night:03d}", result)
    ingest(HistoryStore(tmp_path / "h"), [out])
    return tmp_path / "h"


def step_at(night0, factor):
    return lambda night: factor if night >= night0 else 1.0


@pytest.fixture(scope="module")
def step_history(tmp_path_factory):
    """SET and GET at io-threads 2 and 4, -10 % from night 40 on (shared: tests only read it)."""
    return build_history(tmp_path_factory.mktemp("step"), step_at(40, 0.9))


def test_simultaneous_changes_are_one_incident_with_a_readable_title(step_history):
    history = step_history
    doc = run_detection(history)
    written = json.loads((history / "detect.json").read_text())
    assert {k: v for k, v in written.items() if k != "generated"} == {k: v for k, v in doc.items() if k != "generated"}
    (incident,) = doc["incidents"]
    assert incident["direction"] == "regression" and incident["status"] == "open"
    assert len(incident["series_ids"]) == 4 and incident["machine_class"] == "cloud-x86"
    assert incident["title"] == (
        f"SET and GET, pipeline 16, io-threads 2 and 4, cloud-x86: -10% between {commit_of(39)[:7]} and {commit_of(40)[:7]}"
    )
    assert incident["good"]["run_id"] == "night-039" and incident["bad"]["run_id"] == "night-040"
    rps = [cp for cp in doc["change_points"] if cp["metric"] == "rps"]
    assert len(rps) == 4
    for cp in rps:
        assert cp["incident_id"] == incident["id"]
        assert cp["direction"] == "regression" and cp["magnitude"] == pytest.approx(-0.10, abs=0.015)
        assert cp["p_value"] < 0.001 and cp["index"] == 40 and cp["run_id"] == "night-040"
        assert cp["good"]["commit"] == commit_of(39) and cp["bad"]["commit"] == commit_of(40)
        assert cp["runs"]["before"][-1] == "night-039" and cp["runs"]["after"][0] == "night-040"
    # latency moved too and belongs to the same incident
    assert {cp["metric"] for cp in doc["change_points"]} == {"rps", "p50", "p99"}
    assert set(doc["noise"][rps[0]["series_id"]]) == {"rps", "p50", "p99"}
    assert doc["segments"][rps[0]["series_id"]] == [{"start_index": 0, "fingerprint_id": "fp-1"}]


def test_incident_id_is_stable_across_nights(tmp_path):
    first = run_detection(build_history(tmp_path, step_at(30, 0.9), nights=36, io_threads=(2,)))
    # the next night arrives
    again = run_detection(build_history(tmp_path, step_at(30, 0.9), nights=37, start=36, io_threads=(2,)))
    assert [i["id"] for i in first["incidents"]] == [i["id"] for i in again["incidents"]]
    assert len(first["incidents"]) == 1


def test_recovery_closes_the_incident(tmp_path):
    dip = lambda night: 0.9 if 30 <= night < 40 else 1.0      # noqa: E731
    doc = run_detection(build_history(tmp_path, dip, nights=55, io_threads=(2,), commands=("SET",)))
    by_direction = {i["direction"]: i for i in doc["incidents"]}
    assert by_direction["regression"]["status"] == "closed"
    assert by_direction["regression"]["resolution"] == "recovered"
    assert by_direction["improvement"]["bad"]["run_id"] == "night-040"


def test_fingerprint_change_is_recorded_but_not_an_incident(tmp_path):
    history = build_history(tmp_path, step_at(30, 0.7), nights=50, io_threads=(2,), commands=("SET",),
                            fingerprint=lambda night: "fp-old" if night < 30 else "fp-new")
    doc = run_detection(history)
    assert doc["incidents"] == [] and doc["change_points"] == []
    (segs,) = doc["segments"].values()
    assert segs == [{"start_index": 0, "fingerprint_id": "fp-old"}, {"start_index": 30, "fingerprint_id": "fp-new"}]


def test_invalid_runs_are_excluded(tmp_path):
    out = tmp_path / "res"
    for night in range(40):
        bad = 30 <= night < 35
        write_result(out, make_result(run_id=f"n{night:02d}", timestamp=f"2026-10-{night % 28 + 1:02d}T{night // 28:02d}:00:00Z",
                                      rps={"SET": 200_000 if bad else 400_000 * (1 + 0.01 * (night % 3))},
                                      valid=not bad, flags=["client-bound"] if bad else []))
    ingest(HistoryStore(tmp_path / "h"), [out])
    assert run_detection(tmp_path / "h")["change_points"] == []


def test_silence_by_incident_id_and_by_series(step_history):
    history = step_history
    (incident,) = run_detection(history)["incidents"]
    silenced = run_detection(history, [{"incident": incident["id"], "action": "silence", "reason": "known: new default"}])
    (inc,) = silenced["incidents"]
    assert inc["silenced"] and inc["status"] == "open" and inc["annotation"]["reason"] == "known: new default"
    by_series = run_detection(history, [{"series": {"machine_class": "cloud-x86"}, "action": "silence", "reason": "noisy host"}])
    assert by_series["incidents"][0]["silenced"]
    partly = run_detection(history, [{"series": {"command": "SET"}, "action": "silence", "reason": "SET only"}])
    assert not partly["incidents"][0]["silenced"]      # GET is not covered


def test_a_change_with_the_same_build_on_both_sides_is_not_a_code_change(tmp_path, capsys):
    """A release measured every night (or an A/A night, or a night without commits) runs the very
    binary before and after a step: the machine or the measurement moved. Kept and shown, marked,
    never alerted."""
    history = build_history(tmp_path, step_at(40, 0.9), io_threads=(2,), commit=lambda night: "9" * 40)
    doc = run_detection(history)
    (incident,) = doc["incidents"]
    assert incident["direction"] == "regression" and incident["status"] == "open"
    assert incident["same_build"] is True and incident["silenced"] is True
    assert incident["annotation"]["automatic"] == "same-build"
    assert "same server build ran before and after" in incident["annotation"]["reason"]
    assert incident["good"]["build_id"] == incident["bad"]["build_id"] == "sha256:999999999999"
    text = CliRunner().invoke(detect_cmd, ["--history", str(history)])
    assert "1 incidents (0 open unsilenced regressions)" in text.output
    assert "OPEN (same build: not a code change) regression" in text.output
    md = CliRunner().invoke(detect_cmd, ["--history", str(history), "--format", "markdown"])
    assert "same build before and after: not a code change" in md.output
    main(["detect", "--history", str(history), "--fail-on", "regression"])      # no exit 10
    # The site keeps the mark and writes the reason (not a dict's repr) on the series' chart.
    from vkbench.site.build import build_site

    build_site(history, tmp_path / "site")
    site_detect = json.loads((tmp_path / "site" / "data" / "detect.json").read_text())
    assert site_detect["incidents"][0]["same_build"] is True
    head = tmp_path / "site" / "data" / "series" / f"{incident['series_ids'][0]}.json"   # the series' head
    notes = json.loads(head.read_text())["notes"]
    assert [n["text"] for n in notes] == [incident["annotation"]["reason"]]
    # A person's annotation on the incident still decides.
    reset = run_detection(history, [{"incident": incident["id"], "action": "reset-baseline", "reason": "new kernel"}])
    assert reset["incidents"][0]["resolution"] == "baseline-reset"
    assert reset["incidents"][0]["annotation"]["reason"] == "new kernel"


def test_a_step_between_two_builds_is_a_code_change(step_history):
    (incident,) = run_detection(step_history)["incidents"]
    assert incident["same_build"] is False and not incident["silenced"] and incident["annotation"] is None


def test_reset_baseline_after_a_run_accepts_the_new_level(step_history):
    history = step_history
    doc = run_detection(history, [{"series": {"command": ["SET", "GET"]}, "after": "night-039",
                                   "action": "reset-baseline", "reason": "new default accepted"}])
    assert doc["change_points"] == [] and doc["incidents"] == []
    sid = next(iter(doc["segments"]))
    assert {"start_index": 40, "fingerprint_id": "fp-1", "reset_baseline": True} in doc["segments"][sid]


def test_reset_baseline_by_date_later_closes_the_incident(tmp_path):
    history = build_history(tmp_path, step_at(30, 0.9), nights=45, io_threads=(2,), commands=("SET",))
    doc = run_detection(history, [{"series": {"machine_class": "cloud-x86"}, "after": "2026-10-12",
                                   "action": "reset-baseline", "reason": "accepted"}])
    (incident,) = doc["incidents"]
    assert incident["status"] == "closed" and incident["resolution"] == "baseline-reset"


def test_annotations_file_is_validated(tmp_path):
    bad = tmp_path / "a.yaml"
    bad.write_text("- series: {command: SET}\n  action: silence\n")
    with pytest.raises(ConfigError, match="reason"):
        run_detection(build_history(tmp_path, lambda n: 1.0, nights=5, io_threads=(2,)), bad)
    bad.write_text("- action: silence\n  reason: nothing to match\n")
    with pytest.raises(ConfigError, match="series.*incident"):
        run_detection(tmp_path / "h", bad)


def test_sample_annotations_file_is_valid():
    from pathlib import Path

    from vkbench.detect.annotations import load_annotations

    path = Path(__file__).resolve().parents[3] / "results" / "annotations.yaml"
    assert load_annotations(path) == []


def test_cli_text_json_markdown_and_fail_on(step_history, capsys):
    history = step_history
    runner = CliRunner()
    text = runner.invoke(detect_cmd, ["--history", str(history)])
    assert text.exit_code == 0, text.output
    assert "1 incidents (1 open unsilenced regressions)" in text.output
    assert "SET and GET, pipeline 16, io-threads 2 and 4, cloud-x86: -10%" in text.output
    md = runner.invoke(detect_cmd, ["--history", str(history), "--format", "markdown", "--repo", "valkey-io/valkey"])
    assert f"https://github.com/valkey-io/valkey/compare/{commit_of(39)}...{commit_of(40)}" in md.output
    js = runner.invoke(detect_cmd, ["--history", str(history), "--format", "json"])
    assert json.loads(js.output)["incidents"][0]["status"] == "open"

    with pytest.raises(SystemExit) as exc:
        main(["detect", "--history", str(history), "--fail-on", "regression"])
    assert exc.value.code == 10
    assert "open regression incident" in capsys.readouterr().err


def test_cli_all_quiet(tmp_path):
    history = build_history(tmp_path, lambda n: 1.0, nights=20)
    result = CliRunner().invoke(detect_cmd, ["--history", str(history), "--fail-on", "regression"])
    assert result.exit_code == 0
    assert result.output.strip() == "All quiet: 4 series, 20 runs, no significant change."
