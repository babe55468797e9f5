"""Security and operations rules for the GitHub workflows, checked on parsed YAML.

``check_dir(path)`` returns every :class:`Violation` in the ``*.yml``/``*.yaml`` files of one
directory (a workflow directory, or a fixture directory under ``fixtures/``). Local reusable
workflows (``uses: ./.github/workflows/x.yml``) are resolved by file name in that directory, so a
job in a called workflow inherits the triggers of its callers.

Rules (the ``rule`` field of a violation):

- ``pinned-uses``        a non-local ``uses:`` is ``owner/repo(/path)@<40 hex>`` with a ``# vX.Y.Z`` comment,
                         in the workflows and in the local composite actions they use
                         (``.github/actions/<name>/action.yml``, checked as a job of their own)
- ``local-action``       a ``uses: ./.github/actions/<name>`` whose action.yml does not exist, or
                         that is not a composite action
- ``permissions``        a job without ``permissions:`` under a top level that is not restrictive;
                         a write scope at the top level; ``write-all`` anywhere
- ``write-scope``        a write scope outside the one job allowed to hold it
- ``self-hosted-pr``     a self-hosted job reachable from pull_request(_target) without the
                         same-repository guard and an environment
- ``run-interpolation``  ``${{ github.event.* / inputs.* / matrix.* ... }}`` inside a ``run:``
- ``persist-credentials`` a checkout without ``persist-credentials: false`` and no later ``git push``
- ``self-hosted-timeout`` a self-hosted job without ``timeout-minutes``
- ``fail-fast``          a self-hosted matrix job without ``strategy.fail-fast: false``
- ``runner-concurrency`` a self-hosted job whose concurrency group is not keyed by its runner
                         class, or that cancels a run in progress
- ``self-hosted-environment`` a self-hosted job without an environment (the reviewers' gate;
                         a job reachable from pull requests is ``self-hosted-pr``'s)
- ``trusted-environment`` a job whose environment can be ``benchmark-nightly`` (no reviewers)
                         chosen by anything but a schedule or the ``trusted`` output of its own
                         workflow's GitHub-hosted ``inputs`` job, set by a tools/ci check script
- ``inputs-gate``        in a workflow with an ``inputs`` job (the check of the dispatch inputs), a
                         job that can run although that job failed: ``always()``, ``!cancelled()``
                         or ``failure()`` lift the implicit "every need succeeded", so such a job
                         must require ``needs.<job>.result == 'success'`` of ``inputs`` or of a
                         need that is gated itself
- ``trusted-write``      in a workflow whose ``inputs`` job outputs ``trusted``, a job holding
                         ``contents: write`` (the history) that does not need ``inputs`` and
                         require ``needs.inputs.outputs.trusted == 'true'``
- ``artifact-per-call``  a reusable workflow called more than once by one workflow (nightly.yml:
                         the nightly and nightly-datatypes presets) whose artifact name or pattern
                         is not keyed by an input the calls set differently: artifacts belong to
                         the run, so the calls would overwrite (or refuse) each other's artifacts
                         and one call's publish would ingest the other's results; or whose
                         ``contents: write`` job (the publish) has no concurrency group, or one that
                         cancels: both calls' publishes must land, one after the other

A *pull-request job* builds or runs a pull request's code: a job reachable from pull_request(_target),
or any job of a workflow that a pull request's workflow calls (``workflow_call`` with a ``pr``
input, as pr-counts.yml). It runs fork code without a reviewer, so:

- ``pr-target``          it is reachable from ``pull_request_target`` (a fork's code with the base
                         repository's token and secrets): callers use ``pull_request``
- ``pr-secrets``         it names a secret, or its ``workflow_call`` declares secrets
- ``pr-token``           its token is not read-only (no job permissions, or a write scope)
- ``pr-hosted``          it runs on a self-hosted runner (fork code never reaches a benchmark machine)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: The only jobs (by id) that may hold each write scope.
ALLOWED_WRITE = {"contents": {"publish"}, "issues": {"alert", "digest"}, "pull-requests": {"comment"},
                 "actions": {"confirm", "dispatch-bisect"}}
#: The environment without required reviewers, and the only expressions that may choose it (else
#: `benchmark`): a schedule (the default branch's own workflow), or the verdict of the workflow's
#: hosted `inputs` job (ab.yml, bisect.yml: a follow-up of the nightly on merged commits).
TRUSTED_ENVIRONMENT = "benchmark-nightly"
SCHEDULE_CHOICE = "${{ github.event_name == 'schedule' && 'benchmark-nightly' || 'benchmark' }}"
INPUTS_CHOICE = "${{ needs.inputs.outputs.trusted == 'true' && 'benchmark-nightly' || 'benchmark' }}"
_TRUSTED_OUTPUT = re.compile(r"^\$\{\{\s*steps\.([\w-]+)\.outputs\.trusted\s*\}\}$")
_CHECK_SCRIPT = re.compile(r"^tools/ci/[\w-]+\.sh check$")
#: Runner labels that mean a self-hosted benchmark machine even without the `self-hosted` label.
SELF_HOSTED_CLASSES = {"pi-cm4", "cloud-x86", "cloud-arm64"}
PR_EVENTS = {"pull_request", "pull_request_target"}
SAME_REPO_GUARD = re.compile(
    r"github\.event\.pull_request\.head\.repo\.full_name\s*==\s*github\.repository"
)

_PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@\s]+)?@[0-9a-f]{40}$")
_VERSION_COMMENT = re.compile(r"#\s*v\d+\.\d+\.\d+\b")
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
#: Contexts an attacker (or a dispatch form) can fill: never pasted into shell text.
_TAINTED = re.compile(
    r"\b(github\.event\.|github\.head_ref\b|inputs\.|matrix\.|needs\.[\w-]+\.outputs\.|steps\.[\w-]+\.outputs\.)"
)


@dataclass(frozen=True)
class Violation:
    rule: str
    file: str
    job: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.job}: [{self.rule}] {self.message}"


@dataclass
class Workflow:
    name: str
    text: str
    data: dict[str, Any]

    @property
    def triggers(self) -> set[str]:
        # PyYAML reads the bare key `on` as the boolean True.
        on = self.data.get("on", self.data.get(True))
        if isinstance(on, str):
            return {on}
        if isinstance(on, list):
            return set(on)
        if isinstance(on, dict):
            return set(on)
        return set()

    @property
    def jobs(self) -> dict[str, dict[str, Any]]:
        return self.data.get("jobs") or {}


def load_dir(path: Path) -> dict[str, Workflow]:
    workflows = {}
    for file in sorted([*path.glob("*.yml"), *path.glob("*.yaml")]):
        text = file.read_text()
        workflows[file.name] = Workflow(file.name, text, yaml.safe_load(text) or {})
    return workflows


def check_dir(path: Path) -> list[Violation]:
    workflows = load_dir(Path(path))
    callers = _callers(workflows)
    out: list[Violation] = []
    for wf in workflows.values():
        out += _check_uses(wf)
        out += _check_permissions(wf, workflows)
        for job_id, job in wf.jobs.items():
            out += _check_run_interpolation(wf, job_id, job)
            out += _check_checkout_credentials(wf, job_id, job)
            out += _check_trusted_environment(wf, job_id, job)
            out += _check_inputs_gate(wf, job_id, job)
            out += _check_trusted_write(wf, job_id, job)
            if is_self_hosted(job):
                out += _check_self_hosted(wf, job_id, job, workflows, callers)
            out += _check_pull_request_job(wf, job_id, job, callers)
        out += _check_artifacts_per_call(wf, callers)
    out += _check_local_actions(Path(path), workflows)
    return out


def _check_local_actions(path: Path, workflows: dict[str, Workflow]) -> list[Violation]:
    """The composite actions under ``.github/actions`` beside a workflow directory: each one a
    workflow used locally names exists and is composite, and each one's steps keep the workflows'
    rules on ``uses:`` pins and on ``${{ }}`` inside ``run:``."""
    actions_dir = path.parent / "actions"
    out: list[Violation] = []
    for wf in workflows.values():
        for job_id, job in wf.jobs.items():
            for step in _steps(job):
                uses = str(step.get("uses", ""))
                if uses.startswith("./.github/actions/"):
                    action = actions_dir / uses.removeprefix("./.github/actions/") / "action.yml"
                    if not action.is_file():
                        out.append(Violation("local-action", wf.name, job_id, f"{uses}: no {action}"))
    for action in sorted(actions_dir.glob("*/action.y*ml")):
        text = action.read_text()
        data = yaml.safe_load(text) or {}
        name = f"actions/{action.parent.name}/{action.name}"
        runs = data.get("runs") or {}
        if runs.get("using") != "composite":
            out.append(Violation("local-action", name, "-", "a local action is composite (runs.using: composite)"))
            continue
        # Checked as one job of a workflow: the same pin and interpolation rules as the callers'.
        as_workflow = Workflow(name, text, {"jobs": {"(composite)": {"steps": runs.get("steps") or []}}})
        out += _check_uses(as_workflow)
        out += _check_run_interpolation(as_workflow, "(composite)", as_workflow.jobs["(composite)"])
    return out


_INPUT_REF = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def _check_artifacts_per_call(wf: Workflow, callers) -> list[Violation]:
    """``artifact-per-call``: see the module docstring."""
    by_caller: dict[str, list[dict]] = {}
    for caller, _, job in callers.get(wf.name, []):
        by_caller.setdefault(caller.name, []).append(job.get("with") or {})
    calls = next((c for c in by_caller.values() if len(c) > 1), None)
    if calls is None:
        return []
    # Inputs whose values tell the calls apart (a default counts as a value).
    on = wf.data.get("on", wf.data.get(True))
    declared = ((on or {}).get("workflow_call") or {}).get("inputs") or {} if isinstance(on, dict) else {}
    distinct = {name for name, spec in declared.items()
                if len({str(c.get(name, (spec or {}).get("default"))) for c in calls}) == len(calls)}
    out = []
    for job_id, job in wf.jobs.items():
        for step in _steps(job):
            uses = str(step.get("uses", ""))
            if not uses.startswith(("actions/upload-artifact@", "actions/download-artifact@")):
                continue
            given = {key: str(value) for key, value in (step.get("with") or {}).items() if key in ("name", "pattern")}
            for key, value in (given or {"name": ""}).items():     # neither: every artifact of the run
                if not set(_INPUT_REF.findall(value)) & distinct:
                    out.append(Violation("artifact-per-call", wf.name, job_id,
                                         f"artifact {key} {value or '(none)'!r} is the same in every call of "
                                         f"{wf.name} (called {len(calls)} times in one run): key it by an input "
                                         f"the calls set differently ({', '.join(sorted(distinct)) or 'none'})"))
        if _write_scopes(job.get("permissions")) & {"contents", "*"}:
            concurrency = job.get("concurrency")
            if not isinstance(concurrency, dict) or concurrency.get("cancel-in-progress") not in (False, "false"):
                out.append(Violation("artifact-per-call", wf.name, job_id,
                                     "a job that pushes (contents: write) in a workflow called more than once per run "
                                     "needs a concurrency group with cancel-in-progress: false, so every call's push lands"))
    return out


def _called_for_pull_requests(wf: Workflow) -> bool:
    """A reusable workflow whose callers pass a pull request (``workflow_call`` input ``pr``)."""
    on = wf.data.get("on", wf.data.get(True))
    if not isinstance(on, dict) or not isinstance(on.get("workflow_call"), dict):
        return False
    return "pr" in (on["workflow_call"].get("inputs") or {})


def _check_pull_request_job(wf: Workflow, job_id: str, job: dict, callers) -> list[Violation]:
    events = _reaching_events(wf, callers) & PR_EVENTS
    if not events and not _called_for_pull_requests(wf):
        return []
    out = []
    if "pull_request_target" in events:
        out.append(Violation("pr-target", wf.name, job_id, "a job that runs a pull request's code is reachable from "
                             "pull_request_target (the base repository's token and secrets): use pull_request"))
    on = wf.data.get("on", wf.data.get(True))
    declared = isinstance(on, dict) and isinstance(on.get("workflow_call"), dict) and on["workflow_call"].get("secrets")
    if declared or "secrets" in job or re.search(r"\bsecrets\.", yaml.safe_dump(job)):
        out.append(Violation("pr-secrets", wf.name, job_id, "a job that runs a pull request's code names a secret"))
    perms = job.get("permissions")
    if perms is None or _write_scopes(perms) or perms == "write-all":
        out.append(Violation("pr-token", wf.name, job_id, "a job that runs a pull request's code needs read-only "
                             "job permissions (e.g. contents: read)"))
    if is_self_hosted(job) and not events:      # reachable from pull_request: self-hosted-pr's
        out.append(Violation("pr-hosted", wf.name, job_id, "a job that runs a pull request's code runs on a "
                             "self-hosted runner: use a GitHub-hosted one"))
    return out


# -- helpers -----------------------------------------------------------------------------------
def _local_target(uses: str) -> str | None:
    """File name of a local reusable workflow, e.g. ``./.github/workflows/x.yml`` -> ``x.yml``."""
    if uses.startswith("./"):
        return uses.rsplit("/", 1)[-1]
    return None


def _callers(workflows: dict[str, Workflow]) -> dict[str, list[tuple[Workflow, str, dict]]]:
    """callee file -> [(caller workflow, caller job id, caller job)]."""
    out: dict[str, list[tuple[Workflow, str, dict]]] = {}
    for wf in workflows.values():
        for job_id, job in wf.jobs.items():
            target = _local_target(str(job.get("uses", "")))
            if target:
                out.setdefault(target, []).append((wf, job_id, job))
    return out


def _reaching_events(wf: Workflow, callers, seen: frozenset[str] = frozenset()) -> set[str]:
    """The events that can start this workflow, through its local callers too."""
    events = set(wf.triggers) - {"workflow_call"}
    if "workflow_call" in wf.triggers and wf.name not in seen:
        for caller, _, _ in callers.get(wf.name, []):
            events |= _reaching_events(caller, callers, seen | {wf.name})
    return events


def _runs_on_labels(job: dict) -> list[str]:
    runs_on = job.get("runs-on")
    if isinstance(runs_on, str):
        return [runs_on]
    if isinstance(runs_on, list):
        return [str(x) for x in runs_on]
    if isinstance(runs_on, dict):
        labels = runs_on.get("labels", [])
        return [labels] if isinstance(labels, str) else [str(x) for x in labels]
    return []


def is_self_hosted(job: dict) -> bool:
    labels = _runs_on_labels(job)
    return "self-hosted" in labels or bool(SELF_HOSTED_CLASSES & set(labels))


def _steps(job: dict) -> list[dict]:
    return [s for s in job.get("steps") or [] if isinstance(s, dict)]


# -- rules -------------------------------------------------------------------------------------
def _check_uses(wf: Workflow) -> list[Violation]:
    out = []
    refs: list[tuple[str, str]] = []
    for job_id, job in wf.jobs.items():
        if "uses" in job:
            refs.append((job_id, str(job["uses"])))
        refs += [(job_id, str(step["uses"])) for step in _steps(job) if "uses" in step]
    lines = wf.text.splitlines()
    for job_id, uses in refs:
        if uses.startswith("./"):
            continue
        if uses.startswith("docker://"):
            if "@sha256:" not in uses:
                out.append(Violation("pinned-uses", wf.name, job_id, f"{uses}: pin the image by @sha256 digest"))
            continue
        if not _PINNED.match(uses):
            out.append(Violation("pinned-uses", wf.name, job_id, f"{uses}: pin to a full 40-hex commit SHA"))
            continue
        line = next((ln for ln in lines if re.search(r"uses:\s*['\"]?" + re.escape(uses), ln)), "")
        if not _VERSION_COMMENT.search(line):
            out.append(Violation("pinned-uses", wf.name, job_id, f"{uses}: add a '# vX.Y.Z' comment naming the tag"))
    return out


def _write_scopes(perms: Any) -> set[str]:
    if perms == "write-all":
        return {"*"}
    if isinstance(perms, dict):
        return {scope for scope, level in perms.items() if level == "write"}
    return set()


def _restrictive(perms: Any) -> bool:
    if perms == {} or perms == "read-all":
        return True
    return isinstance(perms, dict) and all(level in ("read", "none") for level in perms.values())


def _check_permissions(wf: Workflow, workflows: dict[str, Workflow]) -> list[Violation]:
    out = []
    top = wf.data.get("permissions")
    if _write_scopes(top):
        out.append(Violation("permissions", wf.name, "(top level)",
                             f"write scopes {sorted(_write_scopes(top))} at the top level reach every job"))
    for job_id, job in wf.jobs.items():
        if "permissions" not in job:
            if not (top is not None and _restrictive(top)):
                out.append(Violation("permissions", wf.name, job_id,
                                     "no job permissions and no restrictive top-level permissions ({} or read)"))
            continue
        writes = _write_scopes(job["permissions"])
        if "*" in writes:
            out.append(Violation("permissions", wf.name, job_id, "write-all grants every scope"))
            continue
        # A job calling a local reusable workflow may pass down what the called jobs may hold.
        target = _local_target(str(job.get("uses", "")))
        allowed_here = set()
        if target and target in workflows:
            for callee_id in workflows[target].jobs:
                allowed_here |= {s for s, jobs in ALLOWED_WRITE.items() if callee_id in jobs}
        for scope in sorted(writes):
            if job_id in ALLOWED_WRITE.get(scope, set()) or scope in allowed_here:
                continue
            where = ", ".join(sorted(ALLOWED_WRITE.get(scope, set()))) or "no job"
            out.append(Violation("write-scope", wf.name, job_id, f"{scope}: write is allowed only in: {where}"))
    return out


def _check_run_interpolation(wf: Workflow, job_id: str, job: dict) -> list[Violation]:
    out = []
    for step in _steps(job):
        run = step.get("run")
        if not isinstance(run, str):
            continue
        for expr in _EXPRESSION.findall(run):
            if _TAINTED.search(expr):
                out.append(Violation("run-interpolation", wf.name, job_id,
                                     f"step {step.get('name', '?')!r} pastes ${{{{{expr.strip()}}}}} into shell; pass it via env:"))
    return out


def _check_checkout_credentials(wf: Workflow, job_id: str, job: dict) -> list[Violation]:
    out = []
    steps = _steps(job)
    for i, step in enumerate(steps):
        if not str(step.get("uses", "")).startswith("actions/checkout@"):
            continue
        persist = (step.get("with") or {}).get("persist-credentials", True)
        if persist is False or str(persist).lower() == "false":
            continue
        pushes_later = any("git push" in str(s.get("run", "")) for s in steps[i + 1:])
        if not pushes_later:
            out.append(Violation("persist-credentials", wf.name, job_id,
                                 "checkout keeps the token in .git/config but no later step pushes; set persist-credentials: false"))
    return out


def _check_self_hosted(wf: Workflow, job_id: str, job: dict, workflows, callers) -> list[Violation]:
    out = []
    if "timeout-minutes" not in job:
        out.append(Violation("self-hosted-timeout", wf.name, job_id, "self-hosted job without timeout-minutes"))

    strategy = job.get("strategy") or {}
    if "matrix" in strategy and strategy.get("fail-fast", True) is not False:
        out.append(Violation("fail-fast", wf.name, job_id,
                             "matrix on self-hosted runners needs fail-fast: false (one bad cell must not cancel the rest)"))

    concurrency = job.get("concurrency")
    group = concurrency.get("group", "") if isinstance(concurrency, dict) else str(concurrency or "")
    labels = [label for label in _runs_on_labels(job) if label != "self-hosted"]
    # An expression label (``${{ matrix.runner }}``, ``${{ inputs.runner_class }}``) is keyed when
    # the group holds the same expression.
    keyed = any(("${{" in label and label.replace(" ", "") in group.replace(" ", ""))
                or ("${{" not in label and label in group) for label in labels)
    if not group or not keyed:
        out.append(Violation("runner-concurrency", wf.name, job_id,
                             f"concurrency group {group!r} is not keyed by the runner class ({labels})"))
    elif isinstance(concurrency, dict) and concurrency.get("cancel-in-progress") not in (False, None, "false"):
        out.append(Violation("runner-concurrency", wf.name, job_id, "cancel-in-progress would kill a running benchmark"))

    events = _reaching_events(wf, callers)
    if events & PR_EVENTS:
        guards = [str(job.get("if", ""))]
        guards += [str(cjob.get("if", "")) for _, _, cjob in callers.get(wf.name, [])]
        if not any(SAME_REPO_GUARD.search(g) for g in guards):
            out.append(Violation("self-hosted-pr", wf.name, job_id,
                                 f"reachable from {sorted(events & PR_EVENTS)} without the same-repository guard "
                                 "(github.event.pull_request.head.repo.full_name == github.repository)"))
        if not job.get("environment"):
            out.append(Violation("self-hosted-pr", wf.name, job_id,
                                 f"reachable from {sorted(events & PR_EVENTS)} without an environment (required reviewers)"))
    elif not _environment_name(job):
        out.append(Violation("self-hosted-environment", wf.name, job_id,
                             "self-hosted job without an environment: nothing holds it for a reviewer"))
    return out


def _environment_name(job: dict) -> str:
    env = job.get("environment")
    if isinstance(env, dict):
        env = env.get("name")
    return "" if env is None else str(env)


def _check_trusted_environment(wf: Workflow, job_id: str, job: dict) -> list[Violation]:
    name = _environment_name(job)
    if TRUSTED_ENVIRONMENT not in name:
        return []
    choice = " ".join(name.split())
    if choice == SCHEDULE_CHOICE:
        return []

    def violation(why: str) -> list[Violation]:
        return [Violation("trusted-environment", wf.name, job_id, f"environment {name!r}: {why}")]

    if choice != INPUTS_CHOICE:
        return violation(f"{TRUSTED_ENVIRONMENT} (no reviewers) may only be chosen by a schedule or by the "
                         "`inputs` job's trusted output")
    needs = job.get("needs")
    needs = [needs] if isinstance(needs, str) else list(needs or [])
    inputs = wf.jobs.get("inputs")
    if "inputs" not in needs or not isinstance(inputs, dict):
        return violation("the job does not need this workflow's `inputs` job")
    if is_self_hosted(inputs):
        return violation("the `inputs` job that decides runs on a self-hosted runner")
    match = _TRUSTED_OUTPUT.match(str((inputs.get("outputs") or {}).get("trusted", "")).strip())
    step = next((st for st in _steps(inputs) if match and st.get("id") == match.group(1)), None)
    if step is None or not _CHECK_SCRIPT.match(str(step.get("run", "")).strip()):
        return violation("the `inputs` job's trusted output is not the output of its tools/ci check step")
    return []


#: Status functions that lift a job's implicit ``success()`` (run only when every need succeeded).
_STATUS_OVERRIDE = re.compile(r"\b(always|cancelled|failure)\s*\(")
_TRUSTED_VERDICT = re.compile(r"needs\.inputs\.outputs\.trusted\s*==\s*'true'")


def _needs(job: dict) -> list[str]:
    needs = job.get("needs")
    return [needs] if isinstance(needs, str) else [str(n) for n in needs or []]


def _condition(job: dict) -> str:
    return " ".join(str(job.get("if", "")).split())


def _requires_success_of(condition: str, job_id: str) -> bool:
    return re.search(rf"needs\.{re.escape(job_id)}\.result\s*==\s*'success'", condition) is not None


def _gated_by_inputs(wf: Workflow, job_id: str, seen: frozenset[str] = frozenset()) -> bool:
    """The job runs only when the ``inputs`` job succeeded (directly or through its needs)."""
    job = wf.jobs.get(job_id)
    if not isinstance(job, dict) or job_id in seen:
        return False
    seen = seen | {job_id}

    def gated(need: str) -> bool:
        return need == "inputs" or _gated_by_inputs(wf, need, seen)

    condition = _condition(job)
    if not _STATUS_OVERRIDE.search(condition):
        return any(gated(need) for need in _needs(job))
    # `a || b` could hold without the success clause: only a conjunction counts.
    return "||" not in condition and any(gated(need) and _requires_success_of(condition, need) for need in _needs(job))


def _check_inputs_gate(wf: Workflow, job_id: str, job: dict) -> list[Violation]:
    if job_id == "inputs" or not isinstance(wf.jobs.get("inputs"), dict) or _gated_by_inputs(wf, job_id):
        return []
    return [Violation("inputs-gate", wf.name, job_id,
                      "runs even when the `inputs` job refused the dispatch: need `inputs` and require "
                      "needs.inputs.result == 'success' (or the success of a need that does) next to !cancelled()/always()")]


def _check_trusted_write(wf: Workflow, job_id: str, job: dict) -> list[Violation]:
    inputs = wf.jobs.get("inputs")
    if not isinstance(inputs, dict) or "trusted" not in (inputs.get("outputs") or {}):
        return []
    if "contents" not in _write_scopes(job.get("permissions")):
        return []
    condition = _condition(job)
    if "inputs" in _needs(job) and "||" not in condition and _TRUSTED_VERDICT.search(condition):
        return []
    return [Violation("trusted-write", wf.name, job_id,
                      "contents: write (the history) outside the trusted path: need `inputs` and require "
                      "needs.inputs.outputs.trusted == 'true' in the job's if")]
