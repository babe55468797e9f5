"""Emulation is a fact of the fingerprint; the Pi's facts are recorded or listed as absent.

Nothing here depends on the machine the tests run on: /proc contents, vcgencmd and the firmware
file are given to the functions or faked in a temporary folder."""

import json
from pathlib import Path

import pytest

from vkbench import envinfo
from vkbench.matrix.model import Cell
from vkbench.runner.validity import check, emulated_validity

X86_CPUINFO = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse sse2\n"
ARM_CPUINFO = "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd08\n"
QEMU_USER = {"kind": "qemu-user", "evidence": ["uname -m says aarch64, /proc/cpuinfo describes a x86_64 CPU"]}


def test_qemu_user_is_told_by_cpuinfo_or_kernel_arch():
    found = envinfo.detect_emulation(machine="aarch64", cpuinfo=X86_CPUINFO, kernel_arch="")
    assert found["kind"] == "qemu-user" and "AMD EPYC 7B13" in found["evidence"][0]
    # qemu may emulate /proc/cpuinfo too: the kernel's own arch still tells.
    found = envinfo.detect_emulation(machine="aarch64", cpuinfo=ARM_CPUINFO, kernel_arch="x86_64")
    assert found["kind"] == "qemu-user" and "/proc/sys/kernel/arch" in found["evidence"][0]


def test_native_machines_are_not_emulated():
    assert envinfo.detect_emulation(machine="aarch64", cpuinfo=ARM_CPUINFO, kernel_arch="aarch64") is None
    assert envinfo.detect_emulation(machine="x86_64", cpuinfo=X86_CPUINFO, kernel_arch="x86_64", virtualization="kvm") is None
    assert envinfo.detect_emulation(machine="arm64", cpuinfo="", kernel_arch="aarch64") is None


def test_full_system_qemu_without_kvm():
    found = envinfo.detect_emulation(machine="aarch64", cpuinfo=ARM_CPUINFO, kernel_arch="aarch64", virtualization="qemu")
    assert found["kind"] == "qemu" and "systemd-detect-virt" in found["evidence"][0]


NATIVE_PI = {"arch": "aarch64", "cpu_model": "Cortex-A72", "cores": 4, "memory_bytes": 4 * 2**30,
             "kernel": "6.6.31+rpt-rpi-v8", "cpufreq_governor": "ondemand", "thp": "madvise",
             "board_model": "Raspberry Pi Compute Module 4 Rev 1.1", "virtualization": None,
             "container_runtime": None, "image": None}


def test_native_fingerprint_ids_do_not_change():
    """Pinned: the ids these environments had before emulation, board and absent were recorded."""
    assert envinfo.fingerprint_id(NATIVE_PI) == "f032c67e351b5c65"
    extended = {**NATIVE_PI, "board": {"model": NATIVE_PI["board_model"], "before": {"throttled": "0x0"}},
                "absent": [{"fact": "arm_freq", "reason": "no vcgencmd"}]}
    assert envinfo.fingerprint_id(extended) == "f032c67e351b5c65"
    x86 = {"arch": "x86_64", "cpu_model": "Intel(R) Xeon(R) Processor", "cores": 2, "memory_bytes": 25232359424,
           "kernel": "6.18.44", "cpufreq_governor": None, "thp": "madvise", "board_model": None,
           "virtualization": "kvm", "container_runtime": "podman 4.3.1", "image": None}
    assert envinfo.fingerprint_id(x86) == "3ada915617feeaff"


def test_emulation_changes_the_fingerprint():
    assert envinfo.fingerprint_id({**NATIVE_PI, "emulation": QEMU_USER}) != envinfo.fingerprint_id(NATIVE_PI)


def test_fingerprint_records_emulation_board_and_absent_facts_with_reasons():
    env = envinfo.fingerprint()
    assert set(env["board"]) >= {"model", "before"}
    assert all(set(item) == {"fact", "reason"} and item["reason"] for item in env["absent"])
    # Every Pi fact is either read or listed as absent, never silently missing.
    known = set(env["board"]["before"]) | {item["fact"] for item in env["absent"]}
    assert {"throttled", "cpufreq_governor"} <= known and ("arm_freq_mhz" in known or "arm_freq" in known)
    assert ("emulation" in env) == (envinfo.detect_emulation(virtualization=env["virtualization"]) is not None)


