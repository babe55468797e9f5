"""A/B of two commits of a Valkey repository on one machine: build both, run the same cells
interleaved (A B A B ...), and compare paired rounds.

Each round runs every cell once on the base build and once on the candidate build, one right
after the other, each with fresh servers. The effect is estimated from the per-round log ratios
candidate/base (pairing cancels the machine's slow drifts), with a t interval. After the pilot
rounds the noise of those ratios gives the number of rounds needed for the target minimum
detectable effect (two-sided 5 %, power 80 %); more rounds run in batches (at most
``MAX_BATCHES``, never past ``max_rounds``) while a row's MDE is above the target. The MDE
actually reached is reported with every row, and a row gets faster/slower only when it is at or
below the target, else "inconclusive" with what would reach it (:mod:`vkbench.evidence`); a
"no significant change" means "smaller than the MDE", never "none".
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats as st

from . import markdown as md
from .ab_counts import DEFAULT_PAIRS, INSTRUCTIONS_TARGET_MDE, CountRow, MemoryRow, counts_markdown, refuse_uncountable, run_pairs
from .errors import UsageError
from .evidence import TARGET_MDE, adequate, inconclusive, is_inconclusive
from .history.series import SERVER_DIMENSIONS, describe, identity_dimensions, sid_of
from .files import write_bytes_atomic, write_json
from .matrix.expand import expand_matrix, load_matrix
from .matrix.model import Cell
from .repolinks import commit_url
from .runner.session import RunOptions, run_session
from .servers import source_build
from .servers.catalog import GIT_REF
from .servers.gitmirror import Mirror, redact
from .verdicts import FASTER, NO_SIGNIFICANT_CHANGE, SLOWER

Progress = Callable[[str], None]

DEFAULT_PRESET = "ab"
POWER_Z = 0.8
#: Batches of extra rounds after the pilot while the MDE is above the target (each sized from the
#: noise seen so far, all together never past ``max_rounds``).
MAX_BATCHES = 3
FULL_SHA = re.compile(r"^[0-9a-fA-F]{40}$")


def pr_ref(url: str, number: int) -> str:
    """The ref of pull request ``number``: GitHub ``refs/pull/N/head``, GitLab ``refs/merge-requests/N/head``."""
    if number <= 0:
        raise UsageError(f"--pr {number}: not a pull request number", hint="give the number, e.g. --pr 1234")
    if "gitlab" in url.lower():
        return f"refs/merge-requests/{number}/head"
    return f"refs/pull/{number}/head"


@dataclass
class Side:
    label: str            # "base" | "candidate"
    ref: str              # as asked
    commit: str           # full SHA
    subject: str          # the commit's title
    build: dict = field(default_factory=dict)   # the build configuration

    @property
    def short(self) -> str:
        return self.commit[:10]


@dataclass
class Row:
    cell: str
    command: str
    base_rps: float
    candidate_rps: float
    change: float                 # candidate vs base, from the paired log ratios (+0.05 = 5 % faster)
    ci_low: float | None
    ci_high: float | None
    mde: float | None             # the smallest change these rounds detect (two-sided 5 %, power 80 %)
    rounds: int
    verdict: str                  # "faster" | "slower" | "no significant change" | "inconclusive: ..."
    #: Paired rounds these samples' noise needs for an MDE at the target (None: fewer than 2 rounds).
    rounds_for_target: int | None = None
    metric: str = "rps"

    @property
    def adequate(self) -> bool:
        return not is_inconclusive(self.verdict)

    @property
    def regressed(self) -> bool:
        return self.verdict == SLOWER

    @property
    def badness(self) -> float:
        """Bigger is worse: slower."""
        return -self.change


@dataclass
class ABReport:
    url: str
    base: Side
    candidate: Side
    rows: list[Row]
    rounds: int
    target_mde: float | None
    wall_s: float
    out_dir: str
    warnings: list[str] = field(default_factory=list)
    #: wallclock (rows), instructions (counts and memory) or both.
    instrument: str = "wallclock"
    counts: list[CountRow] = field(default_factory=list)
    memory: list[MemoryRow] = field(default_factory=list)
    pairs: int = 0
    counts_target_mde: float | None = None
    counts_method: dict = field(default_factory=dict)
    counts_wall_s: float | None = None

    @property
    def mde(self) -> float | None:
        """The largest wall-clock MDE reached (None without wall-clock rows)."""
        values = [r.mde for r in self.rows if r.mde is not None]
        return max(values) if values else None

    @property
    def compared(self) -> list:
        """The rows a bisect follows: instruction counts when measured (far less noise), else rps."""
        return list(self.counts) if self.counts else list(self.rows)

    @property
    def worst(self) -> Row | CountRow | None:
        rows = self.compared
        return max(rows, key=lambda r: r.badness) if rows else None

    @property
    def adequate(self) -> bool:
        """Every row's MDE reached the target: its verdicts stand."""
        rows = [*self.rows, *self.counts]
        return bool(rows) and all(r.adequate for r in rows)

    def to_json(self) -> dict:
        data = asdict(self)
        data["mde"] = self.mde
        data["adequate"] = self.adequate
        for rows, key in ((self.rows, "rows"), (self.counts, "counts")):
            for row, stored in zip(rows, data[key]):
                stored["adequate"] = row.adequate
        return data

    def markdown(self) -> str:
        """The table posted as a comment and appended to the job summary. Refs, the URL, cell and
        command names and warnings come from the caller and the repository: escaped."""
        base, cand = self.base, self.candidate
        lines = [
            f"### A/B: {md.code(cand.short)} ({md.text(cand.ref)}) vs {md.code(base.short)} ({md.text(base.ref)})",
            "",
            f"{md.text(self.url)}: base {commit_markdown(self.url, base.commit)} vs candidate "
            f"{commit_markdown(self.url, cand.commit)}; " + (
                f"{self.rounds} interleaved rounds (ABAB) on one machine; MDE reached "
                f"{_pct(self.mde)} (target {_pct(self.target_mde)})." if self.rows else
                f"instruction counts under callgrind, {self.pairs} seed pairs."),
            "",
            ("**Evidence adequate:** every row reached the target MDE; its verdict stands." if self.adequate else
             "**Inconclusive where marked:** those rows did not reach the target MDE, so their change is no "
             "verdict; more rounds, a quieter runner or instruction counts would reach it."),
            "",
        ]
        if self.counts or self.memory:
            lines += counts_markdown(self.counts, self.memory, pairs=self.pairs, target=self.counts_target_mde)
            lines.append("")
            if not self.rows:
                lines += ["Wall-clock numbers (rps, latency) are not measured here: they need a quiet runner "
                          "(`vkbench ab --instrument wallclock` on a self-hosted machine). Counts do not see cache "
                          "misses, contention or syscalls' kernel time.", ""]
        if not self.rows:
            for warning in self.warnings:
                lines.append(f"\n> warning: {md.text(warning)}")
            return "\n".join(lines) + "\n"
        cells = []
        for r in self.rows:
            interval = f"{_pct(r.ci_low)} .. {_pct(r.ci_high)}" if r.ci_low is not None else "n/a"
            cells.append([md.text(r.cell), md.text(r.command), f"{r.base_rps:,.0f}", f"{r.candidate_rps:,.0f}",
                          _pct(r.change, sign=True), interval, _pct(r.mde), md.text(r.verdict)])
        lines += md.table(["cell", "command", "base rps", "candidate rps", "change", "95% interval", "MDE", "verdict"], "llrrrlrl", cells)
        for warning in self.warnings:
            lines.append(f"\n> warning: {md.text(warning)}")
        return "\n".join(lines) + "\n"


