"""Write a small history directory in the documented format (docs/history-format.md) directly.

The site is built from the *format*, so its tests write the format themselves instead of going
through `vkbench ingest`: two machine classes, three versions, io-threads 1/2/4, SET and GET,
a 3-node cluster on pi-cm4, an environment change (kernel update), a few invalid points, and a
detect.json with one regression change point (an open incident, bisected: its culprit) and one
annotated improvement.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

RUNS = 30
START = datetime(2026, 10, 1, 2, 0, tzinfo=timezone.utc)
RUN_URL = "https://github.com/valkey-io/vkbench/actions/runs/{}"
CLASSES = {"pi-cm4": "aarch64", "cloud-x86": "x86_64"}
VERSIONS = ("8.0.1", "9.1.2", "unstable")
IO_THREADS = (1, 2, 4)
COMMANDS = ("SET", "GET")

#: The injected regression: cloud-x86, unstable, SET, io-threads 2, -8% from run 20 on.
REGRESSION = {"machine_class": "cloud-x86", "version": "unstable", "command": "SET", "io_threads": 2, "topology": "standalone", "at": 20, "factor": 0.92}
#: The injected improvement: pi-cm4, unstable, GET, io-threads 2, +10% from run 12 on.
IMPROVEMENT = {"machine_class": "pi-cm4", "version": "unstable", "command": "GET", "io_threads": 2, "topology": "standalone", "at": 12, "factor": 1.10}
KERNEL_UPDATE_AT = 25  # pi-cm4 environment changes here (a new fingerprint segment)
#: Where each class's ``unstable`` builds come from (source builds record their repository;
#: releases name none and link to the engine's repository): a fork on GitHub, and a local
#: mirror without commit pages (plain text on the site).
SOURCE_REPOSITORIES = {"cloud-x86": "https://github.com/example-fork/valkey.git", "pi-cm4": "file:///srv/mirrors/valkey.git"}


def canonical(data) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def sid_of(dims: dict) -> str:
    return hashlib.sha256(canonical(dims).encode()).hexdigest()[:16]


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def commit_of(*parts) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


def dims_for(machine_class: str, version: str, io_threads: int, command: str, topology: str = "standalone") -> dict:
    return {
        "engine": "valkey", "version": version, "io_threads": io_threads, "topology": topology,
        "tool": "valkey-benchmark", "tests": ["set", "get"], "pipeline": 16, "clients": 50,
        "client_threads": None, "data_size": 3, "keyspace": 100000, "requests": 100000,
        "duration": None, "warmup": 0, "preload": True, "cpu": None, "read_from": "primary",
        "extra_server_args": [], "command": command, "machine_class": machine_class,
    }


def environments() -> dict[str, dict]:
    return {
        "fp-pi-old": {"fingerprint_id": "fp-pi-old", "arch": "aarch64", "cpu_model": "Cortex-A72", "cores": 4, "kernel": "6.6.31", "os": "Debian 12", "board_model": "Raspberry Pi Compute Module 4"},
        "fp-pi-new": {"fingerprint_id": "fp-pi-new", "arch": "aarch64", "cpu_model": "Cortex-A72", "cores": 4, "kernel": "6.6.51", "os": "Debian 12", "board_model": "Raspberry Pi Compute Module 4"},
        "fp-x86": {"fingerprint_id": "fp-x86", "arch": "x86_64", "cpu_model": "AMD EPYC 7R13", "cores": 4, "kernel": "6.1.0", "os": "Debian 12", "virtualization": "kvm"},
    }


def _base_rps(machine_class: str, version: str, io_threads: int, command: str, topology: str) -> float:
    base = 180_000 if machine_class == "pi-cm4" else 420_000
    base *= {"8.0.1": 0.9, "9.1.2": 1.0, "unstable": 1.03}[version]
    base *= {1: 1.0, 2: 1.7, 4: 2.3}[io_threads]
    base *= 1.12 if command == "GET" else 1.0
    if topology.startswith("cluster"):
        base *= 2.6
    return base


def _stat(median: float, cv: float, rng: random.Random) -> dict:
    samples = [median * (1 + rng.gauss(0, cv)) for _ in range(2)] + [median]
    return {"median": round(median, 3), "ci_low": round(min(samples), 3), "ci_high": round(max(samples), 3),
            "cv": cv, "n": 3, "samples": [round(s, 3) for s in samples]}


def _matches(effect: dict, dims: dict) -> bool:
    return all(dims[k] == effect[k] for k in ("machine_class", "version", "command", "io_threads", "topology"))


def series_configs() -> list[dict]:
    configs = []
    for machine_class in CLASSES:
        for version in VERSIONS:
            for io in IO_THREADS:
                for command in COMMANDS:
                    configs.append(dims_for(machine_class, version, io, command))
        for version in ("9.1.2", "unstable"):
            for command in COMMANDS:
                configs.append(dims_for("pi-cm4", version, 1, command, "cluster:3") if machine_class == "pi-cm4" else None)
    return [c for c in configs if c]


def write_history(root: Path, *, runs: int = RUNS, seed: int = 7, start: datetime = START) -> dict:
    """Write the history under ``root``, its first run at ``start``; returns facts the tests check against."""
    rng = random.Random(seed)
    root = Path(root)
    (root / "fingerprints").mkdir(parents=True, exist_ok=True)
    (root / "format.json").write_text(canonical({"history_version": 1}) + "\n")
    for fid, env in environments().items():
        (root / "fingerprints" / f"{fid}.json").write_text(json.dumps(env, indent=1))

    index_series: dict[str, dict] = {}
    facts: dict = {"sids": {}, "points": {}}
    for dims in series_configs():
        sid = sid_of(dims)
        cls = dims["machine_class"]
        lines_by_month: dict[str, list[str]] = {}
        points = []
        for k in range(runs):
            ts = start + timedelta(days=k, minutes=len(index_series))
            level = _base_rps(cls, dims["version"], dims["io_threads"], dims["command"], dims["topology"])
            for effect in (REGRESSION, IMPROVEMENT):
                if _matches(effect, dims) and k >= effect["at"]:
                    level *= effect["factor"]
            rps = level * (1 + rng.gauss(0, 0.01))
            p50 = 50 * 16 / rps * 1000 * 0.9  # Little's law-ish: clients x pipeline / rps, in ms
            invalid = (k % 11 == 5 and dims["io_threads"] == 4)
            fid = "fp-x86" if cls == "cloud-x86" else ("fp-pi-new" if k >= KERNEL_UPDATE_AT else "fp-pi-old")
            run_id = f"run-{k:03d}-{cls}"
            point = {
                "run_id": run_id, "cell_id": f"cell-{sid[:8]}", "timestamp": iso(ts),
                "version": dims["version"], "server_version": "9.2.0" if dims["version"] == "unstable" else dims["version"],
                "commit": commit_of("unstable", k) if dims["version"] == "unstable" else commit_of("release", dims["version"]),
                "build_id": "sha256:" + commit_of("build", dims["version"], k), "fingerprint_id": fid,
                "valid": not invalid, "flags": ["client-bound"] if invalid else [],
                "workflow_run_url": RUN_URL.format(9000 + k * 2 + (cls == "pi-cm4")),
                **({"repository": SOURCE_REPOSITORIES[cls]} if dims["version"] == "unstable" else {}),
                "metrics": {
                    "rps": _stat(rps, 0.01, rng), "avg": _stat(p50 * 1.05, 0.02, rng), "min": _stat(p50 * 0.3, 0.05, rng),
                    "p50": _stat(p50, 0.02, rng), "p95": _stat(p50 * 1.6, 0.03, rng), "p99": _stat(p50 * 2.2, 0.04, rng),
                    "p999": _stat(p50 * 4, 0.08, rng), "max": _stat(p50 * 9, 0.2, rng),
                },
            }
            points.append(point)
            lines_by_month.setdefault(point["timestamp"][:7], []).append(json.dumps(point))
        shard_dir = root / "series" / sid[:2] / sid
        shard_dir.mkdir(parents=True, exist_ok=True)
        for month, lines in lines_by_month.items():
            (shard_dir / f"{month}.jsonl").write_text("\n".join(lines) + "\n")
        last = points[-1]
        index_series[sid] = {
            "dims": dims, "arch": CLASSES[cls], "shards": sorted(lines_by_month), "points": len(points),
            "first": points[0]["timestamp"], "last": last["timestamp"],
            "last_point": {"rps": last["metrics"]["rps"]["median"], "p50": last["metrics"]["p50"]["median"], "valid": last["valid"], "run_id": last["run_id"]},
        }
        facts["sids"][sid] = dims
        facts["points"][sid] = points

    reg_sid = next(s for s, d in facts["sids"].items() if _matches(REGRESSION, d))
    imp_sid = next(s for s, d in facts["sids"].items() if _matches(IMPROVEMENT, d))
    facts["regression_sid"], facts["improvement_sid"] = reg_sid, imp_sid
    detect = {"generated": iso(start + timedelta(days=runs)), "parameters": {"method": "test"}, "change_points": [], "incidents": [], "segments": {}, "noise": {}}
    for sid, effect, incident_id, status, annotation in (
        (reg_sid, REGRESSION, "inc-set-io2-x86", "open", None),
        (imp_sid, IMPROVEMENT, "inc-get-io2-pi", "closed", "io-threads prefetch batching merged"),
    ):
        pts = facts["points"][sid]
        good, bad = pts[effect["at"] - 1], pts[effect["at"]]
        ref = lambda p: {"run_id": p["run_id"], "version": p["version"], "commit": p["commit"], "timestamp": p["timestamp"],  # noqa: E731
                         **({"repository": p["repository"]} if p.get("repository") else {})}
        magnitude = round(effect["factor"] - 1, 3)
        direction = "regression" if magnitude < 0 else "improvement"
        detect["change_points"].append({
            "series_id": sid, "metric": "rps", "index": effect["at"], "run_id": bad["run_id"], "timestamp": bad["timestamp"],
            "direction": direction, "magnitude": magnitude, "p_value": 0.001, "good": ref(good), "bad": ref(bad), "incident_id": incident_id,
        })
        d = facts["sids"][sid]
        detect["incidents"].append({
            "id": incident_id,
            "title": f"{d['command']}, pipeline 16, io-threads {d['io_threads']}, {d['machine_class']}: {magnitude:+.0%} between {good['commit'][:7]} and {bad['commit'][:7]}",
            "status": status, "direction": direction, "metric": "rps", "magnitude": magnitude,
            "series_ids": [sid], "machine_class": d["machine_class"], "good": ref(good), "bad": ref(bad), "annotation": annotation,
        })
    # The open regression was bisected (bisect.yml -> bisects.json -> detect.json): its culprit, in
    # the repository its builds came from (cloud-x86's fork), shows on the overview.
    facts["culprit"] = commit_of("culprit", REGRESSION["at"])
    detect["incidents"][0]["bisect"] = {
        "culprit": facts["culprit"], "culprit_subject": "server: batch the reply buffer writes", "effect": -0.081,
        "ci_low": -0.095, "ci_high": -0.067, "measure": "standalone io2 P16 c50 d3 / SET", "reproduced": True, "steps": 4,
        "range_size": 9, "repository": SOURCE_REPOSITORIES["cloud-x86"], "workflow_run_url": RUN_URL.format(9999),
    }
    for sid, d in facts["sids"].items():
        detect["noise"][sid] = {"rps": {"cv": 0.012}}
        if d["machine_class"] == "pi-cm4":
            detect["segments"][sid] = [{"start_index": 0, "fingerprint_id": "fp-pi-old"}, {"start_index": KERNEL_UPDATE_AT, "fingerprint_id": "fp-pi-new"}]
    (root / "detect.json").write_text(json.dumps(detect, indent=1))
    index = {"history_version": 1, "updated": iso(start + timedelta(days=runs - 1, hours=1)), "runs": runs * len(CLASSES), "series": index_series}
    (root / "index.json").write_text(json.dumps(index, indent=1))
    facts["detect"] = detect
    return facts


#: The counted history (write_counted_history): the instruction-count method changes on this night,
#: and the code count drops by 2.8 % with it (another method, not a faster server).
METHOD_SWITCH_AT = 12
OLD_METHOD, NEW_METHOD = "callgrind-abc", "callgrind-def"


def write_counted_history(root: Path, *, runs: int = 20) -> dict:
    """A history of one counted series (cloud-x86, unstable, SET) whose instruction-count method
    changes at METHOD_SWITCH_AT, recorded as detection records it: a segment with the new method
    id, no change point. Returns {"sid", "points", "detect"}."""
    root = Path(root)
    (root / "fingerprints").mkdir(parents=True, exist_ok=True)
    (root / "format.json").write_text(canonical({"history_version": 1}) + "\n")
    (root / "fingerprints" / "fp-x86.json").write_text(json.dumps(environments()["fp-x86"], indent=1))
    dims = dims_for("cloud-x86", "unstable", 1, "SET")
    sid = sid_of(dims)
    rng = random.Random(3)
    points = []
    for k in range(runs):
        ts = START + timedelta(days=k)
        new = k >= METHOD_SWITCH_AT
        code = 2010.0 * (0.972 if new else 1.0) * (1 + rng.gauss(0, 0.0001))
        count = lambda v: {"median": round(v, 2), "ci_low": round(v * 0.9999, 2), "ci_high": round(v * 1.0001, 2), "cv": 0.0001, "n": 3}  # noqa: E731
        points.append({
            "run_id": f"run-{k:03d}-counts", "cell_id": f"cell-{sid[:8]}", "timestamp": iso(ts), "version": "unstable",
            "server_version": "255.255.255", "commit": commit_of("unstable", k), "build_id": "sha256:" + commit_of("build", k),
            "fingerprint_id": "fp-x86", "valid": True, "flags": [], "workflow_run_url": RUN_URL.format(7000 + k),
            "metrics": {"rps": _stat(150_000, 0.01, rng), "p50": _stat(0.3, 0.02, rng),
                        "instructions_per_op": count(code), "instructions_per_op_total": count(code * 1.4),
                        "bytes_per_key": count(88.0)},
            "instructions_method": NEW_METHOD if new else OLD_METHOD,
        })
    shard_dir = root / "series" / sid[:2] / sid
    shard_dir.mkdir(parents=True, exist_ok=True)
    by_month: dict[str, list[str]] = {}
    for p in points:
        by_month.setdefault(p["timestamp"][:7], []).append(json.dumps(p))
    for month, lines in by_month.items():
        (shard_dir / f"{month}.jsonl").write_text("\n".join(lines) + "\n")
    last = points[-1]
    index = {"history_version": 1, "updated": last["timestamp"], "runs": runs, "series": {sid: {
        "dims": dims, "arch": "x86_64", "shards": sorted(by_month), "points": runs, "first": points[0]["timestamp"],
        "last": last["timestamp"], "last_point": {"rps": last["metrics"]["rps"]["median"], "p50": last["metrics"]["p50"]["median"],
                                                  "valid": True, "run_id": last["run_id"]}}}}
    (root / "index.json").write_text(json.dumps(index, indent=1))
    detect = {"generated": iso(START + timedelta(days=runs)), "parameters": {"method": "test"}, "change_points": [], "incidents": [],
              "segments": {sid: [{"start_index": 0, "fingerprint_id": "fp-x86", "instructions_method": OLD_METHOD},
                                 {"start_index": METHOD_SWITCH_AT, "fingerprint_id": "fp-x86", "instructions_method": NEW_METHOD}]},
              "noise": {sid: {"instructions_per_op": {"cv": 0.0001}}}}
    (root / "detect.json").write_text(json.dumps(detect, indent=1))
    return {"sid": sid, "points": points, "detect": detect}


if __name__ == "__main__":  # python tests/browser/history_factory.py DIR
    import sys

    info = write_history(Path(sys.argv[1]))
    print(f"wrote {len(info['sids'])} series to {sys.argv[1]}")
