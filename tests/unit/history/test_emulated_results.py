"""Results measured under emulation are schema-valid but enter no series."""

from factory import make_result, write_result

from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore
from vkbench.results.io import validate_result

QEMU_USER = {"kind": "qemu-user", "evidence": ["uname -m says aarch64, /proc/cpuinfo describes a x86_64 CPU"]}


def test_an_emulated_result_is_schema_valid_and_kept_out_of_every_series(tmp_path):
    native = make_result(run_id="run-native")
    emulated = make_result(run_id="run-emulated", valid=False)
    emulated["environment"].update({
        "arch": "aarch64", "emulation": QEMU_USER,
        "board": {"model": None, "before": {}, "after": {}},
        "absent": [{"fact": "throttled", "reason": "no vcgencmd"}],
    })
    emulated["validity"]["flags"].append({"code": "emulated", "severity": "invalid", "message": "m", "fix": None})
    validate_result(emulated, source="test")
    store = HistoryStore(tmp_path / "history")
    report = ingest(store, [write_result(tmp_path / "in", native), write_result(tmp_path / "in", emulated)])
    assert report.emulated == 1 and report.added == len(native["summary"])
    assert any("emulation" in note for note in report.notes)
    shards = list((tmp_path / "history" / "series").rglob("*.jsonl"))
    assert shards and not any("run-emulated" in s.read_text() for s in shards)
