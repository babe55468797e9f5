"""Folding perf output, bounding the stored size, reading ELF symbols, and the profile diff."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vkbench.cli import cli
from vkbench.errors import ResultFileError
from vkbench.profile import profile_diff
from vkbench.profile import folded
from vkbench.profile.diff import diff_tree, shares, tree

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "valkey-9.1.2_io2_perf-script.txt"


def test_collapse_real_perf_script_output():
    stacks = folded.collapse(FIXTURE.read_text())
    assert sum(stacks.values()) == 60   # one stack per sample
    assert "valkey-server;__libc_start_call_main;main;aeMain;[valkey-server]" in stacks
    assert any(s.startswith("io_thd_1;start_thread;") for s in stacks)
    assert all(";" in s and "+0x" not in s for s in stacks)


def test_render_bounds_the_size_and_keeps_the_total():
    stacks = {f"t;f{i};leaf{i}": i + 1 for i in range(2000)}
    text, merged = folded.render(stacks, max_bytes=4096)
    assert len(text.encode()) <= 4096 and merged > 0
    parsed = folded.parse(text)
    assert sum(parsed.values()) == sum(stacks.values())
    assert parsed[folded.OTHER_STACKS] == merged
    assert text.splitlines()[0] == "t;f1999;leaf1999 2000"   # the most frequent stack first


def test_parse_rejects_what_is_not_folded(tmp_path):
    bad = tmp_path / "x.folded"
    bad.write_text("main;foo ten\n")
    with pytest.raises(ResultFileError, match="x.folded:1"):
        folded.read(bad)


def test_elf_symbols_of_this_python_and_of_a_text_file(tmp_path):
    info = folded.elf_symbols(sys.executable)
    assert set(info) == {"symtab", "debug_info"} and isinstance(info["symtab"], bool)
    (tmp_path / "t").write_text("not elf")
    assert folded.elf_symbols(tmp_path / "t") == {"symtab": None, "debug_info": None}


BEFORE = {"main;aeMain;processCommand;setCommand": 50, "main;aeMain;readQueryFromClient": 40, "io_thd_1;start_thread;spin": 10}
AFTER = {"main;aeMain;processCommand;setCommand": 50, "main;aeMain;processCommand;setCommand;slowHelper": 50,
         "main;aeMain;readQueryFromClient": 40, "io_thd_1;start_thread;spin": 10}


def test_profile_diff_names_the_function_that_grew_first():
    rows = profile_diff(BEFORE, AFTER)
    assert rows[0].function == "slowHelper" and rows[0].before_self == 0 and rows[0].after_self == pytest.approx(50 / 150)
    by_name = {r.function: r for r in rows}
    assert by_name["readQueryFromClient"].self_delta < 0     # same samples, smaller share
    assert by_name["processCommand"].total_delta > 0
    self_share, total_share, n = shares(AFTER)
    assert n == 150 and total_share["main"] == pytest.approx(140 / 150)


def test_flame_graph_trees():
    t = tree(BEFORE)
    assert t["value"] == 100 and {c["name"] for c in t["children"]} == {"main", "io_thd_1"}
    d = diff_tree(BEFORE, AFTER)
    main = next(c for c in d["children"] if c["name"] == "main")
    assert d["value"] == 150 and main["delta"] > 0
    spin = next(c for c in d["children"] if c["name"] == "io_thd_1")
    assert spin["delta"] == pytest.approx(10 - 10 * 1.5)


def test_the_diff_flame_graph_shows_code_that_disappeared():
    """A stack only the before profile has is drawn at its scaled size, entirely as a negative
    delta (blue), and its parents count it; the stacks of the after profile keep their size."""
    before = {"main;aeMain;processCommand;setCommand;oldFastPath": 30, "main;aeMain;processCommand;setCommand": 20,
              "main;aeMain;readQueryFromClient": 50}
    after = {"main;aeMain;processCommand;setCommand": 100, "main;aeMain;readQueryFromClient": 100}   # 2x the samples
    d = diff_tree(before, after)

    def node(t, *path):
        for name in path:
            t = next(c for c in t.get("children", []) if c["name"] == name)
        return t

    gone = node(d, "main", "aeMain", "processCommand", "setCommand", "oldFastPath")
    assert gone["value"] == 60 and gone["delta"] == pytest.approx(-60)        # 30 samples x 200/100
    set_cmd = node(d, "main", "aeMain", "processCommand", "setCommand")
    assert set_cmd["value"] == 100 + 60 and set_cmd["delta"] == pytest.approx((100 - 40) - 60)
    assert node(d, "main", "aeMain", "readQueryFromClient")["value"] == 100
    assert d["value"] == 260
    # a vanishing stack too small to draw at scale still keeps a sliver
    tiny = diff_tree({"main;rare": 1, "main;hot": 999}, {"main;hot": 10})
    assert node(tiny, "main", "rare")["value"] == 1


def test_profile_diff_cli(tmp_path):
    for name, stacks in (("a.folded", BEFORE), ("b.folded", AFTER)):
        (tmp_path / name).write_text(folded.render(stacks)[0])
    runner = CliRunner()
    out = runner.invoke(cli, ["profile", "diff", str(tmp_path / "a.folded"), str(tmp_path / "b.folded"), "--format", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["rows"][0]["function"] == "slowHelper"
    out = runner.invoke(cli, ["profile", "diff", str(tmp_path / "a.folded"), str(tmp_path / "b.folded"), "--format", "markdown"])
    assert out.exit_code == 0 and "| `slowHelper` | 0.0% | 33.3% | ▲ +33.3 pt |" in out.output
    out = runner.invoke(cli, ["profile", "diff", str(tmp_path / "a.folded"), str(tmp_path / "b.folded")])
    assert out.exit_code == 0 and "slowHelper" in out.output


def test_record_without_perf_says_so_and_carries_on(tmp_path, monkeypatch):
    from vkbench.profile import record

    calls = []
    monkeypatch.setenv("VKBENCH_PERF", str(tmp_path / "no-perf"))
    block, value = record.record([1], lambda: calls.append(1) or "ran", out_file=tmp_path / "p.folded")
    assert block["status"] == "unavailable" and "tools/setup/perf.sh" in block["reason"]
    assert value == "ran" and calls == [1] and not (tmp_path / "p.folded").exists()
    # A perf that refuses (here: exits at once) is "failed" with its reason; the body still runs.
    monkeypatch.setenv("VKBENCH_PERF", "/bin/false")
    block, value = record.record([1], lambda: "ran again", out_file=tmp_path / "p.folded")
    assert block["status"] == "failed" and block["reason"].startswith("perf record exited with 1")
    assert value == "ran again"


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_perf_is_stopped_when_attaching_fails(tmp_path, monkeypatch, failure):
    """perf runs in its own session (a Ctrl-C does not reach it): a Ctrl-C or an OSError while it
    attaches must still stop it, never leave it recording the servers after vkbench is gone."""
    import subprocess

    from vkbench.profile import record

    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("VKBENCH_PERF", str(fake))
    started: list[subprocess.Popen] = []
    real_start = record._start

    def start(argv, log):
        proc = real_start(argv, log)
        started.append(proc)
        return proc

    def enable(proc, ctl, ack):
        raise failure("interrupted while perf attaches")

    monkeypatch.setattr(record, "_start", start)
    monkeypatch.setattr(record, "_enable", enable)
    try:
        with pytest.raises(failure):
            record.record([1], lambda: "never", out_file=tmp_path / "p.folded")
        assert len(started) == 1
        assert started[0].poll() is not None, "perf still running after record() returned"
    finally:
        for proc in started:          # the stand-in perf this test started, if the code under test did not
            if proc.poll() is None:
                proc.kill()
                proc.wait()