def commit_markdown(url: str, commit: str) -> str:
    """The short commit in code type, linked to its page when ``url`` is a forge (https only)."""
    return md.link(md.code(commit[:10]), commit_url(url, commit))


def _pct(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.1f}%" if sign else f"{value * 100:.1f}%"


# -- statistics -------------------------------------------------------------------------------

def paired(base: list[float], candidate: list[float]) -> tuple[float, float | None, float | None, float | None]:
    """(change, ci_low, ci_high, mde) of candidate vs base from paired rounds (relative, +0.05 = +5 %)."""
    n = min(len(base), len(candidate))
    if n == 0:
        return 0.0, None, None, None
    ratios = np.log(np.asarray(candidate[:n], dtype=float) / np.asarray(base[:n], dtype=float))
    mean = float(ratios.mean())
    if n < 2:
        return math.exp(mean) - 1, None, None, None
    se = float(ratios.std(ddof=1)) / math.sqrt(n)
    t_crit = float(st.t.ppf(0.975, n - 1))
    t_power = float(st.t.ppf(POWER_Z, n - 1))
    return (math.exp(mean) - 1, math.exp(mean - t_crit * se) - 1, math.exp(mean + t_crit * se) - 1,
            math.exp((t_crit + t_power) * se) - 1)


def paired_rounds(base: dict[int, float], candidate: dict[int, float]) -> tuple[list[float], list[float]]:
    """The rps of the rounds both sides measured, in round order: a repetition that failed on
    one side drops that round on both, so every ratio compares one round's A with its own B."""
    rounds = sorted(set(base) & set(candidate))
    return [base[r] for r in rounds], [candidate[r] for r in rounds]


