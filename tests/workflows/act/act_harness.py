"""Run the committed workflow files under nektos/act, on this host, and read what happened.

This is a plain module (the fixtures are in conftest.py). What it does and why:

- **The committed tree.** :func:`committed_tree` clones HEAD of the repository into a temporary
  directory (branch ``main``, remote ``origin`` named like the GitHub repository). act runs the
  workflow files of that commit, never the working tree's edits: commit before you test a change.
- **Host mode.** Every runner label of ``runners/classes.yaml`` (classes and roles), plus
  ``ubuntu-latest`` and ``self-hosted``, is mapped to ``-self-hosted``: jobs run as processes on
  this machine, as on a self-hosted runner, and need no Docker.
- **Actions at their pinned SHAs.** With ``$VKBENCH_ACTIONS_SNAPSHOTS`` (a directory of
  ``<owner>+<repo>@<sha>.tar.gz``), each pinned action is extracted and handed to act with
  ``--local-repository owner/repo@sha=DIR``; a pin without its snapshot is an error, never another
  version. Without the variable act clones the actions from GitHub at the pinned SHAs.
- **One stand-in**: actions/setup-python downloads a Python build from GitHub, so
  ``standins/setup-python`` replaces it (a fresh venv of the host's python3, first on PATH; it
  refuses another major.minor than the host's).
- **act's artifact server** (``--artifact-server-*``) carries artifacts between jobs.
- **GitHub itself**: a local bare repository stands in for the repository's gh-pages branch
  (``url.<bare>.insteadOf`` in the jobs' ``$HOME/.gitconfig`` sends every push and fetch of
  ``https://github.com/OWNER/REPO.git`` there, with or without a token in the URL), and
  ``GITHUB_API_URL`` points at a fake REST API on 127.0.0.1 (:class:`FakeGitHub`, a plain
  ``http.server`` in its own thread) that records every call.
- **act's JSON log** (``--json``) gives each job's result (``jobResult``), each step's result
  (``stepResult``) and the job summaries (``command: summary``).

act's known differences from GitHub, each handled here and nowhere in the workflows:

- it ignores ``--input`` when ``-e`` gives an event: dispatch inputs go in
  the event's ``inputs`` object, where GitHub puts them too;
- it ignores concurrency groups, so matrix cells run at once: ``--concurrent-jobs`` bounds it;
- ``-n`` is no dry run in host mode: never used;
- three act bugs that stop the workflows from running are patched in act itself by
  tools/setup/act.sh (tools/setup/act-patches/): ``concurrency.queue`` unknown to its schema; its
  artifact server rejecting upload-artifact v6's unpadded signatures (nektos/act#6021); a called
  workflow's jobs getting no ``secrets.GITHUB_TOKEN`` (nightly.yml -> benchmark.yml).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from github_api_standin import FakeGitHub  # noqa: F401  (the tests use it as ah.FakeGitHub)

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
ACT = REPO / ".cache" / "bin" / "act"
OWNER, NAME = "vkbench-test", "vkbench"
OWNER_REPO = f"{OWNER}/{NAME}"
REPO_URL = f"https://github.com/{OWNER_REPO}"
#: A token shaped like GitHub's; it must never appear in a log.
FAKE_TOKEN = "ghs_actHarnessFakeToken0123456789abcdefXYZ"
USES = re.compile(r"uses:\s*([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)@([0-9a-f]{40})")
#: The one action replaced by a stand-in (it downloads Python from GitHub).
STANDINS = {"actions/setup-python": HERE / "standins" / "setup-python"}


# -- the repository under test ---------------------------------------------------------------
def git(*args: str, cwd: Path | None = None, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env, timeout=300).stdout


def committed_tree(dest: Path) -> tuple[Path, str]:
    """Clone the repository's HEAD commit into ``dest``: (path, sha). Uncommitted edits are not in it."""
    sha = git("rev-parse", "HEAD", cwd=REPO).strip()
    git("clone", "--quiet", "--shared", "--no-checkout", str(REPO), str(dest))
    git("checkout", "--quiet", "-B", "main", sha, cwd=dest)
    git("remote", "set-url", "origin", REPO_URL, cwd=dest)
    return dest, sha


