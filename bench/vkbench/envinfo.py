"""The machine fingerprint stored in every result.

``fingerprint_id`` hashes only what changes performance (CPU, cores, memory size, kernel,
governor, THP, board, virtualization, image); a change of it inside a series starts a new
segment, so detection never blames the code for a new kernel. The container engine is recorded
(``container_runtime``, asked through its API, and ``container_runtime_probe`` saying whether that
worked) but is not part of the id: a slow or failed probe must never start a new segment.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path

from .engine_probe import probe_engine

FINGERPRINT_FIELDS = (
    "arch", "cpu_model", "cores", "memory_bytes", "kernel", "cpufreq_governor", "thp",
    "board_model", "virtualization", "image",
)
# Fields once hashed, now always hashed as null: ids of results recorded before stay what they were.
_RETIRED_FIELDS = ("container_runtime",)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace").strip("\x00\n ")
    except OSError:
        return None


def _cpu_model() -> str | None:
    text = _read("/proc/cpuinfo") or ""
    for key in ("model name", "Hardware", "Model", "cpu model"):
        for line in text.splitlines():
            if line.startswith(key) and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or None


def _memory_bytes() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _thp() -> str | None:
    text = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if text and "[" in text:
        return text.split("[", 1)[1].split("]", 1)[0]
    return text


def _throttled() -> str | None:
    """Raspberry Pi only: ``throttled=0x0`` means never throttled since boot."""
    if not shutil.which("vcgencmd"):
        return None
    try:
        out = subprocess.run(["vcgencmd", "get_throttled"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip().split("=", 1)[-1] or None


def _virtualization() -> str | None:
    if shutil.which("systemd-detect-virt"):
        try:
            out = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, timeout=5).stdout.strip()
            return out or None
        except (OSError, subprocess.TimeoutExpired):
            pass
    flags = _read("/proc/cpuinfo") or ""
    return "vm" if " hypervisor" in flags else None


def _os_name() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def fingerprint(*, probe_container_runtime: bool = False, image: str | None = None) -> dict:
    """Collect the environment. ``probe_container_runtime`` asks the engine's API (bounded by a few seconds)."""
    engine = probe_engine() if probe_container_runtime else None
    env = {
        "arch": platform.machine(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count() or 1,
        "memory_bytes": _memory_bytes(),
        "kernel": platform.release(),
        "os": _os_name(),
        "cpufreq_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "thp": _thp(),
        "board_model": _read("/proc/device-tree/model"),
        "throttled": _throttled(),
        "container_runtime": engine.runtime if engine else None,
        "container_runtime_probe": (engine.problem or "ok") if engine else "not probed",
        "image": image or os.environ.get("ImageOS") or None,
        "virtualization": _virtualization(),
        "hostname_hash": hashlib.sha256(socket.gethostname().encode()).hexdigest()[:12],
    }
    env["fingerprint_id"] = fingerprint_id(env)
    return env


def fingerprint_id(env: dict) -> str:
    stable = {k: env.get(k) for k in FINGERPRINT_FIELDS}
    stable.update(dict.fromkeys(_RETIRED_FIELDS))
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]