def rounds_needed(base: list[float], candidate: list[float], target: float) -> int:
    """Rounds for an MDE of ``target`` at the noise of these paired rounds (normal approximation)."""
    n = min(len(base), len(candidate))
    if n < 2:
        return n
    sd = float(np.log(np.asarray(candidate[:n]) / np.asarray(base[:n])).std(ddof=1))
    z = float(st.norm.ppf(0.975) + st.norm.ppf(POWER_Z))
    return max(n, math.ceil((z * sd / math.log1p(target)) ** 2))


def verdict(change: float, low: float | None, high: float | None, *, mde: float | None = None,
            target: float | None = None, more_rounds: int | None = None) -> str:
    """faster/slower when the interval excludes zero, but only when the MDE reached is at or
    below ``target`` (no target: not checked); else "inconclusive: ..." naming what would reach it."""
    if not adequate(mde, target):
        return inconclusive(mde, target, more=more_rounds)
    if low is None or high is None:
        return NO_SIGNIFICANT_CHANGE
    if low > 0:
        return FASTER
    if high < 0:
        return SLOWER
    return NO_SIGNIFICANT_CHANGE


# -- running ----------------------------------------------------------------------------------

@dataclass
class ABOptions:
    base: str
    candidate: str
    url: str | None = None
    cells: list[Cell] | None = None      # templates: the server field is replaced per side
    preset: str = DEFAULT_PRESET
    out_dir: Path = Path("vkbench-ab")
    backend: str = "native"
    target_mde: float | None = TARGET_MDE    # None: no evidence rule (tests of real builds only)
    min_rounds: int = 4
    max_rounds: int = 20
    requests: int | None = None          # override every template's request count (tests, quick looks)
    machine_class: str | None = None
    trigger: str = "ab"
    #: The commit the candidate must resolve to (a pull request's head when a maintainer approved
    #: it): a pull request that moved since is refused, never benchmarked unreviewed.
    expect_candidate: str | None = None
    #: A branch of ``url`` both commits must be on (ancestors of its tip), checked before anything
    #: is built: the trusted path of ab.yml runs without a reviewer only for merged code.
    require_branch: str | None = None
    #: wallclock (interleaved rounds, rps), instructions (seed pairs under callgrind) or both.
    instrument: str = "wallclock"
    pairs: int = DEFAULT_PAIRS
    counts_target_mde: float | None = INSTRUCTIONS_TARGET_MDE
    #: Cells from the catalog's specs a change touches (docs/catalogs.md): ``BASE..HEAD`` of ``url``
    #: (what a pull request changes), or the changed files themselves.
    specs_from_changes: str | None = None
    changed_files: list[str] | None = None
    spec_duration: int = 10           # seconds per spec per side and round (the specs say 180)


Samples = dict[tuple[str, str], dict[int, float]]    # (cell label, command) -> round -> rps


@contextlib.contextmanager
def repository(url: str) -> Iterator[None]:
    """Run with ``url`` as the repository source builds come from (so the result names it)."""
    previous = os.environ.get("VKBENCH_VALKEY_GIT_URL")
    os.environ["VKBENCH_VALKEY_GIT_URL"] = url
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("VKBENCH_VALKEY_GIT_URL", None)
        else:
            os.environ["VKBENCH_VALKEY_GIT_URL"] = previous