def runner_labels() -> list[str]:
    data = yaml.safe_load((REPO / "runners" / "classes.yaml").read_text())
    return ["ubuntu-latest", "self-hosted", *data["classes"], *data["roles"]]


def pinned_actions(tree: Path) -> set[tuple[str, str]]:
    pins = set()
    # The workflows and the local composite actions they use (.github/actions/*/action.yml).
    for path in [*(tree / ".github" / "workflows").glob("*.y*ml"), *(tree / ".github" / "actions").glob("*/action.y*ml")]:
        pins.update(USES.findall(path.read_text()))
    return pins


def local_actions(tree: Path, work: Path) -> list[str]:
    """--local-repository flags: each pinned action from its snapshot, setup-python's stand-in."""
    flags = []
    snapshots = os.environ.get("VKBENCH_ACTIONS_SNAPSHOTS")
    for action, sha in sorted(pinned_actions(tree)):
        dest = work / f"{action.replace('/', '+')}@{sha}"
        if action in STANDINS:
            shutil.copytree(STANDINS[action], dest)
        elif snapshots:
            tarball = Path(snapshots) / f"{action.replace('/', '+')}@{sha}.tar.gz"
            if not tarball.is_file():
                raise FileNotFoundError(f"{tarball}: no snapshot of {action} at the pinned {sha} "
                                        "(tools/verify_action_pins.py explains the snapshot directory)")
            dest.mkdir(parents=True)
            with tarfile.open(tarball) as tar:
                tar.extractall(dest, filter="tar")
        else:
            continue  # act clones it from GitHub at the pinned SHA
        flags += ["--local-repository", f"{action}@{sha}={dest}"]
    return flags


