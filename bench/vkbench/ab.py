"""A/B of two commits of a Valkey repository on one machine: build both, run the same cells
interleaved (A B A B ...), and compare paired rounds.

Each round runs every cell once on the base build and once on the candidate build, one right
after the other, each with fresh servers. The effect is estimated from the per-round log ratios
candidate/base (pairing cancels the machine's slow drifts), with a t interval. After the pilot
rounds the noise of those ratios gives the number of rounds needed for the target minimum
detectable effect (two-sided 5 %, power 80 %); more rounds run up to ``max_rounds``. The MDE
actually reached is reported with every row: a "no significant change" means "smaller than the
MDE", never "none".
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats as st

from .errors import UsageError
from .matrix.expand import expand_matrix, load_matrix
from .matrix.model import Cell
from .runner.session import RunOptions, run_session
from .servers import source_build
from .repolinks import commit_link
from .servers.catalog import GIT_REF
from .servers.gitmirror import Mirror, redact

Progress = Callable[[str], None]

DEFAULT_PRESET = "ab"
TARGET_MDE = 0.02
POWER_Z = 0.8


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
    verdict: str                  # "faster" | "slower" | "no significant change"


@dataclass
class ABReport:
    url: str
    base: Side
    candidate: Side
    rows: list[Row]
    rounds: int
    target_mde: float
    wall_s: float
    out_dir: str
    warnings: list[str] = field(default_factory=list)

    @property
    def mde(self) -> float | None:
        values = [r.mde for r in self.rows if r.mde is not None]
        return max(values) if values else None

    @property
    def worst(self) -> Row | None:
        return min(self.rows, key=lambda r: r.change) if self.rows else None

    def to_json(self) -> dict:
        data = asdict(self)
        data["mde"] = self.mde
        return data

    def markdown(self) -> str:
        base, cand = self.base, self.candidate
        lines = [
            f"### A/B: `{cand.short}` ({cand.ref}) vs `{base.short}` ({base.ref})",
            "",
            f"{self.url}: base {commit_link(self.url, base.commit, name_url=False)} vs candidate "
            f"{commit_link(self.url, cand.commit, name_url=False)}; "
            f"{self.rounds} interleaved rounds (ABAB) on one machine; MDE reached "
            f"{_pct(self.mde)} (target {_pct(self.target_mde)}).",
            "",
            "| cell | command | base rps | candidate rps | change | 95% interval | MDE | verdict |",
            "|---|---|---:|---:|---:|---|---:|---|",
        ]
        for r in self.rows:
            interval = f"{_pct(r.ci_low)} .. {_pct(r.ci_high)}" if r.ci_low is not None else "n/a"
            lines.append(f"| {r.cell} | {r.command} | {r.base_rps:,.0f} | {r.candidate_rps:,.0f} | "
                         f"{_pct(r.change, sign=True)} | {interval} | {_pct(r.mde)} | {r.verdict} |")
        for warning in self.warnings:
            lines.append(f"\n> warning: {warning}")
        return "\n".join(lines) + "\n"


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


def rounds_needed(base: list[float], candidate: list[float], target: float) -> int:
    """Rounds for an MDE of ``target`` at the noise of these paired rounds (normal approximation)."""
    n = min(len(base), len(candidate))
    if n < 2:
        return n
    sd = float(np.log(np.asarray(candidate[:n]) / np.asarray(base[:n])).std(ddof=1))
    z = float(st.norm.ppf(0.975) + st.norm.ppf(POWER_Z))
    return max(n, math.ceil((z * sd / math.log1p(target)) ** 2))


def verdict(change: float, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "no significant change"
    if low > 0:
        return "faster"
    if high < 0:
        return "slower"
    return "no significant change"


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
    target_mde: float = TARGET_MDE
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
    cannot stand in for it. Nothing is built here."""
    if not GIT_REF.match(branch) or ".." in branch or branch.startswith(("refs/", "-")):
        raise UsageError(f"--require-branch {branch!r}: not a branch name", hint="e.g. --require-branch unstable")
    mirror = Mirror.for_url(url)
    commits = {label: mirror.resolve(ref) for label, ref in refs.items()}
    tip = mirror.resolve(f"refs/heads/{branch}")
    for label, commit in commits.items():
        if not mirror.is_ancestor(commit, tip):
            raise UsageError(
                f"{label} {refs[label]} ({commit[:12]}) is not on {branch} of {redact(url)} (tip {tip[:12]})",
                hint=f"only commits merged into {branch} run on the trusted path (no reviewer); "
                "for any other commit, dispatch without confirm/incident so that a reviewer of the "
                "`benchmark` environment approves it")
    return commits


