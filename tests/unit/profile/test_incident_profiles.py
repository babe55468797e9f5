"""An incident whose last good and first bad runs both recorded a profile gets the diff in
detect.json, in the issue body / job summary (Markdown), and a page on the site."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

from vkbench.alerts.summary import render_incident
from vkbench.history.store import HistoryStore
from vkbench.profile.incidents import attach_profile_diffs
from vkbench.site.build import build_site

FACTORY = Path(__file__).resolve().parents[2] / "browser" / "insights_factory.py"


def _factory():
    spec = importlib.util.spec_from_file_location("insights_factory", FACTORY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_incident_gets_the_profile_diff_in_detect_and_markdown(tmp_path):
    factory = _factory()
    history = tmp_path / "history"
    facts = factory.write_history(history, tmp_path / "results")
    store = HistoryStore(history)
    incidents = json.loads((history / "detect.json").read_text())["incidents"]
    series = store.index()["series"]
    attach_profile_diffs(store.path, incidents, lambda sid, runs: store.points_of_runs(sid, series[sid], runs), series)
    diff = incidents[0]["profile_diff"]
    assert diff["series_id"] == facts["sid"] and diff["rows"][0]["function"] == "slowHelper"
    incident = {**incidents[0], "title": "t"}
    md = render_incident(incident, [], repo="valkey-io/valkey")
    assert "CPU profile of the server, last good → first bad" in md and "| `slowHelper` | 0.0% | 25.9% |" in md
    # An incident without profiles on both sides gets nothing.
    other = {**incidents[0], "good": {"run_id": "nope"}}
    other.pop("profile_diff")
    attach_profile_diffs(store.path, [other], lambda sid, runs: store.points_of_runs(sid, series[sid], runs), series)
    assert "profile_diff" not in other


def test_site_writes_the_profile_page_and_the_advice(tmp_path):
    factory = _factory()
    history = tmp_path / "history"
    facts = factory.write_history(history, tmp_path / "results")
    out = tmp_path / "site"
    build_site(history, out, reference_dir=factory.REPO / "results" / "reference")
    index = json.loads((out / "data" / "index.json").read_text())
    page = json.loads((out / "data" / "profiles" / f"{index['profiles'][facts['incident']]}.json").read_text())
    assert page["rows"][0]["function"] == "slowHelper"
    assert page["trees"]["diff"]["value"] == 1350 and page["trees"]["before"]["value"] == 1000
    advice = json.loads((out / "data" / "advice.json").read_text())
    assert {a["recommended"] for a in advice["advice"]} == {1}
    assert any(a["machine_class"] == "pi-cm4" and a["recommended"] == 2 for a in advice["references"])
    assert (out / "assets" / "vendor" / "d3-flamegraph.bundle.min.js").stat().st_size > 10_000


def test_a_profile_file_outside_the_run_folder_is_refused(tmp_path):
    """profile.file names the stacks beside the result: a result is refused unless it is exactly
    <cell_id>.raw/profile.folded, and a raw folder linked elsewhere is refused where it is read
    (exit 7 naming the result) - a result never makes vkbench read another file."""
    import pytest

    from vkbench.errors import ResultFileError
    from vkbench.profile import profile_diff
    from vkbench.results.io import load_result, validate_result

    factory = _factory()
    history = tmp_path / "history"
    factory.write_history(history, tmp_path / "results")
    result_path = tmp_path / "results" / "run-good" / "valkey-unstable_standalone_io1.json"   # the incident's series
    data = load_result(result_path)
    cell_id = data["run"]["cell_id"]
    for other in ("../../../etc/passwd", "/etc/passwd", f"{cell_id}.raw/../x.folded", "other.raw/profile.folded"):
        with pytest.raises(ResultFileError, match="profile/file") as err:
            validate_result({**data, "profile": {**data["profile"], "file": other}}, source=str(result_path))
        assert str(result_path) in str(err.value)
    # The right name, but the raw folder is a link to another folder: refused when read.
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "profile.folded").write_text("valkey-server;main 5\n")
    raw = result_path.parent / f"{cell_id}.raw"
    shutil.rmtree(raw)
    raw.symlink_to(secret)
    with pytest.raises(ResultFileError, match="leads outside the run folder") as err:
        profile_diff(result_path, result_path)
    assert str(result_path) in err.value.message
    # The same in the history's copy, read by detection for an incident.
    store = HistoryStore(history)
    incidents = json.loads((history / "detect.json").read_text())["incidents"]
    run_copy = next(history.glob(f"runs/*/run-good/{cell_id}.json"))
    copied_raw = run_copy.parent / f"{cell_id}.raw"
    shutil.rmtree(copied_raw)
    copied_raw.symlink_to(secret)
    series = store.index()["series"]
    with pytest.raises(ResultFileError, match="leads outside the run folder"):
        attach_profile_diffs(store.path, incidents, lambda sid, runs: store.points_of_runs(sid, series[sid], runs), series)
