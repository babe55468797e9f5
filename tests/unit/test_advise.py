"""The io-threads advisor on the Raspberry Pi CM4 blog's published figures and on synthetic
sweeps (within noise, client-bound, placement, history input), plus the CLI formats."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vkbench.advise import advise, advise_paths, to_markdown
from vkbench.cli import cli
from vkbench.errors import UsageError
from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore
from vkbench.results.io import load_result, write_result
from vkbench.stats import summarize

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "results" / "reference"
#: The blog's io-threads sweep on the overclocked CM4 (2.2 GHz): io-threads 1, 5 and 2.
PI_SWEEP = ("pi-cm4-blog-2-overclock.json", "pi-cm4-blog-3-io5.json", "pi-cm4-blog-4-io2.json")


@pytest.fixture
def pi_sweep(tmp_path) -> Path:
    for name in PI_SWEEP:
        shutil.copy(REFERENCE / name, tmp_path / name)
    return tmp_path


def test_pi_cm4_blog_figures_recommend_io_threads_2(pi_sweep):
    advice = advise_paths([pi_sweep])
    assert {a.command for a in advice} == {"SET", "GET"}
    for a in advice:
        assert a.machine_class == "pi-cm4"
        assert a.recommended == 2 and a.best == 2
        assert not a.client_on_box and a.server_cores == 4
        assert [w["io_threads"] for w in a.warnings if w["code"] == "oversubscribed"] == [5]
        assert "use io-threads 2 on pi-cm4: 5 is" in a.sentence
        assert "the server has 4 cores and io-threads 5 oversubscribes them" in a.sentence
    set_advice = next(a for a in advice if a.command == "SET")
    assert "5 is 43% slower" in set_advice.sentence  # 345,495 against 609,050 rps


def _result(io: int, rps: list[float], *, cls="box", cores=2, backend="native", client_threads=None,
            flags=(), cpu=None, run_id="r1", ts="2026-11-01T00:00:00Z", p99=None) -> dict:
    data = copy.deepcopy(load_result(REFERENCE / "pi-cm4-blog-4-io2.json"))
    data["kind"] = "vkbench.result"
    data.pop("provenance")
    data["run"].update(run_id=run_id, cell_id=f"cell-io{io}", backend=backend, machine_class=cls,
                       trigger="manual", timestamp=ts)
    data["subject"]["build"] = {"source": "cache", "id": "sha256:abc", "detail": None}
    data["dimensions"].update(io_threads=io, client_threads=client_threads, cpu=cpu, runner=cls, tests=["set"],
                              tool="valkey-benchmark")
    data["environment"].update(fingerprint_id=f"fp-{cls}", cores=cores)
    summary = {"rps": summarize(rps)}
    if p99:
        summary["p99"] = summarize(p99)
    data["summary"] = {"SET": summary}
    data["repetitions"] = [{"index": i, "records": [{"command": "SET", "rps": v, "latency_ms": {}, "tool": "valkey-benchmark"}]}
                           for i, v in enumerate(rps)]
    data["validity"] = {"valid": "client-bound" not in flags,
                        "flags": [{"code": f, "severity": "invalid" if f == "client-bound" else "warning",
                                   "message": f, "fix": None} for f in flags]}
    return data


def test_smallest_setting_within_noise_wins():
    results = [_result(1, [500e3, 520e3, 480e3]), _result(2, [505e3, 540e3, 470e3]), _result(4, [300e3, 310e3, 290e3])]
    [a] = advise(results)
    assert a.best == 2 and a.recommended == 1
    assert [s.within_noise for s in a.settings] == [True, True, False]
    assert "use io-threads 1 on box: 4 is 40% slower" in a.sentence


def test_measurable_gain_recommends_more_threads():
    results = [_result(1, [300e3, 305e3, 295e3]), _result(2, [600e3, 610e3, 590e3])]
    [a] = advise([*results], machine_class="box")
    assert a.recommended == 2
    assert "1 is 50% slower" in a.sentence and "largest setting measured" in a.sentence


def test_gain_within_noise_is_named_as_such():
    results = [_result(1, [500e3, 600e3, 400e3]), _result(2, [540e3, 640e3, 440e3])]
    [a] = advise(results)
    assert a.recommended == 1 and a.best == 2
    assert "is only 8% faster, within the noise" in a.sentence


def test_client_on_box_oversubscription_and_client_bound_warnings():
    results = [_result(1, [400e3, 410e3, 390e3], client_threads=1), _result(2, [200e3, 210e3, 190e3], client_threads=1,
                                                                  flags=("client-bound",))]
    [a] = advise(results)
    assert a.client_on_box and a.recommended == 1
    codes = {(w["code"], w["io_threads"]) for w in a.warnings}
    assert codes == {("oversubscribed", 2), ("client-bound", 2)}
    assert "the client shares the machine's 2 cores (1 client thread)" in a.sentence
    assert "the client was the bottleneck at io-threads 2" in a.sentence


def test_cpu_placement_gives_the_server_its_own_cores():
    cpu = {"server": "0-3", "client": "4-7"}
    results = [_result(io, [100e3 * io] * 3, cpu=cpu, cores=8) for io in (1, 2, 4)]
    [a] = advise(results)
    assert a.server_cores == 4 and not a.client_on_box and not a.warnings
    assert a.recommended == 4


@pytest.fixture
def two_host_sweep():
    """io-threads 1, 2, 4 and 8 of a server on an 8-core machine reached over the network (compose
    on a remote engine: the result records the server's machine as server_environment), driven by
    4 client threads on a 2-core client machine."""
    server = {"fingerprint_id": "fp-server", "arch": "x86_64", "cores": 8, "cpu_model": "AMD EPYC"}
    results = []
    for io, rps in ((1, 300e3), (2, 520e3), (4, 800e3), (8, 810e3)):
        r = _result(io, [rps * 0.99, rps, rps * 1.01], cls="two-host", cores=2, backend="compose", client_threads=4)
        r["server_environment"] = dict(server)
        results.append(r)
    return results


def test_a_remote_server_uses_its_own_cores_and_the_client_does_not_count(two_host_sweep):
    [a] = advise(two_host_sweep)
    assert a.server_cores == 8 and not a.client_on_box
    assert [s.threads for s in a.settings] == [1, 2, 4, 8]
    assert not any(s.oversubscribed for s in a.settings) and not a.warnings
    assert a.recommended == 4 and a.best == 8
    assert "io-threads 8 is only 1% faster, within the noise" in a.sentence and "client shares" not in a.sentence


def test_a_remote_server_oversubscribed_by_io_threads_alone(two_host_sweep):
    for r in two_host_sweep:
        r["server_environment"]["cores"] = 4
    two_host_sweep[-1]["summary"]["SET"]["rps"] = summarize([500e3, 505e3, 495e3])   # io-threads 8 on 4 cores
    [a] = advise(two_host_sweep)
    assert a.recommended == 4 and [w["io_threads"] for w in a.warnings if w["code"] == "oversubscribed"] == [8]
    assert "use io-threads 4 on two-host: 8 is 38% slower, the server has 4 cores and io-threads 8 oversubscribes them" in a.sentence


def test_server_machines_are_separate_workloads(two_host_sweep):
    other = copy.deepcopy(two_host_sweep[:2])
    for r in other:
        r["server_environment"]["fingerprint_id"] = "fp-other-server"
    assert len(advise([*two_host_sweep, *other])) == 2


def test_an_invalid_result_never_wins_silently():
    """io-threads 2 measured faster, but the client was the bottleneck there (the result is
    invalid): the recommendation comes from the valid settings, and the advice says why."""
    results = [_result(1, [400e3, 410e3, 390e3], cores=8), _result(2, [600e3, 610e3, 590e3], cores=8, flags=("client-bound",)),
               _result(4, [300e3, 310e3, 290e3], cores=8)]
    [a] = advise(results)
    assert a.recommended == 1 and a.best == 1
    assert [(w["code"], w["io_threads"]) for w in a.warnings if w["code"] == "invalid"] == [("invalid", 2)]
    assert "io-threads 2 measured as fast or faster but was left out, flagged invalid (io-threads 2: client-bound)" in a.sentence
    assert "use io-threads 1 on box: 4 is 25% slower" in a.sentence
    row = next(r for r in to_markdown([a]).splitlines() if r.startswith("| 2 |"))
    assert "invalid: not considered" in row


def test_every_result_invalid_is_said_plainly():
    results = [_result(io, [v] * 3, cores=8, flags=("client-bound",)) for io, v in ((1, 400e3), (2, 600e3))]
    [a] = advise(results)
    assert a.recommended == 2
    assert any(w["code"] == "no-valid-setting" for w in a.warnings)
    assert "every setting was flagged invalid" in a.sentence


def test_slower_within_noise_still_says_why():
    results = [_result(1, [500e3, 600e3, 400e3], client_threads=1), _result(2, [470e3, 570e3, 370e3], client_threads=1)]
    [a] = advise(results)
    assert a.recommended == 1
    assert a.sentence == ("use io-threads 1 on box: 2 is no faster (6% slower, not significant over these repetitions), and the client shares "
                          "the machine's 2 cores (1 client thread) and io-threads 2 oversubscribes them")


def test_single_setting_and_other_classes_give_no_advice():
    assert advise([_result(1, [1.0, 1.1, 0.9])]) == []
    results = [_result(1, [1, 1, 1], cls="a"), _result(2, [2, 2, 2], cls="b")]
    assert advise(results) == []


def test_newest_result_per_setting_wins():
    old = _result(2, [900e3] * 3, run_id="old", ts="2026-10-01T00:00:00Z")
    results = [old, _result(1, [500e3] * 3), _result(2, [250e3] * 3)]
    [a] = advise(results)
    assert a.recommended == 1
    assert next(s for s in a.settings if s.io_threads == 2).run_id == "r1"


def test_history_input_reads_the_newest_points(tmp_path):
    results_dir = tmp_path / "results"
    for r in (_result(1, [500e3] * 3, p99=[1.0, 1.1, 0.9]), _result(2, [250e3] * 3, p99=[3.0, 3.1, 2.9])):
        write_result(results_dir / f"{r['run']['cell_id']}.json", r)
    history = tmp_path / "history"
    ingest(HistoryStore(history), [results_dir])
    [a] = advise_paths([history])
    assert a.recommended == 1 and a.settings[0].latency_metric == "p99"
    md = to_markdown([a])
    assert md.startswith("## io-threads advice") and "| 2 | 250,000" in md


def test_cli_formats(pi_sweep):
    runner = CliRunner()
    out = runner.invoke(cli, ["advise", str(pi_sweep), "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {a["recommended"] for a in data["advice"]} == {2}
    assert data["advice"][0]["settings"][0]["rps"]["median"] > 0
    out = runner.invoke(cli, ["advise", str(pi_sweep), "--format", "markdown"])
    assert out.exit_code == 0 and "oversubscribes them" in out.output and "| 5 |" in out.output
    out = runner.invoke(cli, ["advise", str(pi_sweep)])
    assert out.exit_code == 0 and "use io-threads 2 on pi-cm4" in " ".join(out.output.split())
    out = runner.invoke(cli, ["advise", str(REFERENCE / PI_SWEEP[0]), "--format", "markdown"])
    assert out.exit_code == 0 and out.output == ""
    assert isinstance(runner.invoke(cli, ["advise"]).exception, UsageError)
