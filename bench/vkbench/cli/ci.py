"""``vkbench ci``: the GitHub workflows' steps (their modules live in :mod:`vkbench.ci`)."""

from __future__ import annotations

import importlib

import click

# subcommand -> (module under vkbench.ci, attribute, one-line help)
CI_COMMANDS: dict[str, tuple[str, str, str]] = {
    "plan": ("plan", "plan_cmd", "The benchmark plan job: check the inputs, expand and check the matrix."),
    "inputs": ("inputs", "inputs_cmd", "ab.yml's or bisect.yml's inputs job: check the dispatch inputs, decide `trusted`."),
    "run": ("inputs", "run_cmd", "The A/B or bisect job: check the inputs again and run vkbench ab or bisect."),
    "record": ("record", "record_cmd", "Record a confirmation's verdict or a bisect's culprit in the history and push."),
    "dispatch": ("dispatch", "dispatch_cmd", "Dispatch ab.yml per confirmation candidate or bisect.yml per new incident."),
    "comment": ("comment", "comment_cmd", "Comment the A/B table on its pull request or a bisect's report on its issue."),
    "fetch": ("bench", "fetch_cmd", "The bench job: fetch (or build, once per run) the cell's server and tool."),
    "cell": ("bench", "cell_cmd", "The bench job: run the cell (vkbench run), profiling builds from source."),
    "publish": ("publish", "publish_cmd", "The publish job: publish the results into the history, summarise detection."),
    "export-gab": ("publish", "export_gab_cmd", "The publish job: github-action-benchmark's rps.json and latency.json."),
    "alert": ("issues", "alert_cmd", "The alert job: one issue per regression incident of the published history."),
    "digest": ("issues", "digest_cmd", "The weekly digest issue of the published history."),
    "counts": ("counts", "counts_cmd", "pr-counts.yml: the instruction-count A/B of a pull request (as root)."),
}


class _LazyCiGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(CI_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in CI_COMMANDS:
            return None
        module, attr, _ = CI_COMMANDS[name]
        return getattr(importlib.import_module(f"vkbench.ci.{module}"), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, help_text) for name, (_, _, help_text) in CI_COMMANDS.items()])


@click.group("ci", cls=_LazyCiGroup)
def ci_group() -> None:
    """Steps of the GitHub workflows (the workflows call these through tools/ci/*.sh). Under GitHub Actions
    (GITHUB_ACTIONS=true) every vkbench error is also printed as an ::error:: annotation."""
