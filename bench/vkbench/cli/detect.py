"""``vkbench detect``: change points in a history (writes detect.json) or in one CSV series."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..bidi import isolate

from ..errors import RegressionFound, UsageError


def open_regressions(doc: dict) -> list[dict]:
    return [
        i for i in doc.get("incidents", [])
        if i["status"] == "open" and i["direction"] == "regression" and not i.get("silenced")
    ]


def fail_on_regression(doc: dict) -> None:
    found = open_regressions(doc)
    if found:
        names = "; ".join(f"{i['id']}: {i['title']}" for i in found[:3])
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        raise RegressionFound(
            f"{len(found)} open regression incident(s): {names}{more}",
            hint="look at the runs named above; if the change is expected, add a silence or reset-baseline entry to results/annotations.yaml",
        )


@click.command("detect")
@click.option("--history", "history_dir", type=click.Path(file_okay=False, path_type=Path), help="History directory (from `vkbench ingest`).")
@click.option("--series", "series_csv", type=click.Path(dir_okay=False, path_type=Path), help="One series as CSV (id,value[,samples]): the evaluation interface.")
@click.option("--bigger-is-better/--smaller-is-better", default=True, help="Direction for --series (default: bigger is better, like rps).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--annotations", type=click.Path(dir_okay=False, path_type=Path), help="Annotations YAML (reset-baseline, silence).")
@click.option("--fail-on", type=click.Choice(["regression", "never"]), default="never", show_default=True, help="Exit 10 when an open, unsilenced regression exists.")
@click.option("--write/--no-write", default=True, show_default=True, help="Write detect.json into the history.")
@click.option("--repo", help="OWNER/NAME of the benchmarked commits, for compare links in --format markdown (default: the engine's, valkey-io/valkey).")
@click.option("--jobs", type=int, default=None, help="Worker processes (default: all cores).")
@click.option("--full", is_flag=True,
              help="Detect every series again (default: a series whose shards, annotations and parameters are those "
                   "detect.json was computed from keeps its results).")
def detect_cmd(history_dir, series_csv, bigger_is_better, fmt, annotations, fail_on, write, repo, jobs, full):
    """Find change points (regressions, improvements) in a history or one series.

    \b
    vkbench detect --history vkbench-history --annotations results/annotations.yaml
    vkbench detect --series values.csv --smaller-is-better --format json
    """
    if bool(history_dir) == bool(series_csv):
        raise UsageError("give exactly one of --history DIR or --series FILE.csv", hint="vkbench detect --history vkbench-history")
    if series_csv:
        from ..detect.csv_series import detect_csv

        doc = detect_csv(series_csv, bigger_is_better=bigger_is_better)
        if fmt == "json":
            click.echo(json.dumps(doc))
        else:
            if not doc["change_points"]:
                click.echo("no change point")
            for cp in doc["change_points"]:
                click.echo(f"{cp['index']:>5} {isolate(cp['id'])}: {cp['direction']} {cp['magnitude']:+.1%} p={cp['p_value']:.2g}")
        return

    from ..detect.runner import run_detection

    doc = run_detection(history_dir, annotations, write=write, jobs=jobs, full=full)
    if fmt == "json":
        click.echo(json.dumps(doc, indent=1))
    elif fmt == "markdown":
        from ..alerts.summary import render_summary

        click.echo(render_summary(doc, repo=repo))
    else:
        from ..detect.report import render_text

        click.echo(render_text(doc))
    if fail_on == "regression":
        fail_on_regression(doc)
