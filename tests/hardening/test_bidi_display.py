"""Issue 18, names that could spoof what is shown: a control or bidirectional formatting
character in a name is refused where results enter (test_unbounded_inputs.py, NAMES); what may
still be shown - right-to-left letters in a name, an id from a CSV series, an annotation's
reason - is isolated (U+2068 ... U+2069) with every control shown escaped, in the terminal
(compare, detect), in Markdown (vkbench/markdown.py) and on the site (format.js, ui.js)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from cli_outcome import vk
from factory import make_result, nightly_series, write_result
from test_escapes import tree_hash

from vkbench import markdown as md
from vkbench.bidi import FSI, PDI, isolate

REPO = Path(__file__).resolve().parents[2]
HEBREW = "SET\u05d0\u05d1"           # letters, allowed in a name; right-to-left
RAW_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066\u2067]")


def _renamed(result: dict, new: str) -> dict:
    result["summary"][new] = result["summary"].pop("SET")
    for rep in result["repetitions"]:
        for record in rep["records"]:
            if record["command"] == "SET":
                record["command"] = new
    return result


def test_the_library_isolates_and_escapes():
    assert isolate("SET") == "SET"                                  # plain names unchanged
    assert isolate(HEBREW) == f"{FSI}{HEBREW}{PDI}"
    assert isolate("SET\u202eTEG") == "SET\\u202eTEG"
    assert isolate("SET\n::warning file=x::x\x1b[2J\x1b]0;t\x07") == "SET\\x0a::warning file=x::x\\x1b[2J\\x1b]0;t\\x07"
    assert isolate("a\u2069b\u2066") == "a\\u2069b\\u2066"          # no isolate can be closed from inside


def test_compare_isolates_a_right_to_left_name_in_the_terminal(tmp_path):
    for side, rps in (("base", 400_000.0), ("cand", 380_000.0)):
        (tmp_path / side).mkdir()
        write_result(tmp_path / side, _renamed(make_result(run_id=f"r-{side}", rps={"SET": rps, "GET": rps}), HEBREW))
    before = tree_hash(tmp_path / "base", tmp_path / "cand")
    code, text = vk("compare", tmp_path / "base", tmp_path / "cand")
    assert code == 0, text
    assert f"{FSI}{HEBREW}{PDI}" in text
    assert not RAW_CONTROLS.search(text)
    assert tree_hash(tmp_path / "base", tmp_path / "cand") == before


def test_compare_refuses_a_name_with_controls(tmp_path):
    for side in ("base", "cand"):
        (tmp_path / side).mkdir()
        write_result(tmp_path / side, _renamed(make_result(run_id=f"r-{side}"), "SET\x1b[2J\u202eTEG"))
    code, text = vk("compare", tmp_path / "base", tmp_path / "cand")
    assert code == 7, text
    assert "U+001B" in text and "\x1b" not in text


def test_detect_escapes_a_hostile_id_of_a_csv_series(tmp_path):
    ids = [f"n{i}" for i in range(12)]
    ids[6] = "g\x1b[2J\u202e::warning::x"
    (tmp_path / "s.csv").write_text("id,value\n" + "".join(f'"{i}",{1 if n < 6 else 9}\n' for n, i in enumerate(ids)))
    for fmt in ("text", "markdown"):
        code, text = vk("detect", "--series", tmp_path / "s.csv", "--format", fmt)
        assert code == 0, text
        assert "g\\x1b[2J\\u202e" in text.replace("\\\\", "\\")
        assert not RAW_CONTROLS.search(text)


def test_detect_isolates_a_right_to_left_series_in_text_and_markdown(tmp_path):
    paths = nightly_series(tmp_path / "res", [4e5] * 8 + [2.5e5] * 8, command=HEBREW)
    assert vk("ingest", *paths, "--history", tmp_path / "h")[0] == 0
    for fmt in ("text", "markdown"):
        code, text = vk("detect", "--history", tmp_path / "h", "--format", fmt, "--no-write")
        assert code == 0, text
        assert f"{FSI}{HEBREW}{PDI}" in text, text[-2000:]
        assert not RAW_CONTROLS.search(text)


def test_markdown_isolates_and_escapes():
    assert md.text(HEBREW) == f"{FSI}{HEBREW}{PDI}"
    assert md.text("SET\u202eTEG") == "SET\\\\u202eTEG"              # the backslash itself escaped for Markdown
    assert md.code("SET\u202eTEG") == "`SET\\u202eTEG`"
    assert md.text("plain_name") == "plain\\_name"                   # unchanged for left-to-right text


def test_the_site_isolates_every_name_it_shows():
    """format.js isolate/dimValueText/safeText and dims.js labelFor (every series label, legend,
    filter and chart title goes through them; ui.js h() passes every string through safeText)."""
    static = REPO / "bench" / "vkbench" / "site" / "static"
    script = (
        "const f = await import(process.argv[1]); const d = await import(process.argv[2]);"
        "const s = {dims: {server: 'valkey:9.1.2', command: process.argv[3], io_threads: 2}};"
        "console.log(JSON.stringify([f.isolate('SET'), f.isolate(process.argv[3]), f.dimValueText('command', process.argv[3]),"
        " f.dimValueText('command', 'SET\\u202eTEG'), f.safeText('a\\u202eb\\u2068c\\u2069\\n'),"
        " d.labelFor(s, ['command']), d.labelFor(s, [])]));"
    )
    proc = subprocess.run(["node", "--input-type=module", "-e", script, (static / "format.js").as_uri(),
                           (static / "dims.js").as_uri(), HEBREW], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    iso = f"{FSI}{HEBREW}{PDI}"
    assert json.loads(proc.stdout) == ["SET", iso, iso, "SET\\u202eTEG", f"a\\u202eb{FSI}c{PDI}\n", iso,
                                       f"valkey:9.1.2 · {iso}"]
    ui = (static / "ui.js").read_text()
    assert "createTextNode(safeText(c))" in ui


@pytest.mark.parametrize("name", ["SET\u202eTEG", "SET\x1b[2J", "SET\n::warning file=x::x"])
def test_markdown_of_an_incident_never_carries_a_raw_control(name):
    assert not RAW_CONTROLS.search(md.text(name)) and "\n" not in md.text(name)