def require_on_branch(url: str, branch: str, refs: dict[str, str]) -> dict[str, str]:
    """The full commit of each ref (label -> ref) when every one is on ``branch`` of ``url`` (its
    tip or an ancestor of it), else a UsageError naming the first that is not.

    The branch is fetched as ``refs/heads/<branch>``: a tag or a pull request ref of the same name
    cannot stand in for it. Nothing is built here. Callers pass commits they resolved already
    (full SHAs are not fetched again), so what was checked is what gets built."""
    if not GIT_REF.match(branch) or ".." in branch or branch.startswith(("refs/", "-")):
        raise UsageError(f"--require-branch {branch!r}: not a branch name", hint="e.g. --require-branch unstable")
    mirror = Mirror.for_url(url)
    commits = {label: mirror.resolve(ref) for label, ref in refs.items()}
    tip = mirror.resolve(f"refs/heads/{branch}")
    for label, commit in commits.items():
        if not mirror.is_ancestor(commit, tip):
            named = f"{label} {commit[:12]}" if refs[label].lower() == commit else f"{label} {refs[label]} ({commit[:12]})"
            raise UsageError(
                f"{named} is not on {branch} of {redact(url)} (tip {tip[:12]})",
                hint=f"only commits merged into {branch} run on the trusted path (no reviewer); "
                "for any other commit, dispatch without confirm/incident so that a reviewer of the "
                "`benchmark` environment approves it")
    return commits


def prepare(url: str, commit: str, ref: str, label: str, progress: Progress | None = None) -> Side:
    """Build ``commit`` of ``url`` (cached per commit and configuration), which ``ref`` resolved
    to. Only a full commit is taken: a ref resolved again here could have moved since the
    caller checked it (a force-push), and an unchecked commit would be built."""
    if not FULL_SHA.match(commit):
        raise UsageError(f"{label}: {commit!r} is not a full commit SHA", hint="resolve the ref first (Mirror.resolve)")
    mirror = Mirror.for_url(url)
    entry = source_build.fetch(commit.lower(), url=url, progress=progress)
    meta = json.loads((entry / "meta.json").read_text())
    return Side(label, ref, commit.lower(), mirror.subject(commit), meta.get("build_config") or {})


def template_cells(options: ABOptions) -> list[Cell]:
    cells = options.cells or expand_matrix(load_matrix(options.preset))
    if options.requests is not None:
        cells = [c.model_copy(update={"requests": options.requests}) for c in cells]
    return cells


def _from_changes(options: ABOptions) -> bool:
    return options.specs_from_changes is not None or options.changed_files is not None


def changed_files(url: str, options: ABOptions) -> list[str]:
    if options.changed_files is not None:
        return list(options.changed_files)
    base, sep, head = (options.specs_from_changes or "").partition("..")
    head = head[1:] if head.startswith(".") else head        # BASE...HEAD means the same here
    if not sep or not base or not head:
        raise UsageError(f"--specs-from-changes {options.specs_from_changes!r}: not BASE..HEAD",
                         hint="e.g. --specs-from-changes unstable..4fd5645d80ae (what a pull request changes)")
    mirror = Mirror.for_url(url)
    return mirror.changed_files(mirror.resolve(base), mirror.resolve(head))


def spec_cells_for_changes(url: str, options: ABOptions, progress: Progress | None = None) -> list[Cell]:
    """The catalog's specs the changed files touch (catalogs.plan.plan_for_changes), each shortened
    to ``spec_duration``; which it chose and why is printed and written to ``specs.json``."""
    from .catalogs.plan import plan_for_changes

    if options.cells:
        raise UsageError("--cell and specs from changes are two ways to choose cells", hint="give one of them")
    changed = changed_files(url, options)
    overrides: dict = {"duration": options.spec_duration}
    if options.requests is not None:
        overrides["requests"] = options.requests
    plan, selection, choices = plan_for_changes(changed, overrides)
    lines = [f"specs from {len(changed)} changed file(s):", *(f"  {r}" for r in selection.reasons),
             *(f"  runs {c.name}: {c.why}" for c in choices)]
    if progress:
        progress("\n".join(lines))
    write_json(options.out_dir / "specs.json", {
        "changed_files": changed[:1000], "groups": selection.groups, "core": selection.core,
        "reasons": selection.reasons, "chosen": [asdict(c) for c in choices],
        "refused": [r.to_json() for r in plan.refusals]}, indent=2)
    if not plan.cells:
        raise UsageError("the changed files select no spec that runs here", hint="; ".join(selection.reasons)[:500])
    return plan.cells


def _for_side(template: Cell, commit: str) -> Cell:
    return Cell.model_validate({**template.model_dump(mode="json"), "server": f"valkey:{commit}", "repetitions": 1})


