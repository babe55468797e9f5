"""An incident whose last good and first bad runs both recorded a profile gets the diff in
detect.json, in the issue body / job summary (Markdown), and a page on the site."""

from __future__ import annotations

import importlib.util
import json
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
    attach_profile_diffs(store.path, incidents, store.read_series, store.index()["series"])
    diff = incidents[0]["profile_diff"]
    assert diff["series_id"] == facts["sid"] and diff["rows"][0]["function"] == "slowHelper"
    incident = {**incidents[0], "title": "t"}
    md = render_incident(incident, [], repo="valkey-io/valkey")
    assert "CPU profile of the server, last good → first bad" in md and "| `slowHelper` | 0.0% | 25.9% |" in md
    # An incident without profiles on both sides gets nothing.
    other = {**incidents[0], "good": {"run_id": "nope"}}
    other.pop("profile_diff")
    attach_profile_diffs(store.path, [other], store.read_series, store.index()["series"])
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
