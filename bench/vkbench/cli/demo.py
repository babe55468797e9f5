"""``vkbench demo``: the README's main job end to end on this machine."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markdown import Markdown

from ..demo import DemoPaths, run_demo, size_cells
from ..matrix import expand_matrix, load_matrix
from ..runner.execute import new_run_id
from ..runner.session import RunOptions
from .console import make_console
from .run_display import ProgressDisplay, print_summary


@click.command("demo")
@click.option("--preset", default="smoke", show_default=True, help="Matrix preset (or YAML file) to run.")
@click.option("--dir", "base", type=click.Path(file_okay=False, path_type=Path), default=Path("vkbench-demo"),
              show_default=True, help="Where results/, history/ and site/ go. Runs accumulate in its history.")
@click.option("--backend", type=click.Choice(["native", "compose"]), default="native", show_default=True)
@click.option("--size/--no-size", "size", default=True, show_default=True,
              help="Size each topology's repetitions to this machine first (one short unrecorded probe each), "
              "so that no result is flagged too-short; --no-size runs the preset's request counts.")
def demo_cmd(preset: str, base: Path, backend: str, size: bool) -> None:
    """Run PRESET on real servers on 127.0.0.1, add the results to a local history, detect
    regressions and build the trend site. Run it again to grow the history."""
    out, err = make_console(), make_console(stderr=True)
    cells = expand_matrix(load_matrix(preset))
    paths = DemoPaths(base)
    options = RunOptions(backend=backend, run_id=new_run_id(), trigger="manual", machine_class=None)
    if size:
        err.print("sizing the repetitions to this machine (one short unrecorded run per topology) ...")
        cells, sizings = size_cells(cells, paths, options)
        for sizing in sizings:
            err.print(f"  {sizing.describe()}")
    with ProgressDisplay(cells, console=err) as display:
        demo = run_demo(cells, paths, options, progress=display.update)
    print_summary(demo.run, out)
    if demo.ingested:
        out.print(f"history: added {demo.ingested['added']} points to {len(demo.ingested['series'])} series "
                  f"({demo.ingested['skipped']} already there) in {paths.history}/")
    out.print(Markdown(demo.summary_markdown))
    out.print(demo.site_summary)
    out.print()
    out.print(f"[bold]Where to look[/bold]\n"
              f"  results:  {demo.run.out_dir}/  (one JSON per cell, raw tool output in <cell>.raw/)\n"
              f"  history:  {paths.history}/  (detection: {paths.history}/detect.json)\n"
              f"  site:     {paths.site}/index.html\n"
              f"  serve it: .venv/bin/vkbench site serve {paths.site}   then open the URL it prints\n"
              f"  compare:  .venv/bin/vkbench compare <results dir A> <results dir B>")
    demo.run.raise_for_failures()
