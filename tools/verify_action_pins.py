#!/usr/bin/env python3
"""Check every `uses: owner/repo@<sha> # vX.Y.Z` pin in the workflows against the action's repository.

A pin is right when its SHA is a commit of that repository and the version in the comment is the
tag at that SHA. actionlint and zizmor cannot see a wrong SHA offline (an earlier pin of
github-action-benchmark agreed with v1.20.4 in its first 18 hex digits only, and GitHub would have
refused it with "unable to resolve action"). Two sources of truth, both used when available:

  --snapshots DIR   a directory of `<owner>+<repo>@<sha>.tar.gz` action snapshots (the tree of that
                    repository at that commit; tests/workflows/act runs the workflows with them).
                    Every pin must have the snapshot of exactly its SHA, and the snapshot must be an
                    action (action.yml at its root).
  --online          `git ls-remote https://github.com/<owner>/<repo> refs/tags/<tag>*`: the tag in
                    the comment must name (peeled) exactly the pinned SHA; a SHA reached through a
                    tag is a commit of the repository. `auto` (default) does this when github.com
                    answers within a few seconds and says so when it does not.

Exit 0 when every check that ran passed, 1 otherwise, 2 on bad usage. `--json` prints the
findings as JSON (one object per pin).

    tools/verify_action_pins.py --snapshots "$VKBENCH_ACTIONS_SNAPSHOTS" --online auto
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: `uses: owner/repo[/path]@ref [# comment]` on one line, as the rule checker requires it.
USES = re.compile(
    r"^\s*(?:-\s+)?uses:\s*(?P<action>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)(?P<subpath>/[^@\s]*)?@(?P<ref>\S+)"
    r"(?:\s+#\s*(?P<comment>\S+))?"
)
SHA = re.compile(r"^[0-9a-f]{40}$")
SNAPSHOT = re.compile(r"^(?P<owner>[^+/]+)\+(?P<repo>[^@/]+)@(?P<sha>[0-9a-f]{40})\.tar\.gz$")


@dataclass
class Pin:
    action: str  # owner/repo
    sha: str
    tag: str
    places: list[str] = field(default_factory=list)  # file:line
    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # which checks ran: snapshot, github


def workflow_pins(workflow_dir: Path) -> tuple[dict[tuple[str, str], Pin], list[str]]:
    """(action, sha) -> Pin for every remote `uses:`; plus problems that are not about one pin."""
    pins: dict[tuple[str, str], Pin] = {}
    problems: list[str] = []
    # The workflows, and the local composite actions beside them (.github/actions/*/action.yml).
    files = sorted([*workflow_dir.glob("*.yml"), *workflow_dir.glob("*.yaml"),
                    *workflow_dir.parent.glob("actions/*/action.y*ml")])
    for path in files:
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = USES.match(line)
            if not m or m["action"].startswith("."):
                continue
            place = f"{path.name}:{lineno}"
            if not SHA.match(m["ref"]):
                problems.append(f"{place}: {m['action']}@{m['ref']} is not pinned to a 40-hex commit SHA")
                continue
            tag = m["comment"] or ""
            key = (m["action"], m["ref"])
            pin = pins.setdefault(key, Pin(m["action"], m["ref"], tag))
            pin.places.append(place)
            if not re.fullmatch(r"v\d+(\.\d+)*", tag):
                pin.problems.append(f"{place}: the comment after the SHA must be the release tag (# vX.Y.Z), got {tag!r}")
            elif tag != pin.tag:
                pin.problems.append(f"{place}: tag comment {tag} differs from {pin.tag} at {pin.places[0]} for the same SHA")
    return pins, problems


def check_snapshots(pins: dict[tuple[str, str], Pin], snapshots: Path) -> list[str]:
    if not snapshots.is_dir():
        return [f"snapshot directory {snapshots} does not exist"]
    have: dict[str, set[str]] = {}
    for f in snapshots.iterdir():
        m = SNAPSHOT.match(f.name)
        if m:
            have.setdefault(f"{m['owner']}/{m['repo']}", set()).add(m["sha"])
    for (action, sha), pin in pins.items():
        pin.checked.append("snapshot")
        if sha not in have.get(action, set()):
            other = sorted(have.get(action, set()))
            pin.problems.append(
                f"{action}@{sha}: no snapshot of that commit in {snapshots}"
                + (f" (snapshots of {action}: {', '.join(other)})" if other else "")
            )
            continue
        tarball = snapshots / f"{action.replace('/', '+')}@{sha}.tar.gz"
        with tarfile.open(tarball) as tar:
            names = {n.removeprefix("./") for n in tar.getnames()}
        if not {"action.yml", "action.yaml"} & names:
            pin.problems.append(f"{tarball.name}: no action.yml at its root: not an action snapshot")
    return []


def ls_remote(url: str, refs: list[str], timeout: float) -> dict[str, str]:
    proc = subprocess.run(
        ["git", "ls-remote", url, *refs],
        capture_output=True, text=True, timeout=timeout,
        env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    if proc.returncode != 0:
        raise OSError(proc.stderr.strip() or f"git ls-remote exited {proc.returncode}")
    out = {}
    for line in proc.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        out[ref] = sha
    return out


def github_reachable(server: str, timeout: float) -> bool:
    try:
        ls_remote(f"{server}/actions/checkout", ["HEAD"], timeout)
        return True
    except (OSError, subprocess.TimeoutExpired):
        return False


def check_github(pins: dict[tuple[str, str], Pin], server: str, timeout: float) -> None:
    for (action, sha), pin in pins.items():
        if not pin.tag:
            continue
        pin.checked.append("github")
        ref = f"refs/tags/{pin.tag}"
        try:
            refs = ls_remote(f"{server}/{action}", [ref, f"{ref}^{{}}"], timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pin.problems.append(f"{action}: git ls-remote failed: {exc}")
            continue
        tagged = refs.get(f"{ref}^{{}}") or refs.get(ref)  # annotated tags peel to the commit
        if tagged is None:
            pin.problems.append(f"{action}: no tag {pin.tag} on {server}/{action}")
        elif tagged != sha:
            pin.problems.append(f"{action}: tag {pin.tag} is {tagged}, the workflows pin {sha}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workflows", type=Path, default=REPO / ".github" / "workflows")
    ap.add_argument("--snapshots", type=Path, help="directory of <owner>+<repo>@<sha>.tar.gz action snapshots")
    ap.add_argument("--online", choices=["auto", "yes", "no"], default="auto",
                    help="check tags with git ls-remote on GitHub (auto: when reachable)")
    ap.add_argument("--server", default="https://github.com")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per git ls-remote")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    pins, problems = workflow_pins(args.workflows)
    if not pins and not problems:
        print(f"error: no pinned `uses:` in {args.workflows}", file=sys.stderr)
        return 2
    if args.snapshots:
        problems += check_snapshots(pins, args.snapshots)
    online = args.online == "yes" or (args.online == "auto" and github_reachable(args.server, min(args.timeout, 8.0)))
    if online:
        check_github(pins, args.server, args.timeout)
    elif args.online == "auto":
        print(f"note: {args.server} is not reachable: tags were not checked online", file=sys.stderr)
    if not args.snapshots and not online:
        problems.append("nothing to check against: give --snapshots DIR or reach GitHub (--online)")

    if args.json:
        print(json.dumps({"pins": [asdict(p) for p in pins.values()], "problems": problems, "online": online}, indent=2))
    else:
        for pin in pins.values():
            state = "FAIL" if pin.problems else "ok"
            print(f"{state:4} {pin.action}@{pin.sha} # {pin.tag}  [{', '.join(pin.checked) or 'not checked'}]")
            for p in pin.problems:
                print(f"     {p}")
        for p in problems:
            print(f"FAIL {p}")
    return 1 if problems or any(p.problems for p in pins.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
