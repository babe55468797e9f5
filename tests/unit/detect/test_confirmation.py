"""Same-night confirmation: a drop on the newest night of a source-built series is a candidate
(not an alarm); the A/B's verdict makes it an incident, or records it as rejected forever."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from factory import make_result, write_result

from vkbench.cli.confirm import confirm_cmd
from vkbench.detect import confirmations, run_detection
from vkbench.detect.candidates import find_candidate
from vkbench.history.ingest import ingest
from vkbench.history import HistoryStore
from cli_outcome import vk  # tests/cli_outcome.py

REPO = "https://github.com/valkey-io/valkey"


def commit_of(night: int) -> str:
    return f"{night:06x}" + "cd" * 17


def source_history(tmp_path, nights: int, drop_from: int, factor: float, *, cv=0.01, version="unstable"):
    rng = np.random.default_rng(3)
    out = tmp_path / "res"
    for night in range(nights):
        level = factor if night >= drop_from else 1.0
        result = make_result(run_id=f"night-{night:03d}", cell_id="io1", rps={"SET": 400_000 * level * (1 + rng.normal(0, cv))},
                             io_threads=1, spread=cv / 2, timestamp=f"2026-10-{night + 1:02d}T02:00:00Z",
                             commit=commit_of(night), version=version)
        result["subject"]["code"] = {"url": REPO, "commit": commit_of(night), "ref": version}
        result["subject"]["build"] = {"source": "source-build", "id": "sha256:x", "config": {"id": "cfg1", "malloc": "libc"}}
        write_result(out / f"{night:03d}", result)
    ingest(HistoryStore(tmp_path / "h"), [out])
    return tmp_path / "h"


def test_find_candidate_on_the_newest_nights_only():
    flat = [100.0 + (i % 3) * 0.3 for i in range(20)]
    assert find_candidate(flat) is None
    one = find_candidate([*flat, 90.0])
    assert one is not None and one.index == 20 and one.after == 1 and one.magnitude == pytest.approx(-0.1, abs=0.01)
    two = find_candidate([*flat, 90.0, 90.5])
    assert two.index == 20 and two.after == 2
    assert find_candidate([*flat, 110.0]) is None                                  # improvements wait
    assert find_candidate([*flat, 100.5]) is None                                  # inside the noise
    assert find_candidate([*flat, 90.0], accepted=[20]) is None                    # detection has it
    # the nights after a reported drop are its new level, not another drop against the old one
    assert find_candidate([*flat, 90.0, 90.3, 89.8], accepted=[20]) is None
    assert find_candidate([*flat, *[90.0 + (i % 3) * 0.3 for i in range(8)], 80.0], accepted=[20]).index == 28
    latency = find_candidate([*flat, 112.0], bigger_is_better=False)               # latency up = worse
    assert latency is not None and latency.direction == "regression" and latency.magnitude > 0
    assert find_candidate([*flat, 90.0], fingerprints=["a"] * 20 + ["b"]) is None  # a new machine


@pytest.fixture
def candidate_history(tmp_path):
    return source_history(tmp_path, nights=25, drop_from=24, factor=0.9)


def _ab(tmp_path, request, change, ci, mde=0.015, **extra):
    report = {"base": {"commit": request["good"]["commit"]}, "candidate": {"commit": request["bad"]["commit"]},
              "rows": [{"cell": "standalone io1", "command": "SET", "change": change, "ci_low": ci[0], "ci_high": ci[1],
                        "mde": mde, "rounds": 8, **extra}], "target_mde": 0.02}
    path = tmp_path / f"ab-{change}.json"
    path.write_text(json.dumps(report))
    return path


def test_candidate_waits_then_a_confirming_ab_makes_it_an_incident(candidate_history, tmp_path):
    doc = run_detection(candidate_history, write=False)
    assert doc["incidents"] == []                               # one night: no alarm from persistence
    (request,) = doc["confirmation"]["waiting"]
    assert request["good"]["commit"] == commit_of(23) and request["bad"]["commit"] == commit_of(24)
    assert request["repository"] == REPO and request["cell"]["io_threads"] == 1
    out = CliRunner().invoke(confirm_cmd, ["--history", str(candidate_history), "--id", request["id"],
                                           "--ab", str(_ab(tmp_path, request, -0.1, (-0.12, -0.08)))])
    assert out.exit_code == 0, out.output
    assert "confirmed" in out.output
    doc = run_detection(candidate_history, write=False)
    (incident,) = doc["incidents"]
    assert incident["confirmation"]["change"] == -0.1 and incident["confirmation"]["ci_high"] == -0.08
    assert incident["status"] == "open" and incident["bad"]["commit"] == commit_of(24)
    assert doc["confirmation"]["waiting"] == []


def test_an_ab_whose_mde_missed_the_target_is_inconclusive_and_never_alerts(candidate_history, tmp_path):
    """An interval well below zero is no confirmation when the A/B could not detect the target:
    4 noisy rounds once gave -57 % at an MDE of 80 %."""
    (request,) = run_detection(candidate_history, write=False)["confirmation"]["waiting"]
    out = CliRunner().invoke(confirm_cmd, ["--history", str(candidate_history), "--id", request["id"],
                                           "--ab", str(_ab(tmp_path, request, -0.3, (-0.6, -0.01), mde=0.8,
                                                           rounds_for_target=12000))])
    assert out.exit_code == 0, out.output
    assert f"{request['id']}: inconclusive" in out.output
    entry = confirmations.load(HistoryStore(candidate_history))["confirmations"][request["id"]]
    assert entry["status"] == "inconclusive"
    assert entry["ab"]["verdict"] == ("inconclusive: MDE 80.0% > target 2.0%; about 11992 more rounds, "
                                      "a quieter runner, or instruction counts")
    doc = run_detection(candidate_history, write=False)
    assert doc["incidents"] == []
    assert doc["confirmation"] == {"waiting": [], "rejected": [], "inconclusive": [request["id"]]}


def test_a_rejecting_ab_is_recorded_and_never_alerts(candidate_history, tmp_path):
    (request,) = run_detection(candidate_history, write=False)["confirmation"]["waiting"]
    out = CliRunner().invoke(confirm_cmd, ["--history", str(candidate_history), "--id", request["id"],
                                           "--ab", str(_ab(tmp_path, request, -0.004, (-0.015, 0.007)))])
    assert out.exit_code == 0 and "rejected" in out.output
    doc = run_detection(candidate_history, write=False)
    assert doc["incidents"] == [] and doc["confirmation"] == {"waiting": [], "rejected": [request["id"]]}
    # A wrong A/B (other commits) or an unknown id is refused.
    bad = CliRunner().invoke(confirm_cmd, ["--history", str(candidate_history), "--id", "confirm-nope",
                                           "--ab", str(_ab(tmp_path, request, -0.1, (-0.12, -0.08)))])
    assert bad.exit_code != 0


def test_releases_get_no_confirmation(tmp_path):
    history = source_history(tmp_path, nights=25, drop_from=24, factor=0.9, version="9.1.2")
    assert "confirmation" not in run_detection(history, write=False)


def test_the_confirmation_cell_is_the_series_cell_only_the_server_replaced():
    """Every dimension of the series reaches the A/B's cell (workload, CPU placement, tool
    arguments...): a cell without them would measure something else than what moved."""
    from vkbench.detect.confirmations import series_cell
    from vkbench.history.series import series_dims
    from vkbench.matrix.model import Cell

    cell = Cell.model_validate({
        "server": "valkey:unstable", "tool": "memtier_benchmark", "tests": ["set", "get"], "clients": 50, "client_threads": 2,
        "pipeline": 4, "requests": 1000, "cpu": {"server": "0", "client": "1"}, "tool_args": ["--key-prefix", "k:"],
        "workload": {"ratio": "1:10", "key_pattern": "G:G"}, "read_from": "primary", "runner": "cloud-x86",
        "repetitions": 5})
    result = {"dimensions": cell.dimensions(), "run": {"machine_class": "cloud-x86"}}
    rebuilt = Cell.model_validate(series_cell(series_dims(result, "SET")))
    # The same cell, but one repetition per round and on the A/B's own runner.
    assert rebuilt.dimensions() == {**cell.dimensions(), "repetitions": 1, "runner": "local"}
    assert rebuilt.server == "valkey:unstable"


def _waiting(history):
    (request,) = run_detection(history, write=False)["confirmation"]["waiting"]
    return request


@pytest.mark.parametrize("content,field", [
    ("[1, 2]", "not an A/B report"),
    (json.dumps({"base": {}, "candidate": {"commit": "x"}, "rows": []}), "base/commit"),
    ("GOOD", "rows/0/change"),
    ("{oops", "not JSON"),
])
def test_a_malformed_ab_report_is_exit_7_naming_it(candidate_history, tmp_path, content, field):
    request = _waiting(candidate_history)
    path = tmp_path / "ab.json"
    if content == "GOOD":
        report = json.loads(_ab(tmp_path, request, -0.1, (-0.12, -0.08)).read_text())
        del report["rows"][0]["change"]
        content = json.dumps(report)
    path.write_text(content)
    code, out = vk("confirm", "--history", candidate_history, "--id", request["id"], "--ab", path)
    assert code == 7, out
    assert str(path) in out and field in out
    assert not (candidate_history / "confirmations.json").exists()


@pytest.mark.parametrize("mutate,field", [
    (lambda e: e.pop("status"), "status"),
    (lambda e: e.update(ab=[]), "ab"),
    (lambda e: e["request"].update(series=[{"series_id": 1}]), "request/series/0"),
    (lambda e: e["request"]["bad"].update(commit=7), "request/bad"),
    (lambda e: e.update(id="confirm-other"), "id"),
])
def test_a_malformed_confirmations_file_is_exit_7_naming_it(candidate_history, tmp_path, mutate, field):
    request = _waiting(candidate_history)
    out = CliRunner().invoke(confirm_cmd, ["--history", str(candidate_history), "--id", request["id"],
                                           "--ab", str(_ab(tmp_path, request, -0.1, (-0.12, -0.08)))])
    assert out.exit_code == 0, out.output
    path = candidate_history / "confirmations.json"
    data = json.loads(path.read_text())
    mutate(data["confirmations"][request["id"]])
    path.write_text(json.dumps(data))
    code, out = vk("detect", "--history", candidate_history)
    assert code == 7, out
    assert str(path) in out and f"confirmations/{request['id']}/{field}" in out


# -- counted series: the confirmation is an instruction A/B ------------------------------------------

def test_a_timed_candidate_asks_for_a_wallclock_ab(candidate_history):
    (request,) = run_detection(candidate_history, write=False)["confirmation"]["waiting"]
    assert request["instrument"] == "wallclock"


def test_the_instrument_of_a_confirmation_follows_the_metrics_that_moved():
    cell = {"server": "valkey:unstable", "requests": 20000, "io_threads": 1, "tests": ["get"]}
    counted = {"cell": cell, "series": [{"series_id": "a", "metric": "instructions_per_op", "magnitude": 0.004}]}
    assert confirmations.instrument_for(counted) == "instructions"
    both = {"cell": cell, "series": [*counted["series"], {"series_id": "b", "metric": "rps", "magnitude": -0.05}]}
    assert confirmations.instrument_for(both) == "both"
    threaded = {**both, "cell": {**cell, "io_threads": 4}}          # counts refuse io-threads > 1
    assert confirmations.instrument_for(threaded) == "wallclock"
    # The series' own instrument dimension is not the A/B cell's: the request carries it.
    assert "instrument" not in confirmations.series_cell({"engine": "valkey", "version": "unstable",
                                                          "instrument": "instructions", "command": "GET"})


def _counts_report(change, low, high, mde=0.0008, **extra):
    row = {"cell": "standalone io1 P1 c1 d3", "command": "GET", "metric": "instructions_per_op", "change": change,
           "ci_low": low, "ci_high": high, "mde": mde, "rounds": 3, "verdict": "more instructions", **extra}
    return {"base": {"commit": "a" * 40}, "candidate": {"commit": "b" * 40}, "rows": [], "counts": [row],
            "counts_target_mde": 0.005, "instrument": "instructions"}


@pytest.mark.parametrize("report, status", [
    (_counts_report(0.004, 0.0035, 0.0045), "confirmed"),            # +0.4 %: a counted regression
    (_counts_report(0.0004, 0.0001, 0.0007), "rejected"),            # real but below the 0.1 % minimum
    (_counts_report(-0.003, -0.0035, -0.0025), "rejected"),          # fewer instructions
    (_counts_report(0.004, -0.01, 0.02, mde=0.03, rounds_for_target=40), "inconclusive"),
])
def test_a_counted_confirmation_is_decided_by_the_instruction_rows(report, status):
    got, row = confirmations.verdict_of(report, 0.02, counted=True, count_min_effect=0.001)
    assert got == status
    if status == "inconclusive":
        assert "seed pairs" in row["verdict"]
    # the wall-clock reading of the same report has no rows: never confirmed by it
    assert confirmations.verdict_of(report, 0.02)[0] == "rejected"