def prepare(url: str, ref: str, label: str, progress: Progress | None = None) -> Side:
    """Resolve ``ref`` in ``url`` and build it (cached per commit and configuration)."""
    mirror = Mirror.for_url(url)
    commit = mirror.resolve(ref)
    entry = source_build.fetch(commit, url=url, progress=progress)
    meta = json.loads((entry / "meta.json").read_text())
    return Side(label, ref, commit, mirror.subject(commit), meta.get("build_config") or {})


def template_cells(options: ABOptions) -> list[Cell]:
    cells = options.cells or expand_matrix(load_matrix(options.preset))
    if options.requests is not None:
        cells = [c.model_copy(update={"requests": options.requests}) for c in cells]
    return cells


def _for_side(template: Cell, commit: str) -> Cell:
    return Cell.model_validate({**template.model_dump(mode="json"), "server": f"valkey:{commit}", "repetitions": 1})


def _samples(results: list[dict], commit: str) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = {}
    for result in results:
        if result["subject"]["version"] != commit:
            continue
        key = _template_key(result)
        for command, metrics in result["summary"].items():
            rps = metrics.get("rps")
            if rps:
                out.setdefault((key, command), []).extend(rps["samples"])
    return out


def _template_key(result: dict) -> str:
    d = result["dimensions"]
    return f"{d['topology']} io{d['io_threads']} P{d['pipeline']} c{d['clients']} d{d['data_size']}"


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


def run_ab(options: ABOptions, progress: Progress | None = None) -> ABReport:
    url = options.url or source_build.repo_url()
    began = time.monotonic()
    if options.min_rounds < 2 or options.max_rounds < options.min_rounds:
        raise UsageError("need 2 <= --min-rounds <= --max-rounds", hint="e.g. --min-rounds 4 --max-rounds 20")
    with repository(url):
        if options.expect_candidate:
            # Before anything is built: code nobody approved never runs, not even its Makefile.
            head = Mirror.for_url(url).resolve(options.candidate)
            if not head.startswith(options.expect_candidate.lower()):
                raise UsageError(
                    f"{options.candidate} is now {head[:12]}, not the approved {options.expect_candidate[:12]}",
                    hint="the pull request changed after the A/B was requested: request it again (re-add the label) "
                    "so that the new head is reviewed before it runs")
        if options.require_branch:
            require_on_branch(url, options.require_branch, {"base": options.base, "candidate": options.candidate})
        base = prepare(url, options.base, "base", progress)
        candidate = prepare(url, options.candidate, "candidate", progress)
        templates = template_cells(options)
        cells = [c for t in templates for c in (_for_side(t, base.commit), _for_side(t, candidate.commit))]
        if base.commit == candidate.commit:
            raise UsageError(f"base and candidate are the same commit {base.commit[:12]}",
                             hint="an A/B needs two different commits")
        results = _run_rounds(cells, options.min_rounds, options.out_dir / "pilot", options, progress)
        b, c = _samples(results, base.commit), _samples(results, candidate.commit)
        needed = max((rounds_needed(b[k], c.get(k, []), options.target_mde) for k in b), default=options.min_rounds)
        extra = min(needed, options.max_rounds) - options.min_rounds
        if extra > 0:
            more = _run_rounds(cells, extra, options.out_dir / "more", options, progress)
            for key, values in _samples(more, base.commit).items():
                b.setdefault(key, []).extend(values)
            for key, values in _samples(more, candidate.commit).items():
                c.setdefault(key, []).extend(values)
    rows = []
    for (cell, command), base_rps in b.items():
        cand_rps = c.get((cell, command), [])
        change, low, high, mde = paired(base_rps, cand_rps)
        rows.append(Row(cell, command, float(np.median(base_rps)), float(np.median(cand_rps)) if cand_rps else 0.0,
                        change, low, high, mde, min(len(base_rps), len(cand_rps)), verdict(change, low, high)))
    warnings = [f"build configurations differ: {d}" for d in source_build.config_differences(base.build, candidate.build)]
    report = ABReport(redact(url), base, candidate, rows, min(options.min_rounds + max(extra, 0), options.max_rounds),
                      options.target_mde, round(time.monotonic() - began, 1), str(options.out_dir), warnings)
    options.out_dir.mkdir(parents=True, exist_ok=True)
    _write(options.out_dir / "ab.json", json.dumps(report.to_json(), indent=2) + "\n")
    _write(options.out_dir / "ab.md", report.markdown())
    return report


def _write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
