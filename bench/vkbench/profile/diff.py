"""Differential profiles: which functions' share of the samples grew or shrank most.

Shares, not sample counts, are compared: two recordings never take exactly as many samples.
``self`` is the share of samples in which the function was the leaf (running its own code);
``total`` the share in which it was anywhere on the stack (itself and what it called).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Union

from .. import markdown as md
from ..errors import ResultFileError
from . import folded

ProfileSource = Union[str, os.PathLike, Mapping[str, int]]


@dataclass
class DiffRow:
    function: str
    before_self: float
    after_self: float
    self_delta: float        # after - before, in share points (0.05 = 5 points of all samples)
    before_total: float
    after_total: float
    total_delta: float

    def to_dict(self) -> dict:
        return asdict(self)


def load(source: ProfileSource) -> dict[str, int]:
    """Folded stacks from a mapping, a ``.folded`` file, or a result file with a recorded profile."""
    if isinstance(source, Mapping):
        return dict(source)
    path = Path(source)
    if path.suffix == ".json":
        from ..results.io import load_result

        result = load_result(path)
        profile = result.get("profile") or {}
        if profile.get("status") != "recorded" or not profile.get("file"):
            raise ResultFileError(f"{path}: has no recorded profile ({profile.get('reason') or 'run without --profile'})",
                                  hint="run the cell again with `vkbench run --profile`")
        return folded.read(stacks_path(path, profile["file"]))
    return folded.read(path)


def stacks_path(result_path: Path, name: str) -> Path:
    """The folded stacks file ``name`` (a result's ``profile.file``) beside ``result_path``,
    resolved; a ResultFileError naming the result when it leads out of the result's folder
    (``..``, an absolute path, or a symlink): a result never makes vkbench read other files."""
    folder = Path(result_path).parent.resolve()
    path = (folder / name).resolve()
    if not path.is_relative_to(folder) or path == folder:
        raise ResultFileError(f"{result_path}: profile/file {name!r} leads outside the run folder {folder} (to {path})",
                              hint="the result or its raw folder was edited; restore the run from its artifact")
    return path


def shares(stacks: Mapping[str, int]) -> tuple[dict[str, float], dict[str, float], int]:
    """(self share, total share, samples) per function; the thread-name root frame counts as a
    function too (its total share is that thread's part of the CPU time)."""
    total_samples = sum(stacks.values())
    self_count: dict[str, int] = {}
    total_count: dict[str, int] = {}
    for stack, count in stacks.items():
        frames = stack.split(";")
        self_count[frames[-1]] = self_count.get(frames[-1], 0) + count
        for frame in set(frames):
            total_count[frame] = total_count.get(frame, 0) + count
    if not total_samples:
        return {}, {}, 0
    return ({f: c / total_samples for f, c in self_count.items()},
            {f: c / total_samples for f, c in total_count.items()}, total_samples)


def profile_diff(before: ProfileSource, after: ProfileSource, *, limit: int | None = None) -> list[DiffRow]:
    """Functions ordered by how much their self share changed (then their total share), biggest
    change first. ``before``/``after``: folded files, result files with a profile, or mappings."""
    b_self, b_total, b_n = shares(load(before))
    a_self, a_total, a_n = shares(load(after))
    if not b_n or not a_n:
        raise ResultFileError("a profile has no samples", hint="record longer repetitions (more requests)")
    rows = []
    for fn in set(b_total) | set(a_total):
        if fn == folded.OTHER_STACKS:
            continue
        bs, as_ = b_self.get(fn, 0.0), a_self.get(fn, 0.0)
        bt, at = b_total.get(fn, 0.0), a_total.get(fn, 0.0)
        rows.append(DiffRow(fn, round(bs, 6), round(as_, 6), round(as_ - bs, 6), round(bt, 6), round(at, 6), round(at - bt, 6)))
    rows.sort(key=lambda r: (-abs(r.self_delta), -abs(r.total_delta), r.function))
    return rows[:limit] if limit else rows


def to_markdown(rows: list[DiffRow], *, before_label: str = "before", after_label: str = "after", limit: int = 15) -> str:
    """Function names come from the profiled binary (a branch anyone can push): code spans
    that the name cannot close."""
    before, after = md.text(before_label), md.text(after_label)
    cells = []
    for r in rows[:limit]:
        arrow = "▲" if r.self_delta > 0 else ("▼" if r.self_delta < 0 else "")
        cells.append([md.code(r.function), f"{r.before_self:.1%}", f"{r.after_self:.1%}", f"{arrow} {r.self_delta * 100:+.1f} pt",
                      f"{r.before_total:.1%}", f"{r.after_total:.1%}"])
    lines = md.table(["function", f"self {before}", f"self {after}", "change", f"total {before}", f"total {after}"], "lrrrrr", cells)
    lines.append("")
    lines.append("Share of CPU samples of the server: self = in the function's own code, total = with what it calls; "
                 "change in percentage points.")
    return "\n".join(lines) + "\n"


def to_json(rows: list[DiffRow]) -> dict:
    return {"rows": [r.to_dict() for r in rows]}


def tree(stacks: Mapping[str, int], *, root: str = "all") -> dict:
    """Folded stacks -> the nested ``{name, value, children}`` a flame graph draws."""
    top: dict = {"name": root, "value": 0, "children": {}}
    for stack, count in stacks.items():
        top["value"] += count
        node = top
        for frame in stack.split(";"):
            child = node["children"].get(frame)
            if child is None:
                child = node["children"][frame] = {"name": frame, "value": 0, "children": {}}
            child["value"] += count
            node = child
    return _listify(top)


def diff_tree(before: Mapping[str, int], after: Mapping[str, int]) -> dict:
    """The *after* tree with a ``delta`` per node: its samples minus the *before* samples scaled
    to the same total, so a differential flame graph colours what grew (red) and shrank (blue).

    A stack that only the *before* profile has (code that disappeared, or stopped running) is
    drawn at its scaled before size (at least one sample) with all of it as a negative delta: a
    frame that is entirely blue, instead of no frame at all. The drawn total is then the after
    samples plus those of the vanished stacks."""
    b_total, a_total = sum(before.values()), sum(after.values())
    scale = a_total / b_total if b_total else 0.0
    merged: dict[str, tuple[int, float]] = {}
    for stack, count in after.items():
        merged[stack] = (count, 0.0)
    for stack, count in before.items():
        a, _ = merged.get(stack, (0, 0.0))
        merged[stack] = (a, count * scale)
    top: dict = {"name": "all", "value": 0, "delta": 0.0, "children": {}}
    for stack, (count, base) in merged.items():
        # value is what is drawn: a stack only in the before profile keeps its scaled size (at
        # least a sliver) so what vanished is visible, coloured by its negative delta.
        value = count if count else max(1, round(base))
        top["value"] += value
        top["delta"] += count - base
        node = top
        for frame in stack.split(";"):
            child = node["children"].get(frame)
            if child is None:
                child = node["children"][frame] = {"name": frame, "value": 0, "delta": 0.0, "children": {}}
            child["value"] += value
            child["delta"] += count - base
            node = child
    return _listify(top, rounding=True)


def _listify(node: dict, rounding: bool = False) -> dict:
    out = {"name": node["name"], "value": node["value"]}
    if "delta" in node:
        out["delta"] = round(node["delta"], 2) if rounding else node["delta"]
    children = [_listify(c, rounding) for c in node["children"].values() if c["value"] > 0]
    if children:
        out["children"] = sorted(children, key=lambda c: c["name"])
    return out


def dumps(data: dict) -> str:
    return json.dumps(data, separators=(",", ":"))


__all__ = ["DiffRow", "profile_diff", "shares", "load", "to_markdown", "to_json", "tree", "diff_tree"]