# -- Valkey's repository ------------------------------------------------------------------------
def valkey_repository(dest: Path, branches: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A bare copy of Valkey's repository (``$VKBENCH_VALKEY_GIT_URL``, upstream by default) whose
    branches are ``branches`` (name -> a commit of its unstable): (file:// URL, name -> full SHA).

    It stands for the repository on a given night: the workflows build from it as from GitHub."""
    from vkbench.servers import source_build

    source = source_build.repo_url()
    git("init", "--quiet", "--bare", str(dest))
    git("fetch", "--quiet", "--update-shallow", source, "+refs/heads/unstable:refs/remotes/source/unstable", cwd=dest)
    resolved = {}
    for name, commit in branches.items():
        resolved[name] = git("rev-parse", f"{commit}^{{commit}}", cwd=dest).strip()
        git("update-ref", f"refs/heads/{name}", resolved[name], cwd=dest)
    return f"file://{dest}", resolved


# -- GitHub stand-ins --------------------------------------------------------------------------
def bare_pages_repo(path: Path) -> Path:
    git("init", "--quiet", "--bare", "--initial-branch=main", str(path))
    return path


def pages_checkout(bare: Path, dest: Path, branch: str = "gh-pages") -> Path:
    git("clone", "--quiet", "--branch", branch, str(bare), str(dest))
    return dest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- running act -------------------------------------------------------------------------------
@dataclass
class ActResult:
    returncode: int
    seconds: float
    entries: list[dict]  # act's JSON log, one object per line
    raw: str  # everything act printed (stdout + stderr)
    jobs: dict[str, str] = field(default_factory=dict)  # job name (matrix cells by name) -> result

    def names(self) -> dict[str, str]:
        """Each job's own name (:func:`job_name`) -> its result."""
        return {e["job_name"]: e["jobResult"] for e in self.entries if "jobResult" in e}

    def summaries(self, job: str = "") -> list[str]:
        return [e["content"] for e in self.entries
                if e.get("command") == "summary" and (not job or e["job_name"] == job)]

    def step_results(self, job: str) -> dict[str, str]:
        return {e.get("step", ""): e["stepResult"] for e in self.entries
                if e["job_name"] == job and "stepResult" in e and e.get("stage") == "Main"}

    def output_of(self, job: str) -> str:
        return "\n".join(str(e.get("msg", "")).rstrip("\n") for e in self.entries
                         if str(e.get("job", "")).strip() == job)

    def describe(self) -> str:
        """For assertion messages: each job's result and the tail of the failing ones' logs."""
        lines = [f"act exited {self.returncode} after {self.seconds:.0f}s", *(f"  {j}: {r}" for j, r in self.jobs.items())]
        for job, result in self.jobs.items():
            if result != "success":
                lines += [f"--- {job} (last lines)", *self.output_of(job).splitlines()[-40:]]
        if not self.jobs:
            lines += self.raw.splitlines()[-60:]
        return "\n".join(lines)


@functools.lru_cache(maxsize=1)
def workflow_names() -> tuple[str, ...]:
    names = set()
    # vkbench's workflows, and the callers it ships for Valkey repositories (docs/templates).
    for path in [*(REPO / ".github" / "workflows").glob("*.y*ml"), *(REPO / "docs" / "templates").glob("*.y*ml")]:
        names.add(str(yaml.safe_load(path.read_text()).get("name") or path.name))
    return tuple(sorted(names, key=len, reverse=True))


def job_name(logged: str, matrix: dict | None = None) -> str:
    """The job's own name from act's log name: act prefixes the workflow's name (for a called
    workflow, the caller's too) and suffixes a matrix job's index (``-2``)."""
    name = logged.strip()
    prefixes = workflow_names()
    while True:
        prefix = next((p for p in prefixes if name.startswith(p + "/")), None)
        if prefix is None:
            break
        name = name[len(prefix) + 1:]
    return re.sub(r"-\d+$", "", name) if matrix else name


def parse_log(text: str) -> tuple[list[dict], dict[str, str]]:
    entries, jobs = [], {}
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        entry["job_name"] = job_name(str(entry.get("job", "")), entry.get("matrix"))
        entries.append(entry)
        if "jobResult" in entry:
            jobs[str(entry.get("job", "")).strip()] = entry["jobResult"]
    return entries, jobs


@dataclass
class ActRunner:
    """One act invocation's setting: the tree, the stand-ins, the environment of the jobs."""

    tree: Path
    work: Path  # scratch space of this test
    actions: list[str]  # --local-repository flags
    env: dict[str, str] = field(default_factory=dict)  # --env for every job
    variables: dict[str, str] = field(default_factory=dict)  # --var
    secrets: dict[str, str] = field(default_factory=dict)  # -s
    matrix: list[str] = field(default_factory=list)  # --matrix key:value

    def jobs_for(self, event: str, payload: dict) -> list[tuple[str, str]]:
        """(workflow file, job id) of every job of .github/workflows that ``event`` starts, as act
        lists them (``act EVENT -l``: it matches each workflow's triggers; nothing runs)."""
        event_file = self.work / f"event-{event}-list.json"
        event_file.write_text(json.dumps(payload))
        proc = subprocess.run([str(ACT), event, "-l", "-e", str(event_file)], cwd=self.tree, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "HOME": self.env["HOME"]})
        if proc.returncode != 0:
            raise RuntimeError(f"act {event} -l exited {proc.returncode}: {proc.stderr[-2000:]}")
        assert "Stage  Job ID" in proc.stdout, proc.stdout   # the listing's header: act understood
        jobs = []
        for line in proc.stdout.splitlines():
            if re.match(r"^\d+\s", line):                   # a row: Stage, Job ID, ..., Workflow file, Events
                columns = re.split(r"\s{2,}", line.strip())
                jobs.append((columns[-2], columns[1]))
        return jobs

    def run(self, event: str, workflow: str, payload: dict, *, timeout: float, concurrent_jobs: int = 2,
            extra: list[str] | None = None) -> ActResult:
        event_file = self.work / f"event-{event}.json"
        event_file.write_text(json.dumps(payload))
        artifacts = self.work / "artifacts"
        artifacts.mkdir(exist_ok=True)
        home = self.env["HOME"]
        # A workflow of this repository by its file name, or any workflow file by its path in the tree.
        path = workflow if "/" in workflow else f".github/workflows/{workflow}"
        cmd = [str(ACT), event, "-W", path, "-e", str(event_file), "--json",
               "--artifact-server-path", str(artifacts), "--artifact-server-addr", "127.0.0.1",
               "--artifact-server-port", str(free_port()), "--no-cache-server",
               "--action-cache-path", str(self.work / "act-cache"), "--action-offline-mode",
               "--remote-name", "origin", "--defaultbranch", "main",
               "--concurrent-jobs", str(concurrent_jobs)]
        for label in runner_labels():
            cmd += ["-P", f"{label}=-self-hosted"]
        cmd += self.actions
        for key, value in self.env.items():
            cmd += ["--env", f"{key}={value}"]
        for key, value in self.variables.items():
            cmd += ["--var", f"{key}={value}"]
        for key, value in self.secrets.items():
            cmd += ["-s", f"{key}={value}"]
        for m in self.matrix:
            cmd += ["--matrix", m]
        cmd += extra or []
        # act itself reads ~/.actrc and its caches from HOME: the test's own, never the user's.
        proc_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_"))}
        proc_env.update(HOME=home, XDG_CACHE_HOME=str(Path(home) / ".cache"), XDG_CONFIG_HOME=str(Path(home) / ".config"))
        # The log goes to a file as it comes (follow it with tail -f while a test runs).
        log_path = self.work / f"act-{Path(workflow).name}.log"
        start = time.monotonic()
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, cwd=self.tree, env=proc_env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                # act leaves its step processes running when killed, and each step has its own
                # process group: end act and every process below it, by PID.
                stop_tree(proc.pid)
                proc.wait()
                log.write(f"\n[harness] act killed after {timeout:.0f}s\n")
                returncode = -1
        seconds = time.monotonic() - start
        out = log_path.read_text(errors="replace")
        entries, jobs = parse_log(out)
        return ActResult(returncode, seconds, entries, out, jobs)


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def stop_tree(pid: int) -> None:
    """SIGTERM act and all its descendants, then SIGKILL what is left after 20 s."""
    pids = [pid, *descendants(pid)]
    for sig in (15, 9):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        while sig == 15 and time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids[1:]):
            time.sleep(0.5)