def cell_labels(results: list[dict]) -> dict[str, str]:
    """Readable name of each compared cell (by its :func:`_template_key`), e.g. ``standalone io1
    P16 c50 d3``; cells that differ only in what the short form leaves out (workload, CPU
    placement, tool arguments, ...) get ``#<hash>`` appended, so their rows never merge."""
    names: dict[str, str] = {}
    for result in results:
        identity = _identity(result)
        key = sid_of(identity)
        names[key] = describe({**identity, "command": ""}, with_version=False, with_machine=False).strip()
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    return {key: f"{name} #{key[:6]}" if counts[name] > 1 else name for key, name in names.items()}


def _samples(results: list[dict], commit: str, labels: dict[str, str], first_round: int = 0) -> Samples:
    """Per (cell, command) the rps of each round of ``commit``'s results. A side runs one
    repetition per round, so a repetition's index is its round (a failed repetition keeps its
    index: the rounds after it stay numbered as run); ``first_round`` numbers a later session's
    rounds after the earlier ones."""
    out: Samples = {}
    for result in results:
        if result["subject"]["version"] != commit:
            continue
        label = labels[_template_key(result)]
        for repetition in result["repetitions"]:
            for record in repetition["records"]:
                if record.get("rps"):
                    out.setdefault((label, record["command"]), {})[first_round + repetition["index"]] = record["rps"]
    return out


def _identity(result: dict) -> dict:
    """The cell without what an A/B compares across: the server is each side's build, and the
    repetitions are the rounds (the pilot and the extra rounds run with different counts)."""
    return identity_dimensions(result, ignoring=SERVER_DIMENSIONS)   # the two sides differ in these


def _template_key(result: dict) -> str:
    """The cell a result measured, without the side's server: every other dimension (tool,
    workload, read_from, CPU placement, tool arguments, ...) keeps two cells apart."""
    return sid_of(_identity(result))


def _run_rounds(cells: list[Cell], rounds: int, out_dir: Path, options: ABOptions, progress: Progress | None) -> list[dict]:
    if rounds <= 0:
        return []
    cells = [c.model_copy(update={"repetitions": rounds}) for c in cells]
    run_options = RunOptions(backend=options.backend, out_dir=out_dir, interleave=True, trigger=options.trigger,
                             machine_class=options.machine_class)
    if progress:
        progress(f"{rounds} interleaved rounds of {len(cells) // 2} cell(s) -> {out_dir}")
    report = run_session(cells, run_options)
    report.raise_for_failures()
    return [o.result for o in report.outcomes if o.result]


def resolve_sides(url: str, options: ABOptions) -> tuple[str, str]:
    """(base commit, candidate commit), each ref resolved once and checked: the approved head
    (``expect_candidate``) and the required branch are checked on these very commits, and
    only these are built (a ref resolved again could have been force-pushed in between)."""
    if options.expect_candidate is not None and not FULL_SHA.match(options.expect_candidate):
        raise UsageError(f"--pr-head {options.expect_candidate!r}: not a full 40-hex commit SHA",
                         hint="pin the approved head by its full SHA, e.g. --pr-head $(git rev-parse HEAD)")
    mirror = Mirror.for_url(url)
    candidate = mirror.resolve(options.candidate)
    if options.expect_candidate is not None and candidate != options.expect_candidate.lower():
        # Before anything is built: code nobody approved never runs, not even its Makefile.
        raise UsageError(
            f"{options.candidate} is now {candidate[:12]}, not the approved {options.expect_candidate[:12]}",
            hint="the pull request changed after the A/B was requested: request it again (re-add the label) "
            "so that the new head is reviewed before it runs")
    base = mirror.resolve(options.base)
    if options.require_branch:
        require_on_branch(url, options.require_branch, {"base": base, "candidate": candidate})
    return base, candidate


def rows_of(base: Samples, candidate: Samples, target: float | None = None) -> list[Row]:
    """One row per (cell, command), from the rounds both sides measured (:func:`paired_rounds`);
    with a ``target`` MDE, rows that did not reach it are "inconclusive"."""
    rows = []
    for (cell, command), base_rounds in base.items():
        base_rps, cand_rps = paired_rounds(base_rounds, candidate.get((cell, command), {}))
        change, low, high, mde = paired(base_rps, cand_rps)
        needed = rounds_needed(base_rps, cand_rps, target) if target and len(base_rps) >= 2 else None
        more = needed - len(base_rps) if needed is not None else None
        rows.append(Row(cell, command, float(np.median(list(base_rounds.values()))),
                        float(np.median(cand_rps)) if cand_rps else 0.0,
                        change, low, high, mde, len(base_rps),
                        verdict(change, low, high, mde=mde, target=target, more_rounds=more), needed))
    return rows


