"""Instruction counts and memory per key in `vkbench compare` (verdicts, lower is better) and in the
github-action-benchmark export (counts.json, customSmallerIsBetter)."""

from __future__ import annotations

import copy
import json

from click.testing import CliRunner
from factory import make_result, write_result

from vkbench.cli.compare import compare_cmd
from vkbench.cli.export import export_group
from vkbench.compare import compare_dirs, paired_counts
from vkbench.export.gab import build_gab
from vkbench.results.io import validate_result


def counted(*, run_id: str, per_server: dict[str, list[float]], bytes_per_key: float, wallclock: bool = True,
            version: str = "unstable") -> dict:
    out = copy.deepcopy(make_result(run_id=run_id, version=version))
    out["instructions"] = {
        "method": {"tool": "callgrind", "windows": 4, "window_requests": 20000, "servers": 3, "id": "m-1"},
        "commands": {cmd: {"per_op": sorted(v)[1], "values": v, "cv_pct": 0.01, "cv_servers_pct": 0.05, "per_server": v}
                     for cmd, v in per_server.items()},
        "servers": [{"seed": s} for s in (1, 2, 3)],
    }
    out["memory"] = {"keys": 10000, "used_memory_before": 1, "used_memory_after": 2, "bytes_per_key": bytes_per_key}
    if not wallclock:
        out["summary"], out["repetitions"] = {}, []
        out["dimensions"]["instrument"] = "instructions"
    return validate_result(out, source="test")


# seeds differ by ~0.1 % from each other (the hash seed's own effect); each pair moves together
BASE = {"set": [9875.0, 9885.0, 9866.0], "get": [7852.0, 7860.0, 7845.0]}
PLUS_HALF_PERCENT_SET = {"set": [v * 1.005 + d for v, d in zip(BASE["set"], (0.3, -0.2, 0.1))],
                         "get": [v + d for v, d in zip(BASE["get"], (0.2, -0.1, 0.0))]}


def dirs(tmp_path, candidate: dict, *, bytes_after: float = 60.25, wallclock: bool = True):
    write_result(tmp_path / "base", counted(run_id="b", per_server=BASE, bytes_per_key=60.25, wallclock=wallclock))
    write_result(tmp_path / "cand", counted(run_id="c", per_server=candidate, bytes_per_key=bytes_after, wallclock=wallclock))
    return tmp_path / "base", tmp_path / "cand"


def test_compare_reports_instructions_per_seed_and_memory(tmp_path):
    rows, _ = compare_dirs(*dirs(tmp_path, PLUS_HALF_PERCENT_SET, bytes_after=62.0, wallclock=False))
    by = {(r.command, r.metric): r for r in rows}
    set_row = by[("SET", "instructions_per_op")]
    assert set_row.verdict == "worse"                         # more instructions: worse
    assert 0.0045 < set_row.change < 0.0055
    assert set_row.ci_low > 0 and set_row.mde < 0.002         # paired by seed: a tight interval
    assert by[("GET", "instructions_per_op")].verdict == "no significant change"
    mem = by[("-", "bytes_per_key")]
    assert mem.verdict == "worse" and round(mem.change, 4) == round(62.0 / 60.25 - 1, 4)


def test_fewer_instructions_and_less_memory_are_better(tmp_path):
    fewer = {k: [x * 0.99 for x in v] for k, v in BASE.items()}
    rows, _ = compare_dirs(*dirs(tmp_path, fewer, bytes_after=58.0))
    assert {r.verdict for r in rows if r.metric in ("instructions_per_op", "bytes_per_key")} == {"better"}
    assert {r.metric for r in rows} >= {"rps", "p50", "instructions_per_op", "bytes_per_key"}


def test_a_tiny_count_change_is_not_a_verdict():
    base = {1: 10000.0, 2: 10010.0, 3: 9990.0}
    assert paired_counts(base, {s: v * 1.0004 for s, v in base.items()}).verdict == "no significant change"
    assert paired_counts(base, {s: v * 1.003 for s, v in base.items()}).verdict == "worse"
    # seeds that are not on both sides are left out
    assert paired_counts(base, {1: 10030.0, 2: 10040.0, 7: 1.0}).base_median == 10005.0


def test_compare_markdown_names_units_and_rule(tmp_path):
    base, cand = dirs(tmp_path, PLUS_HALF_PERCENT_SET)
    out = CliRunner().invoke(compare_cmd, [str(base), str(cand), "--format", "markdown"])
    assert out.exit_code == 0, out.output
    assert "instructions\\_per\\_op" in out.output and "bytes\\_per\\_key" in out.output
    assert "smaller is better" in out.output and "paired by seed" in out.output
    assert "+0.50%" in out.output or "+0.49%" in out.output or "+0.51%" in out.output


def test_gab_export_has_counts_smaller_is_better(tmp_path):
    write_result(tmp_path / "res", counted(run_id="r1", per_server=BASE, bytes_per_key=60.25))
    out = CliRunner().invoke(export_group, ["gab", str(tmp_path / "res"), "--out", str(tmp_path / "gab")])
    assert out.exit_code == 0, out.output
    counts = json.loads((tmp_path / "gab" / "counts.json").read_text())
    by_name = {e["name"]: e for e in counts}
    set_ops = next(e for n, e in by_name.items() if n.startswith("SET ") and n.endswith(" instructions/op"))
    assert set_ops["unit"] == "instructions/op" and set_ops["value"] == 9875.0 and "method m-1" in set_ops["extra"]
    mem = [e for e in counts if e["unit"] == "bytes/key"]
    assert len(mem) == 2 and mem[0]["value"] == 60.25           # one per series (SET, GET) of the cell
    assert json.loads((tmp_path / "gab" / "rps.json").read_text())      # the wall-clock files as before


def test_gab_export_of_an_instruction_only_result_and_none_without_counts(tmp_path):
    only = build_gab([write_result(tmp_path / "a", counted(run_id="r1", per_server=BASE, bytes_per_key=60.0,
                                                            wallclock=False))])
    assert only.rps == [] and {e["unit"] for e in only.counts} == {"instructions/op", "bytes/key"}
    plain = tmp_path / "plain"
    write_result(plain, make_result())
    CliRunner().invoke(export_group, ["gab", str(plain), "--out", str(tmp_path / "g2")])
    assert not (tmp_path / "g2" / "counts.json").exists()
