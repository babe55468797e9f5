"""The job hooks and tuning scripts, run for real against fake vcgencmd, docker, /proc and /sys:
nothing here changes this machine (the tuning scripts only run in --check mode on the real one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from .conftest import SCRIPTS


def run(script: str, *args: str, path_prefix: Path | None = None, **env: str):
    full_env = dict(os.environ, **env)
    if path_prefix is not None:
        full_env["PATH"] = f"{path_prefix}:{full_env['PATH']}"
    return subprocess.run(
        [str(SCRIPTS / script), *args], capture_output=True, text=True, timeout=60, env=full_env
    )


def fake_command(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text("#!/usr/bin/env bash\n" + body)
    tool.chmod(0o755)


# --- Pi throttling ----------------------------------------------------------------------------


def fake_vcgencmd(tmp_path: Path, throttled: str, temp: str) -> Path:
    bin_dir = tmp_path / "bin"
    fake_command(
        bin_dir,
        "vcgencmd",
        f"""case "$1" in
  get_throttled) echo "throttled={throttled}" ;;
  measure_temp) echo "temp={temp}'C" ;;
  measure_clock) echo "frequency(48)=1500398464" ;;
esac
""",
    )
    return bin_dir


def test_pi_check_passes_a_cool_unthrottled_board(tmp_path):
    result = run("check-pi-throttling.sh", path_prefix=fake_vcgencmd(tmp_path, "0x0", "48.3"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "temp=48.3C" in result.stdout and "frequency(48)=1500398464" in result.stdout


def test_pi_check_fails_a_throttled_board(tmp_path):
    bin_dir = fake_vcgencmd(tmp_path, "0x50005", "61.0")
    result = run("check-pi-throttling.sh", "--cooldown-wait-s", "0", path_prefix=bin_dir)
    assert result.returncode == 1
    assert "::error title=Pi throttled::" in result.stdout
    assert "under-voltage" in result.stdout and "throttled" in result.stdout


def test_pi_check_fails_a_hot_board(tmp_path):
    bin_dir = fake_vcgencmd(tmp_path, "0x0", "79.9")
    result = run("check-pi-throttling.sh", "--max-temp-c", "75", "--cooldown-wait-s", "0", path_prefix=bin_dir)
    assert result.returncode == 1
    assert "Pi too hot" in result.stdout


def test_pi_check_warns_on_past_throttling_unless_told_to_fail(tmp_path):
    bin_dir = fake_vcgencmd(tmp_path, "0x80000", "50.0")  # soft temp limit earlier since boot
    warned = run("check-pi-throttling.sh", path_prefix=bin_dir)
    assert warned.returncode == 0 and "::warning" in warned.stdout
    failed = run("check-pi-throttling.sh", "--fail-on-past-throttling", path_prefix=bin_dir)
    assert failed.returncode == 1 and "soft temperature limit" in failed.stdout


def test_pi_check_fails_without_vcgencmd(tmp_path):
    # A PATH holding only env and bash: vcgencmd cannot be found, even on a real Pi.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("env", "bash"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    result = run("check-pi-throttling.sh", PATH=str(bin_dir))
    assert result.returncode == 1 and "vcgencmd not found" in result.stderr


# --- hook dispatcher --------------------------------------------------------------------------


def test_hooks_run_in_name_order_and_the_first_failure_fails_the_job(tmp_path):
    hooks = tmp_path / "hooks" / "job-started.d"
    hooks.mkdir(parents=True)
    log = tmp_path / "log"
    for name, code in (("10-first", 0), ("20-second", 1), ("30-never", 0)):
        (hooks / name).write_text(f"#!/usr/bin/env bash\necho {name} >> {log}\nexit {code}\n")
        (hooks / name).chmod(0o755)
    (hooks / "05-not-executable").write_text(f"#!/usr/bin/env bash\necho nope >> {log}\n")
    result = run("job-started-hook.sh", VKBENCH_HOOKS_DIR=str(tmp_path / "hooks"))
    assert result.returncode == 1
    assert log.read_text().split() == ["10-first", "20-second"]
    assert "::error" in result.stdout and "20-second" in result.stdout


def test_no_hooks_is_fine(tmp_path):
    result = run("job-completed-hook.sh", VKBENCH_HOOKS_DIR=str(tmp_path))
    assert result.returncode == 0


# --- quiet check and cleanup ------------------------------------------------------------------


def fake_proc(tmp_path: Path, load: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "loadavg").write_text(f"{load} 0.30 0.20 1/123 4567\n")
    return proc


def fake_docker(tmp_path: Path, containers: str = "", volumes: str = "") -> tuple[Path, Path]:
    bin_dir = tmp_path / "bin"
    calls = tmp_path / "docker-calls"
    fake_command(
        bin_dir,
        "docker",
        f"""echo "$*" >> {calls}