def next_batch(base: Samples, candidate: Samples, target: float, done: int, max_rounds: int) -> int:
    """Rounds to run next: none when every row reached ``target`` (or the cap is reached), else
    what the noise so far asks for, at least one more round and never past ``max_rounds``."""
    if done >= max_rounds:
        return 0
    rows = rows_of(base, candidate, target)
    if not rows or all(r.adequate for r in rows):
        return 0
    wanted = max((r.rounds_for_target or max_rounds) for r in rows)
    return max(1, min(wanted, max_rounds) - done)


def _run_wallclock(templates: list[Cell], base: Side, candidate: Side, options: ABOptions,
                   progress: Progress | None) -> tuple[Samples, Samples, int]:
    """The interleaved wall-clock rounds: the pilot, then batches while a row's MDE is above the target."""
    cells = [c for t in templates for c in (_for_side(t, base.commit), _for_side(t, candidate.commit))]
    results = _run_rounds(cells, options.min_rounds, options.out_dir / "pilot", options, progress)
    labels = cell_labels(results)
    b, c = _samples(results, base.commit, labels), _samples(results, candidate.commit, labels)
    done = options.min_rounds
    for batch in range(1, MAX_BATCHES + 1):
        extra = next_batch(b, c, options.target_mde, done, options.max_rounds)
        if extra <= 0:
            break
        more = _run_rounds(cells, extra, options.out_dir / ("more" if batch == 1 else f"more-{batch}"), options, progress)
        results += more
        labels = cell_labels(results)
        for side, samples in ((base.commit, b), (candidate.commit, c)):
            for key, rounds in _samples(more, side, labels, first_round=done).items():
                samples.setdefault(key, {}).update(rounds)
        done += extra
    return b, c, done


def run_ab(options: ABOptions, progress: Progress | None = None) -> ABReport:
    url = options.url or source_build.repo_url()
    began = time.monotonic()
    if options.instrument not in ("wallclock", "instructions", "both"):
        raise UsageError(f"--instrument {options.instrument!r}", hint="wallclock, instructions or both")
    wallclock = options.instrument in ("wallclock", "both")
    counted = options.instrument in ("instructions", "both")
    if wallclock and (options.min_rounds < 2 or options.max_rounds < options.min_rounds):
        raise UsageError("need 2 <= --min-rounds <= --max-rounds", hint="e.g. --min-rounds 4 --max-rounds 20")
    if counted and not _from_changes(options):
        # Before anything is built: io-threads > 1 and the other cells counts cannot measure.
        refuse_uncountable(template_cells(options))
    b: Samples = {}
    c: Samples = {}
    done = 0
    counts = None
    with repository(url):
        base_commit, candidate_commit = resolve_sides(url, options)
        if base_commit == candidate_commit:
            raise UsageError(f"base and candidate are the same commit {base_commit[:12]}",
                             hint="an A/B needs two different commits")
        base = prepare(url, base_commit, options.base, "base", progress)
        candidate = prepare(url, candidate_commit, options.candidate, "candidate", progress)
        templates = spec_cells_for_changes(url, options, progress) if _from_changes(options) else template_cells(options)
        if counted:
            counts = run_pairs(templates, base.commit, candidate.commit, pairs=options.pairs,
                               target=options.counts_target_mde, progress=progress)
        if wallclock:
            b, c, done = _run_wallclock(templates, base, candidate, options, progress)
    rows = rows_of(b, c, options.target_mde) if wallclock else []
    warnings = [f"build configurations differ: {d}" for d in source_build.config_differences(base.build, candidate.build)]
    report = ABReport(redact(url), base, candidate, rows, done,
                      options.target_mde if wallclock else None, round(time.monotonic() - began, 1), str(options.out_dir),
                      warnings, instrument=options.instrument)
    if counts is not None:
        report.counts, report.memory, report.pairs = counts.counts, counts.memory, counts.pairs
        report.counts_target_mde, report.counts_method, report.counts_wall_s = (options.counts_target_mde, counts.method,
                                                                                counts.wall_s)
    write_json(options.out_dir / "ab.json", report.to_json(), indent=2)
    write_bytes_atomic(options.out_dir / "ab.md", report.markdown().encode("utf-8"))
    return report
