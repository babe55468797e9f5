"""Issue 18, inputs with no bound: each is refused before it is read whole or expanded, with its
exit code and a message that says the limit, no traceback, and nothing in the history changed
(a hash of folders this test created; FIFOs and devices are never opened while hashing).

The FIFO and /dev/zero cases run the CLI in a child process with a timeout, so a regression
fails the test instead of hanging the suite; the FIFO is removed afterwards."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_outcome import vk
from factory import make_result, write_result
from test_escapes import tree_hash

from vkbench.history.ingest import ingest
from vkbench.history.store import HistoryStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def work(tmp_path) -> Path:
    write_result(tmp_path / "old", make_result(run_id="old-run", timestamp="2026-11-02T02:00:00Z"))
    ingest(HistoryStore(tmp_path / "history"), [tmp_path / "old"])
    (tmp_path / "bad").mkdir()
    return tmp_path


def refused(work: Path, code: int, *needles: str, inputs: Path | None = None) -> None:
    before = tree_hash(work / "history")
    got, text = vk("ingest", inputs or work / "bad", "--history", work / "history")
    assert got == code, text[-1500:]
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text[-1500:]}"
    assert tree_hash(work / "history") == before


def ingest_in_child(work: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "bench"), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "vkbench", "ingest", str(work / "bad"), "--history", str(work / "history")],
                          env=env, capture_output=True, text=True, timeout=120)


# -- files that are not files, or too big ------------------------------------------------------

def test_a_fifo_named_like_a_result_is_refused_without_blocking(work):
    fifo = work / "bad" / "x.json"
    os.mkfifo(fifo)
    try:
        before = tree_hash(work / "history")
        proc = ingest_in_child(work)
        assert proc.returncode == 7, proc.stdout + proc.stderr
        assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr
        assert tree_hash(work / "history") == before
    finally:
        fifo.unlink()


def test_a_link_to_dev_zero_is_refused_without_reading(work):
    (work / "bad" / "x.json").symlink_to("/dev/zero")
    before = tree_hash(work / "history")
    proc = ingest_in_child(work)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr
    assert tree_hash(work / "history") == before


def test_a_result_over_4_mib_is_refused(work):
    text = json.dumps(make_result(run_id="big", timestamp="2026-11-20T02:00:00Z"))
    (work / "bad" / "big.json").write_text(text + " " * (4 * 1024 * 1024))     # valid JSON, schema-valid, too big
    refused(work, 7, "at most 4194304 bytes")


def _with_raw(work: Path, sizes: list[int]) -> None:
    result = make_result(run_id="raw", timestamp="2026-11-20T02:00:00Z")
    write_result(work / "bad", result)
    raw = work / "bad" / f"{result['run']['cell_id']}.raw"
    raw.mkdir()
    for i, size in enumerate(sizes):
        with open(raw / f"out{i}.txt", "wb") as handle:      # sparse: no disk used
            handle.truncate(size)


def test_a_raw_file_over_40_mib_is_refused(work):
    _with_raw(work, [41 * 1024 * 1024])
    refused(work, 7, "40 MiB")


def test_a_raw_folder_over_64_mib_is_refused(work):
    _with_raw(work, [35 * 1024 * 1024, 35 * 1024 * 1024])
    refused(work, 7, "64 MiB")


# -- what one result may add -------------------------------------------------------------------

def _hostile(work: Path, mutate) -> None:
    result = copy.deepcopy(make_result(run_id="hostile", timestamp="2026-11-20T02:00:00Z"))
    (work / "bad" / "hostile.json").write_text(json.dumps(mutate(result)))


def _rename_command(new: str):
    def mutate(result: dict) -> dict:
        result["summary"][new] = result["summary"].pop("SET")
        for rep in result["repetitions"]:
            for record in rep["records"]:
                if record["command"] == "SET":
                    record["command"] = new
        return result
    return mutate


def test_more_than_64_series_from_one_result_is_refused(work):
    result = make_result(run_id="wide", timestamp="2026-11-20T02:00:00Z", rps={f"CMD{i}": 1000.0 + i for i in range(64)})
    result["summary"]["CMD64"] = copy.deepcopy(result["summary"]["CMD0"])      # the 65th, past the factory's check
    for rep in result["repetitions"]:
        rep["records"].append(dict(rep["records"][0], command="CMD64"))
    (work / "bad" / "wide.json").write_text(json.dumps(result))
    refused(work, 7, "at most 64 series")


NAMES = {
    "huge-name": ("S" * 200_000, "at most 200"),
    "newline-and-workflow-command": ("SET\n::warning file=x::x\x1b[2J\x1b]0;t\x07", "U+000A"),
    "escape": ("SET\x1b[2J", "U+001B"),
    "right-to-left-override": ("SET\u202eTEG", "U+202E"),
    "c1-control": ("SET\x85", "U+0085"),
}


@pytest.mark.parametrize("case", list(NAMES))
def test_a_command_name_is_bounded_and_without_controls(work, case):
    name, needle = NAMES[case]
    _hostile(work, _rename_command(name))
    refused(work, 7, needle, "command name")


@pytest.mark.parametrize("timestamp", ["9999-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "2008-12-31T23:59:59Z"])
def test_a_timestamp_far_from_now_is_refused(work, timestamp):
    def mutate(result: dict) -> dict:
        result["run"]["timestamp"] = timestamp
        return result
    _hostile(work, mutate)
    refused(work, 7, "run/timestamp", "check the clock")


# -- YAML and matrices -------------------------------------------------------------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))


def test_an_annotations_alias_bomb_is_refused(work):
    (work / "in").mkdir()
    (work / "in" / "annotations.yaml").write_text(BOMB)
    before = tree_hash(work / "history")
    code, text = vk("detect", "--history", work / "history", "--annotations", work / "in" / "annotations.yaml")
    assert code == 2, text[-1500:]
    assert "aliases" in text
    assert tree_hash(work / "history") == before


def test_a_matrix_alias_bomb_is_refused(tmp_path):
    (tmp_path / "m.yaml").write_text(BOMB)
    code, text = vk("matrix", tmp_path / "m.yaml")
    assert code == 2, text[-1500:]
    assert "aliases" in text


def test_a_matrix_of_millions_of_cells_is_refused_before_expansion(tmp_path):
    """2.56 M cells (the issue's case) in a few lines: counted, not built."""
    versions = ", ".join(f"valkey:9.{i // 10}.{i % 10}" for i in range(40))
    (tmp_path / "m.yaml").write_text(
        "name: huge\ngroups:\n"
        f"  - server: [{versions}]\n"
        f"    io_threads: [{', '.join(str(i) for i in range(1, 41))}]\n"
        f"    pipeline: [{', '.join(str(i) for i in range(1, 41))}]\n"
        f"    clients: [{', '.join(str(i) for i in range(1, 41))}]\n")
    code, text = vk("matrix", tmp_path / "m.yaml", "--format", "json")
    assert code == 2, text[-1500:]
    assert "expands to 2560000 cells" in text and "at most 1024" in text