def job_home(work: Path, bare_pages: Path | None, repositories: dict[str, str] | None = None) -> Path:
    """$HOME of the jobs (and of act): git identity, the gh-pages stand-in behind insteadOf, and
    ``repositories`` (GitHub URL -> local repository) behind insteadOf too."""
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[user]", "\tname = act harness", "\temail = act-harness@example.invalid",
             "[init]", "\tdefaultBranch = main"]
    if bare_pages is not None:
        lines += [f'[url "{bare_pages}"]',
                  f"\tinsteadOf = {REPO_URL}.git",
                  f"\tinsteadOf = https://x-access-token:{FAKE_TOKEN}@github.com/{OWNER_REPO}.git"]
    for url, local in (repositories or {}).items():
        # The longest insteadOf wins: the URL with .git, and without it.
        lines += [f'[url "{local}"]', f"\tinsteadOf = {url}.git", f"\tinsteadOf = {url}"]
    (home / ".gitconfig").write_text("\n".join(lines) + "\n")
    (home / ".actrc").write_text("")  # act asks which image to use when it finds no config
    return home


def passthrough_env() -> dict[str, str]:
    """Caches and the container engine of this host, so jobs reuse downloads and the shared podman.

    PATH is this process's, minus the repository's own venv: a job must use the vkbench it
    installs itself, never the developer's editable one."""
    env: dict[str, str] = {}
    venv_bin = str(REPO / ".venv" / "bin")
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    real_home = Path(os.environ.get("HOME", "/root"))
    env["VKBENCH_CACHE"] = os.environ.get("VKBENCH_CACHE", str(real_home / ".cache" / "vkbench"))
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(real_home / ".cache" / "pip"))
    env["npm_config_cache"] = os.environ.get("npm_config_cache", str(real_home / ".npm"))
    if shutil.which("go"):
        for var in ("GOPATH", "GOMODCACHE", "GOCACHE"):
            value = subprocess.run(["go", "env", var], capture_output=True, text=True).stdout.strip()
            if value:
                env[var] = value
    for var in ("VKBENCH_CONTAINERS_STATE", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "DOCKER_CONFIG",
                "DOCKER_HOST", "VALKEY_IMAGE", "VKBENCH_CONTAINERS_BIN", "VKBENCH_VALKEY_GIT_URL",
                "VKBENCH_MEMTIER_SOURCE", "VKBENCH_ACTIONS_SNAPSHOTS", "LANG"):
        if os.environ.get(var):
            env[var] = os.environ[var]
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    # Every job installs vkbench and its dependencies into a fresh venv, as on GitHub; compiling
    # every module to bytecode at install time is most of that cost on 2 cores, and Python
    # compiles what it imports anyway.
    env["PIP_NO_COMPILE"] = "1"
    return env


