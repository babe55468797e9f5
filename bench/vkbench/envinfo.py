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


#: Where the Raspberry Pi firmware driver shows the throttling bits without vcgencmd.
FIRMWARE_THROTTLED = "/sys/devices/platform/soc/soc:firmware/get_throttled"
DEVICE_TREE_MODEL = "/proc/device-tree/model"
CPUFREQ = "/sys/devices/system/cpu/cpu0/cpufreq"


def _vcgencmd(*args: str) -> str | None:
    """``vcgencmd ARGS`` -> the value after ``=`` (``throttled=0x0`` -> ``0x0``); None when absent."""
    if not shutil.which("vcgencmd"):
        return None
    try:
        proc = subprocess.run(["vcgencmd", *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.strip()
    if proc.returncode != 0 or "=" not in out:
        return None
    return out.split("=", 1)[-1].strip() or None


def _throttled() -> tuple[str | None, str]:
    """Raspberry Pi only: ``0x0`` means never throttled (nor under-voltage) since boot. Returns
    (value, where it came from or why it is absent)."""
    value = _vcgencmd("get_throttled")
    if value is not None:
        return value, "vcgencmd get_throttled"
    raw = _read(FIRMWARE_THROTTLED)
    if raw:
        try:
            return hex(int(raw, 16)), FIRMWARE_THROTTLED
        except ValueError:
            pass
    return None, f"no vcgencmd on PATH and no {FIRMWARE_THROTTLED} (not a Raspberry Pi, or its firmware driver is not loaded)"


#: Where Raspberry Pi OS keeps the firmware's settings (bookworm: /boot/firmware; before: /boot).
PI_CONFIG_FILES = ("/boot/firmware/config.txt", "/boot/config.txt")
#: config.txt sections that apply to a CM4 (a Pi 4 class board); others are filters for other boards.
_CM4_SECTIONS = {"", "all", "pi4", "cm4"}


def config_txt_arm_freq(text: str) -> str | None:
    """The last ``arm_freq=`` that applies to a CM4 in a config.txt (comments and other boards'
    sections skipped; ``arm_freq_min`` is another setting), else None."""
    section, found = "", None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            continue
        key, sep, value = line.partition("=")
        if sep and key.strip() == "arm_freq" and section in _CM4_SECTIONS and value.strip():
            found = value.strip()
    return found


def configured_arm_freq(files: tuple[str, ...] | None = None) -> tuple[str | None, str]:
    """The configured ``arm_freq`` (MHz) and where it came from, or None and why it is absent:
    ``vcgencmd get_config arm_freq`` (what the firmware applied), else config.txt."""
    files = PI_CONFIG_FILES if files is None else files
    value = _vcgencmd("get_config", "arm_freq")
    if value is not None:
        return value, "vcgencmd get_config arm_freq"
    for name in files:
        text = _read(name)
        if text is None:
            continue
        found = config_txt_arm_freq(text)
        if found is not None:
            return found, name
        return None, f"no vcgencmd on PATH and {name} sets no arm_freq (the firmware's default clock)"
    return None, ("no vcgencmd on PATH and no " + " or ".join(files)
                  + " (the configured arm_freq is a Raspberry Pi firmware setting)")


def board_state() -> tuple[dict, list[dict]]:
    """The Pi facts that change a measurement, read now (before and after each cell): throttling,
    the configured ``arm_freq`` (overclocking), the governor and the current clock. Returns
    (facts, absent), ``absent`` naming each missing fact and why: never silently skipped."""
    facts: dict = {}
    absent: list[dict] = []
    throttled, origin = _throttled()
    if throttled is None:
        absent.append({"fact": "throttled", "reason": origin})
    else:
        facts["throttled"] = throttled
    arm_freq, arm_freq_origin = configured_arm_freq()
    if arm_freq is None:
        absent.append({"fact": "arm_freq", "reason": arm_freq_origin})
    else:
        facts["arm_freq_mhz"] = int(arm_freq) if arm_freq.isdigit() else arm_freq
    governor = _read(f"{CPUFREQ}/scaling_governor")
    if governor is None:
        absent.append({"fact": "cpufreq_governor", "reason": f"no {CPUFREQ}/scaling_governor (no cpufreq driver: a VM, a container or emulation)"})
    else:
        facts["cpufreq_governor"] = governor
    clock = _vcgencmd("measure_clock", "arm")
    if clock is not None and clock.isdigit():
        facts["arm_clock_hz"] = int(clock)
    else:
        cur = _read(f"{CPUFREQ}/scaling_cur_freq")
        if cur and cur.isdigit():
            facts["arm_clock_hz"] = int(cur) * 1000
        else:
            absent.append({"fact": "arm_clock_hz", "reason": f"neither vcgencmd measure_clock nor {CPUFREQ}/scaling_cur_freq"})
    return facts, absent


#: /proc/cpuinfo keys that only one architecture family writes.
_CPUINFO_ARCH = (("vendor_id", "x86_64"), ("CPU implementer", "aarch64"), ("isa", "riscv64"))


def _cpuinfo_arch(cpuinfo: str) -> str | None:
    keys = {line.split(":", 1)[0].strip() for line in cpuinfo.splitlines() if ":" in line}
    return next((arch for key, arch in _CPUINFO_ARCH if key in keys), None)


def detect_emulation(*, machine: str | None = None, cpuinfo: str | None = None, kernel_arch: str | None = None,
                     virtualization: str | None = None) -> dict | None:
    """Emulation that makes every number meaningless as a measurement, with the evidence:

    - ``qemu-user``: this process runs another architecture's code through a binfmt_misc handler.
      uname (what qemu-user reports: the emulated machine) disagrees with the kernel's own
      /proc/sys/kernel/arch (Linux 6.1+; qemu-user does not rewrite it) or with /proc/cpuinfo (the
      host's CPU, which qemu-user passes through unless it emulates that file too);
    - ``qemu`` (full-system emulation without KVM), as systemd-detect-virt names it (with KVM it
      says ``kvm``: virtualization, not emulation).

    None when nothing points to emulation. Cheap: two file reads, no process started."""
    machine = machine or platform.machine()
    cpuinfo = cpuinfo if cpuinfo is not None else (_read("/proc/cpuinfo") or "")
    kernel_arch = kernel_arch if kernel_arch is not None else (_read("/proc/sys/kernel/arch") or "")
    arch_of_cpu = _cpuinfo_arch(cpuinfo)
    normal = _normal_arch(machine)
    evidence = []
    if kernel_arch and _normal_arch(kernel_arch) != normal:
        evidence.append(f"uname -m says {normal}, the kernel (/proc/sys/kernel/arch) says {_normal_arch(kernel_arch)}")
    if arch_of_cpu and arch_of_cpu != normal:
        evidence.append(f"uname -m says {normal}, /proc/cpuinfo describes a {arch_of_cpu} CPU "
                        f"({_cpu_model_in(cpuinfo) or 'model unknown'})")
    if evidence:
        return {"kind": "qemu-user", "evidence": evidence}
    if virtualization == "qemu":
        return {"kind": "qemu", "evidence": ["systemd-detect-virt: qemu (full-system emulation, no KVM)"]}
    return None


def _normal_arch(name: str) -> str:
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name.strip().lower(), name.strip().lower())


def _cpu_model_in(cpuinfo: str) -> str | None:
    for line in cpuinfo.splitlines():
        if line.startswith("model name") and ":" in line:
            return line.split(":", 1)[1].strip()
    return None


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
        "board_model": _read(DEVICE_TREE_MODEL),
        "throttled": _throttled()[0],
        "container_runtime": engine.runtime if engine else None,
        "container_runtime_probe": (engine.problem or "ok") if engine else "not probed",
        "image": image or os.environ.get("ImageOS") or None,
        "virtualization": _virtualization(),
        "hostname_hash": hashlib.sha256(socket.gethostname().encode()).hexdigest()[:12],
    }
    emulation = detect_emulation(virtualization=env["virtualization"])
    if emulation is not None:
        env["emulation"] = emulation
    board, absent = board_state()
    if env["board_model"] is None:
        absent.insert(0, {"fact": "board_model", "reason": f"no {DEVICE_TREE_MODEL} (no device tree: not a Raspberry Pi or other board)"})
    env["board"] = {"model": env["board_model"], "before": board}
    env["absent"] = absent
    env["fingerprint_id"] = fingerprint_id(env)
    return env



def fingerprint_id(env: dict) -> str:
    stable = {k: env.get(k) for k in FINGERPRINT_FIELDS}
    # Only when present, so that every native machine keeps the id it always had.
    if env.get("emulation"):
        stable["emulation"] = env["emulation"].get("kind")
    stable.update(dict.fromkeys(_RETIRED_FIELDS))
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]
