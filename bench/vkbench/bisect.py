"""Find the commit that caused a regression between a good and a bad commit.

1. A/B good vs bad: the regression must reproduce here (a "slower" verdict, or "more
   instructions" with ``instrument`` instructions/both, which the A/B gives only when its MDE
   reached the target: an inconclusive A/B names no culprit and says what would reach the
   target); the cell and command with the largest slowdown (or instruction increase) become the
   measure for every later step. With counts, each step is an instruction A/B of seed pairs: a
   few minutes, and no quiet machine needed.
2. Binary search on the first-parent line good..bad: build the midpoint, A/B it against good; a
   midpoint counts as bad when its change is closer to the bad end's change than to zero (past
   half the effect), else good.
3. One commit remains: the culprit, with the effect of its own A/B against good. When the step
   limit stops the search first, the report names the commits still in the range and no culprit
   (``resolved`` false).

Builds are cached per commit, and ccache makes each midpoint a rebuild of the files that changed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .ab import ABOptions, ABReport, Row, commit_markdown, require_on_branch, run_ab
from .ab_counts import CountRow
from . import markdown as md
from .errors import UsageError
from .evidence import is_inconclusive
from .files import write_bytes_atomic, write_json
from .servers import source_build
from .servers.gitmirror import Mirror, redact

Progress = Callable[[str], None]


@dataclass
class Step:
    commit: str
    subject: str
    change: float
    ci_low: float | None
    ci_high: float | None
    mde: float | None
    rounds: int
    judged: str            # "bad" | "good" | "reproduced" | "not reproduced" | "inconclusive", a midpoint
                           # whose MDE missed the target: "bad (MDE above target)" / "good (MDE above target)"
    wall_s: float


@dataclass
class BisectReport:
    url: str
    good: str
    bad: str
    measure: str                      # "cell / command" tracked
    range_size: int
    culprit: str | None
    culprit_subject: str | None
    effect: float | None
    effect_ci: tuple[float | None, float | None]
    steps: list[Step] = field(default_factory=list)
    wall_s: float = 0.0
    reproduced: bool = True
    #: False when the step limit stopped the search before one commit remained: no culprit, and
    #: ``suspects`` names the range still holding it.
    resolved: bool = True
    suspects: dict | None = None          # {"first", "last", "count"} of the commits left
    #: The first A/B's "inconclusive: MDE X% > target Y%; ..." when its evidence could not decide.
    inconclusive: str | None = None
    #: What the steps compare: "rps" (wall clock) or "instructions_per_op" (counts, more is worse).
    metric: str = "rps"
    #: The culprit's functions whose self instructions per operation changed most (counts only).
    functions: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    def markdown(self) -> str:
        """Posted as a comment and appended to the job summary: commit subjects, the URL and the
        measure come from the repository and the caller, so every one is escaped."""
        digits = 3 if self.metric != "rps" else 1
        unit = " instructions per operation" if self.metric != "rps" else ""
        lines = [f"### Bisect {md.code(self.good[:10])}..{md.code(self.bad[:10])} ({self.range_size} commits)", "",
                 f"Repository: {md.text(self.url)}", ""]
        if not self.reproduced and self.inconclusive:
            lines.append(f"The A/B of the two ends was {md.text(self.inconclusive)}: no culprit named.")
        elif not self.reproduced:
            lines.append("The regression did not reproduce in an A/B of the two ends: no culprit named.")
        elif not self.resolved and self.suspects:
            lines.append(f"**Unresolved:** the step limit stopped the search with {self.suspects['count']} commits left, "
                         f"{commit_markdown(self.url, self.suspects['first'])} .. "
                         f"{commit_markdown(self.url, self.suspects['last'])}: no culprit named.")
        elif self.culprit:
            low, high = self.effect_ci
            interval = (f" (95% interval {low * 100:+.{digits}f}% .. {high * 100:+.{digits}f}%)"
                        if low is not None and high is not None else "")
            lines.append(f"**Culprit:** {commit_markdown(self.url, self.culprit)} {md.text(self.culprit_subject)}: "
                         f"{(self.effect or 0) * 100:+.{digits}f}%{unit} on {md.text(self.measure)}{interval}.")
            if self.functions:
                lines.append("Functions whose self instructions per operation changed most: " + ", ".join(
                    f"{md.code(f['function'])} {f['delta']:+,.1f}" for f in self.functions[:5]) + ".")
        lines += ["", f"{len(self.steps)} A/B steps in {self.wall_s:.0f} s, each against the good end:", ""]
        cells = []
        for i, s in enumerate(self.steps):
            interval = (f"{s.ci_low * 100:+.{digits}f}% .. {s.ci_high * 100:+.{digits}f}%"
                        if s.ci_low is not None and s.ci_high is not None else "n/a")
            mde = f"{s.mde * 100:.{digits}f}%" if s.mde is not None else "n/a"
            cells.append([str(i), f"{commit_markdown(self.url, s.commit)} {md.text(s.subject[:60])}",
                          f"{s.change * 100:+.{digits}f}%",
                          interval, mde, str(s.rounds), md.text(s.judged)])
        lines += md.table(["step", "commit", "change", "95% interval", "MDE", "rounds", "judged"], "rlrlrrl", cells)
        return "\n".join(lines) + "\n"


def _row(report: ABReport, measure: tuple[str, str] | None) -> Row | CountRow:
    """The row a step is judged by: the first A/B's worst (more instructions, or slower), then
    the same cell and command in every later step."""
    if measure is None:
        worst = report.worst
        if worst is None:
            raise UsageError("the A/B produced no rows", hint="check the cells")
        return worst
    rows = report.compared
    row = next((r for r in rows if (r.cell, r.command) == measure), None)
    if row is None:
        measured = ", ".join(f"{cell} / {command}" for cell, command in ((r.cell, r.command) for r in rows)) or "none"
        raise UsageError(f"the A/B in {report.out_dir} has no row for {measure[0]} / {measure[1]}, the measure of this bisect",
                         hint=f"every step must run the cells of the first A/B; it measured: {measured}")
    return row


def run_bisect(url: str | None, good: str, bad: str, template: ABOptions, out_dir: Path,
               progress: Progress | None = None, max_steps: int = 20) -> BisectReport:
    url = url or source_build.repo_url()
    began = time.monotonic()
    if max_steps < 1:
        raise UsageError(f"max_steps {max_steps}: at least one step", hint="e.g. 20")
    mirror = Mirror.for_url(url)
    # Each end resolved once: the branch check and every step use these commits, never the
    # refs again (a ref moved in between would be bisected unchecked).
    good_sha, bad_sha = mirror.resolve(good), mirror.resolve(bad)
    if template.require_branch:
        # Both ends on the branch: every commit between them (their ancestors) is too. Checked
        # once here, before anything is built; the steps need not fetch the branch again.
        require_on_branch(url, template.require_branch, {"good": good_sha, "bad": bad_sha})
        template = dataclasses.replace(template, require_branch=None)
    if not mirror.is_ancestor(good_sha, bad_sha) or good_sha == bad_sha:
        raise UsageError(f"{good} ({good_sha[:10]}) is not an ancestor of {bad} ({bad_sha[:10]})",
                         hint="give --good an older commit on the same line as --bad")
    commits = mirror.first_parent_range(good_sha, bad_sha)
    out_dir.mkdir(parents=True, exist_ok=True)

    def ab(candidate: str, index: int) -> tuple[ABReport, float]:
        started = time.monotonic()
        options = dataclasses.replace(template, base=good_sha, candidate=candidate, url=url,
                                      out_dir=out_dir / f"step-{index:02d}-{candidate[:10]}")
        return run_ab(options, progress), round(time.monotonic() - started, 1)

    if progress:
        progress(f"bisect: {len(commits)} commits between {good_sha[:10]} and {bad_sha[:10]}")
    first, wall = ab(bad_sha, 0)
    worst = _row(first, None)
    measure = (worst.cell, worst.command)
    reproduced = worst.regressed
    undecided = worst.verdict if is_inconclusive(worst.verdict) else None
    steps = [Step(bad_sha, mirror.subject(bad_sha), worst.change, worst.ci_low, worst.ci_high, worst.mde, worst.rounds,
                  "reproduced" if reproduced else "inconclusive" if undecided else "not reproduced", wall)]
    report = BisectReport(redact(url), good_sha, bad_sha, f"{measure[0]} / {measure[1]}", len(commits), None, None,
                          None, (None, None), steps, reproduced=reproduced, inconclusive=undecided,
                          metric=getattr(worst, "metric", "rps"))
    if reproduced:
        bad_change = worst.change
        low, high = -1, len(commits) - 1          # commits[low] is good (-1: the good end), commits[high] bad
        measured: dict[int, Row] = {high: worst}
        while high - low > 1 and len(steps) <= max_steps:
            mid = (low + high) // 2
            result, wall = ab(commits[mid], len(steps))
            row = _row(result, measure)
            is_bad = abs(row.change - bad_change) < abs(row.change)
            judged = ("bad" if is_bad else "good") + (" (MDE above target)" if is_inconclusive(row.verdict) else "")
            steps.append(Step(commits[mid], mirror.subject(commits[mid]), row.change, row.ci_low, row.ci_high, row.mde,
                              row.rounds, judged, wall))
            if is_bad:
                high, measured[mid] = mid, row
            else:
                low = mid
            if progress:
                progress(f"bisect: {commits[mid][:10]} is {'bad' if is_bad else 'good'}; {high - low - 1} left")
        if high - low > 1:
            # The step limit ended the search: commits[low+1..high] still hold the culprit.
            report.resolved = False
            report.suspects = {"first": commits[low + 1], "last": commits[high], "count": high - low}
        else:
            culprit = measured[high]
            report.culprit, report.culprit_subject = commits[high], mirror.subject(commits[high])
            report.effect, report.effect_ci = culprit.change, (culprit.ci_low, culprit.ci_high)
            report.functions = list(getattr(culprit, "functions", []) or [])
    report.wall_s = round(time.monotonic() - began, 1)
    write_json(out_dir / "bisect.json", report.to_json(), indent=2)
    write_bytes_atomic(out_dir / "bisect.md", report.markdown().encode("utf-8"))
    return report