@pytest.fixture
def fake_pi(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    vcgencmd = bin_dir / "vcgencmd"
    vcgencmd.write_text('#!/bin/sh\ncase "$1 $2" in\n'
                        '  "get_throttled ") echo throttled=0x50005;;\n'
                        '  "get_config arm_freq") echo arm_freq=2000;;\n'
                        '  "measure_clock arm") echo "frequency(48)=1500345728";;\n'
                        '  *) exit 1;;\nesac\n')
    vcgencmd.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    cpufreq = tmp_path / "cpufreq"
    cpufreq.mkdir()
    (cpufreq / "scaling_governor").write_text("ondemand\n")
    monkeypatch.setattr(envinfo, "CPUFREQ", str(cpufreq))
    return tmp_path


def test_board_state_on_a_pi(fake_pi):
    facts, absent = envinfo.board_state()
    assert facts == {"throttled": "0x50005", "arm_freq_mhz": 2000, "cpufreq_governor": "ondemand",
                     "arm_clock_hz": 1500345728}
    assert absent == []


def test_throttling_from_the_firmware_file_without_vcgencmd(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    firmware = tmp_path / "get_throttled"
    firmware.write_text("50005\n")
    monkeypatch.setattr(envinfo, "FIRMWARE_THROTTLED", str(firmware))
    monkeypatch.setattr(envinfo, "CPUFREQ", str(tmp_path / "no-cpufreq"))
    facts, absent = envinfo.board_state()
    assert facts == {"throttled": "0x50005"}
    assert {a["fact"] for a in absent} == {"arm_freq", "cpufreq_governor", "arm_clock_hz"}
    firmware.unlink()
    facts, absent = envinfo.board_state()
    assert "throttled" not in facts and any(a["fact"] == "throttled" and "vcgencmd" in a["reason"] for a in absent)


def _rep(rps=100.0):
    return {"index": 0, "elapsed_s": 5.0, "cpu": {"client_cores": 0.3},
            "records": [{"command": "SET", "rps": rps}]}


def test_emulated_flag_is_invalid_with_its_reason():
    cell = Cell(server="valkey:9.1.2", tests=["set"])
    validity = check(cell, repetitions=[_rep(), _rep(101), _rep(99)], keys_before_reads=None, shards=1,
                     server_cpus=4, throttled="0x0", emulation=QEMU_USER)
    assert validity["valid"] is False
    flag = next(f for f in validity["flags"] if f["code"] == "emulated")
    assert flag["severity"] == "invalid" and "qemu-user" in flag["message"] and flag["fix"]
    assert emulated_validity({"valid": True, "flags": []}, QEMU_USER)["valid"] is False


def test_io_threads_above_the_cores_left_keep_their_warning_under_emulation():
    cell = Cell(server="valkey:9.1.2", tests=["set"], io_threads=4)
    validity = check(cell, repetitions=[_rep()] * 3, keys_before_reads=None, shards=1, server_cpus=3,
                     throttled=None, emulation=QEMU_USER)
    assert {f["code"] for f in validity["flags"]} >= {"io-threads-oversubscribed", "emulated"}


def test_each_cell_records_its_board_before_and_after_and_throttling_during_it():
    from types import SimpleNamespace

    from vkbench.runner.execute import CellState, _throttled_during, cell_environment

    ctx = SimpleNamespace(environment={"throttled": "0x0", "board_model": "Raspberry Pi 4",
                                       "board": {"model": "Raspberry Pi 4", "before": {"throttled": "0x0"}}})
    state = CellState(Cell(server="valkey:9.1.2"), board_before={"throttled": "0x0"},
                      board_after={"throttled": "0x50000", "arm_clock_hz": 600000000})
    env = cell_environment(state, ctx)
    assert env["board"] == {"model": "Raspberry Pi 4", "before": {"throttled": "0x0"},
                            "after": {"throttled": "0x50000", "arm_clock_hz": 600000000}}
    assert ctx.environment["board"]["before"] == {"throttled": "0x0"} and "after" not in ctx.environment["board"]
    assert _throttled_during(state, ctx) == "0x50000"
    state.board_after = {"throttled": "0x0"}
    assert _throttled_during(state, ctx) == "0x0"


def test_io_threads_warning_names_the_flag_that_fixes_it():
    cell = Cell(server="valkey:9.1.2", tests=["set"], io_threads=4)
    validity = check(cell, repetitions=[_rep()] * 3, keys_before_reads=None, shards=1, server_cpus=3,
                     throttled=None)
    [flag] = [f for f in validity["flags"] if f["code"] == "io-threads-oversubscribed"]
    assert "--io-threads 3" in flag["fix"] and "cpu: {server: ...}" in flag["fix"]


CONFIG_TXT = """# For more options see http://rptl.io/configtxt
dtparam=audio=on
arm_freq_min=600
[pi3]
arm_freq=1400
[cm4]
otg_mode=1
[all]
over_voltage=6
arm_freq=2000   # overclocked
#arm_freq=2200
"""


def test_the_configured_arm_freq_comes_from_config_txt_without_vcgencmd(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert envinfo.config_txt_arm_freq(CONFIG_TXT) == "2000"
    assert envinfo.config_txt_arm_freq("[pi3]\narm_freq=1400\n") is None
    firmware = tmp_path / "firmware-config.txt"
    firmware.write_text(CONFIG_TXT)
    legacy = tmp_path / "config.txt"
    assert envinfo.configured_arm_freq((str(firmware), str(legacy))) == ("2000", str(firmware))
    firmware.write_text("dtparam=audio=on\n")
    value, reason = envinfo.configured_arm_freq((str(firmware), str(legacy)))
    assert value is None and "sets no arm_freq" in reason
    firmware.unlink()
    value, reason = envinfo.configured_arm_freq((str(firmware), str(legacy)))
    assert value is None and "no vcgencmd" in reason and str(legacy) in reason


def test_board_state_reads_arm_freq_from_config_txt(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    config = tmp_path / "config.txt"
    config.write_text(CONFIG_TXT)
    monkeypatch.setattr(envinfo, "PI_CONFIG_FILES", (str(config),))
    monkeypatch.setattr(envinfo, "CPUFREQ", str(tmp_path / "no-cpufreq"))
    monkeypatch.setattr(envinfo, "FIRMWARE_THROTTLED", str(tmp_path / "no-throttled"))
    facts, absent = envinfo.board_state()
    assert facts == {"arm_freq_mhz": 2000}
    assert {a["fact"] for a in absent} == {"throttled", "cpufreq_governor", "arm_clock_hz"}