case "$1 $2" in
  "info "*) exit 0 ;;
  "ps --quiet") printf '%s' "{containers}" ;;
  "ps --all") printf '%s' "{containers}" ;;
  "ps --format") echo "bench-valkey (valkey/valkey:8.1)" ;;
  "volume ls") printf '%s' "{volumes}" ;;
esac
""",
    )
    return bin_dir, calls


# Names no other process on this machine has, so the checks only ever see the test's own.
ABSENT = ["--process", "vkbtest-absent"]


def test_quiet_machine_passes(tmp_path):
    bin_dir, _ = fake_docker(tmp_path)
    result = run(
        "check-machine-quiet.sh", "--wait-s", "0", *ABSENT,
        path_prefix=bin_dir, VKBENCH_PROC_ROOT=str(fake_proc(tmp_path, "0.12")),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_busy_machine_fails_after_waiting(tmp_path):
    bin_dir, _ = fake_docker(tmp_path, containers="abc123\n")
    result = run(
        "check-machine-quiet.sh", "--max-load", "0.5", "--wait-s", "0", *ABSENT,
        path_prefix=bin_dir, VKBENCH_PROC_ROOT=str(fake_proc(tmp_path, "2.75")),
    )
    assert result.returncode == 1
    assert "2.75 > 0.5" in result.stdout
    assert "bench-valkey (valkey/valkey:8.1)" in result.stdout


def test_quiet_check_mode_reports_but_passes(tmp_path):
    bin_dir, _ = fake_docker(tmp_path)
    result = run(
        "check-machine-quiet.sh", "--check", *ABSENT,
        path_prefix=bin_dir, VKBENCH_PROC_ROOT=str(fake_proc(tmp_path, "9.0")),
    )
    assert result.returncode == 0 and "not quiet" in result.stdout


@pytest.fixture
def leftover_process(tmp_path):
    """A sleep renamed to a unique benchmark-like name, owned by this test."""
    exe = tmp_path / "vkbtest-sleeper"
    shutil.copy(shutil.which("sleep"), exe)
    proc = subprocess.Popen([str(exe), "60"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_cleanup_check_mode_only_says_what_it_would_do(tmp_path, leftover_process):
    bin_dir, calls = fake_docker(tmp_path, containers="abc123\n", volumes="vol1\n")
    result = run("cleanup-after-job.sh", "--check", "--process", "vkbtest-sleeper", path_prefix=bin_dir)
    assert result.returncode == 0, result.stderr
    assert "would run: docker rm --force --volumes abc123" in result.stdout
    assert "would run: docker volume rm --force vol1" in result.stdout
    assert f"would run: kill -TERM {leftover_process.pid}" in result.stdout
    assert leftover_process.poll() is None, "--check must not kill"
    assert not any(line.startswith(("rm", "volume rm", "image prune")) for line in calls.read_text().splitlines())


def test_cleanup_removes_containers_volumes_and_leftover_processes(tmp_path, leftover_process):
    bin_dir, calls = fake_docker(tmp_path, containers="abc123\n", volumes="vol1\n")
    # Reap it as soon as it dies: an unreaped child stays visible to pgrep as a zombie, which
    # on a runner (where init reaps) would not happen.
    threading.Thread(target=leftover_process.wait, daemon=True).start()
    result = run("cleanup-after-job.sh", "--process", "vkbtest-sleeper", "--grace-s", "5", path_prefix=bin_dir)
    assert result.returncode == 0, result.stderr
    made = calls.read_text().splitlines()
    for expected in ("rm --force --volumes abc123", "volume rm --force vol1", "network prune --force", "image prune --force"):
        assert expected in made
    deadline = time.monotonic() + 5
    while leftover_process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftover_process.poll() is not None, "the leftover process is still running"


def test_cleanup_fails_when_docker_does_not_answer(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_command(bin_dir, "docker", "exit 1\n")
    result = run("cleanup-after-job.sh", *ABSENT, path_prefix=bin_dir)
    assert result.returncode == 1 and "does not answer" in result.stderr


# --- tuning scripts on a fake /sys and /proc --------------------------------------------------


def make_sysfs(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for n in (0, 1):
        policy = root / f"sys/devices/system/cpu/cpufreq/policy{n}"
        policy.mkdir(parents=True)
        (policy / "scaling_governor").write_text("ondemand\n")
        (policy / "scaling_available_governors").write_text("conservative ondemand userspace powersave performance schedutil\n")
    thp = root / "sys/kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("[always] madvise never\n")
    (thp / "defrag").write_text("always defer defer+madvise [madvise] never\n")
    for irq, cpus in (("24", "0-3"), ("25", "0"), ("26", "2")):
        d = root / "proc/irq" / irq
        d.mkdir(parents=True)
        (d / "smp_affinity_list").write_text(cpus + "\n")
    # An IRQ the kernel will not move: writing to a directory fails like the kernel's EIO.
    (root / "proc/irq/27/smp_affinity_list").mkdir(parents=True)
    (root / "proc/irq/default_smp_affinity").write_text("f\n")
    (root / "proc/swaps").write_text("Filename\tType\tSize\tUsed\tPriority\n/var/swap file 102396 0 -2\n")
    return root


def test_governor_check_changes_nothing_then_set_changes_it(tmp_path):
    root = make_sysfs(tmp_path)
    gov = root / "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"
    checked = run("set-cpufreq-governor.sh", "--check", "--sysfs-root", str(root))
    assert checked.returncode == 0 and "would set policy0 from ondemand to performance" in checked.stdout
    assert gov.read_text() == "ondemand\n"
    assert run("set-cpufreq-governor.sh", "--sysfs-root", str(root)).returncode == 0
    assert gov.read_text() == "performance\n"
    assert "already performance" in run("set-cpufreq-governor.sh", "--sysfs-root", str(root)).stdout


def test_governor_the_kernel_lacks_is_an_error(tmp_path):
    root = make_sysfs(tmp_path)
    result = run("set-cpufreq-governor.sh", "--governor", "turbo", "--sysfs-root", str(root))
    assert result.returncode == 1


def test_thp_modes(tmp_path):
    root = make_sysfs(tmp_path)
    thp = root / "sys/kernel/mm/transparent_hugepage"
    checked = run("set-thp.sh", "--mode", "never", "--check", "--sysfs-root", str(root))
    assert "would set enabled from always to never" in checked.stdout
    assert (thp / "enabled").read_text().startswith("[always]")
    assert run("set-thp.sh", "--mode", "madvise", "--sysfs-root", str(root)).returncode == 0
    assert (thp / "enabled").read_text() == "madvise\n"
    assert run("set-thp.sh", "--mode", "always", "--sysfs-root", str(root)).returncode == 2


def test_irq_affinity_moves_what_it_can_and_counts_the_rest(tmp_path):
    root = make_sysfs(tmp_path)
    irq = root / "proc/irq"
    checked = run("set-irq-affinity.sh", "--cpus", "0", "--check", "--proc-root", str(root))
    assert "would move IRQ 24 from 0-3 to 0" in checked.stdout
    assert (irq / "24/smp_affinity_list").read_text() == "0-3\n"
    result = run("set-irq-affinity.sh", "--cpus", "0", "--proc-root", str(root))
    assert result.returncode == 0, result.stderr
    assert (irq / "24/smp_affinity_list").read_text() == "0\n"
    assert (irq / "26/smp_affinity_list").read_text() == "0\n"
    assert "moved 2, already on 0: 1, not movable: 1" in result.stdout
    assert (irq / "default_smp_affinity").read_text() == "1\n"


@pytest.mark.parametrize(("cpus", "mask"), [("0", "1"), ("0-1", "3"), ("1,3", "a"), ("0,33", "2,00000001")])
def test_irq_default_affinity_mask(tmp_path, cpus, mask):
    root = make_sysfs(tmp_path)
    run("set-irq-affinity.sh", "--cpus", cpus, "--proc-root", str(root))
    assert (root / "proc/irq/default_smp_affinity").read_text() == mask + "\n"


def test_swap_check_reports_active_swap(tmp_path):
    root = make_sysfs(tmp_path)
    result = run("disable-swap.sh", "--check", "--proc-root", str(root))
    assert result.returncode == 0 and "would turn off: /var/swap" in result.stdout


# --- and on this machine, read-only -----------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        ["set-cpufreq-governor.sh", "--check"],
        ["set-thp.sh", "--mode", "never", "--check"],
        ["set-irq-affinity.sh", "--cpus", "0", "--check"],
        ["disable-swap.sh", "--check"],
    ],
    ids=lambda s: s[0],
)
def test_tuning_scripts_check_mode_runs_here_without_changing_anything(script):
    watched = [Path("/sys/kernel/mm/transparent_hugepage/enabled"), Path("/proc/swaps"), Path("/proc/irq/default_smp_affinity")]
    before = {p: p.read_text() for p in watched if p.exists()}
    result = run(*script)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {p: p.read_text() for p in before} == before