def dispatch_event(inputs: dict[str, str], workflow: str) -> dict:
    """A workflow_dispatch payload as GitHub sends it (inputs as strings)."""
    return {"inputs": inputs, "ref": "refs/heads/main", "repository": repository_payload(),
            "sender": {"login": "octo-tester"}, "workflow": f".github/workflows/{workflow}"}


def repository_payload() -> dict:
    return {"name": NAME, "full_name": OWNER_REPO, "owner": {"login": OWNER}, "default_branch": "main",
            "html_url": REPO_URL, "private": False, "fork": False}


def masked_values(result: ActResult) -> set[str]:
    """Every value a job registered with ``::add-mask::`` (vkbench's per-stack server passwords, the
    base64 form of the git credential): act's JSON log records them in the command's own entry."""
    return {str(e.get("arg", "")) for e in result.entries if e.get("command") == "add-mask" and e.get("arg")}


def visible_log(result: ActResult) -> str:
    """The log as a reader sees it: every entry, except the ``arg``/``raw`` fields of act's own
    record of an ``::add-mask::`` command (act's JSON logger keeps the masked value there; GitHub
    shows no such line, and act's text log prints *** for it)."""
    parts = []
    for e in result.entries:
        if e.get("command") == "add-mask":
            e = {k: v for k, v in e.items() if k not in ("arg", "raw")}
        parts.append(json.dumps(e, ensure_ascii=False))
    parts += [line for line in result.raw.splitlines() if not line.startswith("{")]
    return "\n".join(parts)


def secret_leaks(result: ActResult, secrets: list[str]) -> list[str]:
    """Secrets found in what the jobs logged: the given ones (and the base64 credential git gets),
    and every value a job masked (the generated server passwords among them)."""
    import base64

    text = visible_log(result)
    # JSON escapes nothing in these (token_urlsafe / base64 / ghs_ alphabets), so plain search works.
    wanted = {s: s for s in secrets if s}
    for s in secrets:
        if s:
            wanted[base64.b64encode(f"x-access-token:{s}".encode()).decode()] = f"base64 credential of {s[:6]}..."
    for value in masked_values(result):
        if len(value) >= 8:
            wanted.setdefault(value, f"masked value {value[:4]}...")
    return sorted(label for value, label in wanted.items() if value in text)


# -- the published site in Chromium ------------------------------------------------------------
CHROMIUM = Path("/usr/bin/chromium")
#: tests/browser/conftest.py's flags: without the background-networking ones chromium keeps
#: calling home on a closed network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def render_site(site_dir: Path) -> dict:
    """Open the explorer of a built site in Debian chromium; what the page showed and any problem.

    Playwright's sync API runs in a thread of its own, which has no event loop: whatever another
    fixture left running in pytest's main thread cannot clash with it."""
    from concurrent.futures import ThreadPoolExecutor

    from vkbench.site.serve import serve_in_thread

    def drive(url: str) -> dict:
        from playwright.sync_api import sync_playwright

        problems: list[str] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
                page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
                page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
                page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
                page.goto(url + "#/explorer")
                page.wait_for_selector(".legend-item", timeout=30_000)
                page.wait_for_function("document.getElementById('view').getAttribute('aria-busy') === 'false'",
                                       timeout=30_000)
                return {"legend_items": page.locator(".legend-item").count(),
                        "canvases": page.locator("canvas").count(), "problems": problems}
            finally:
                browser.close()

    if not CHROMIUM.exists():
        raise FileNotFoundError(f"{CHROMIUM} is missing: run tools/setup/browser.sh")
    server, url = serve_in_thread(site_dir)
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chromium") as pool:
            return pool.submit(drive, url).result(timeout=180)
    finally:
        server.shutdown()
        server.server_close()
