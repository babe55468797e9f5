"""runners/site.yml applied for real: a Debian bookworm container (debootstrap minbase, made by
tools/setup/runner-image.sh) provisioned through Ansible's podman connection, twice.

Every role runs (podman engine, runner user and directories, bench tuning, cleanup hooks, the
class labels from runners/classes.yaml); the second run changes nothing; then the files, users,
sysctls, hooks and labels the roles promise are checked inside the container. What a container
cannot do (systemd units, tuning the shared kernel, registering with GitHub, downloading the
runner) the roles skip themselves, and exactly those tasks are skipped: docs/runners.md,
"Applied to a container". The container starts with what a real runner may have: a swap line in
/etc/fstab and, as the Pi tasks run too, a config.txt overclocked by hand and by an earlier run.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import secrets
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.compose

REPO = Path(__file__).resolve().parents[2]
RUNNERS = REPO / "runners"
RUNNER_VERSION = yaml.safe_load((RUNNERS / "roles/actions_runner/defaults/main.yml").read_text())["actions_runner_version"]
PLAYBOOK_TIMEOUT_S = 900      # a loaded 2-core machine; the first run takes about 1-2 minutes idle
TOOLS = "/opt/vkbench-runner"
BENCH_TUNING_DEFAULTS = yaml.safe_load((RUNNERS / "roles/bench_tuning/defaults/main.yml").read_text())
DOCS = (REPO / "docs/runners.md").read_text()

# A swap file, a data disk mounted at a directory called swap, and a swap line already off.
FSTAB = """# <file system> <mount point> <type> <options> <dump> <pass>
UUID=0b3c6a0e-8f0e-4a55-9d57-6f0d3e1b2c4d / ext4 errors=remount-ro 0 1
/dev/sdb1 /srv/swap ext4 defaults 0 2
/swapfile none swap sw 0 0
#/dev/sda3 none swap sw 0 0
"""
# Raspberry Pi OS's own lines, an overclock set by hand (the valkey.io post's values) and the
# block an earlier run with bench_tuning_pi_overclock: true wrote.
OVERCLOCK_MARK = "vkbench bench_tuning overclock (docs/runners.md)"
CONFIG_TXT = f"""# For more options and information see http://rptl.io/configtxt
dtparam=audio=on
camera_auto_detect=1
[pi4]
arm_boost=1
[all]
over_voltage=6
arm_freq=2000
# BEGIN {OVERCLOCK_MARK}
[all]
over_voltage=8
arm_freq=2200
# END {OVERCLOCK_MARK}
"""
CONFIG_TXT_PATH = BENCH_TUNING_DEFAULTS["bench_tuning_pi_config_txt"]

# Every task the first run skips in this container, and the variable or fact that decides it.
# A container has no systemd and is no Pi with the overclock on; here Docker's repository and
# GitHub are out of reach. The deciding names are the ones docs/runners.md lists.
SKIPPED_IN_A_CONTAINER = {
    **{f"docker : {task['name']}": "docker_engine: podman"
       for task in yaml.safe_load((RUNNERS / "roles/docker/tasks/docker.yml").read_text())},
    "docker : Enable and start podman's API socket": "docker_systemd",
    "docker : Restart the podman socket": "docker_systemd",
    "bench_tuning : Gather the services present": "bench_tuning_systemd",
    "bench_tuning : Mask swap.target": "bench_tuning_systemd",
    "bench_tuning : Enable and start the tuning unit": "bench_tuning_systemd",
    "bench_tuning : Apply the benchmark tuning": "bench_tuning_systemd",
    "bench_tuning : Apply the benchmark sysctls": "bench_tuning_systemd",
    "bench_tuning : Stop and disable dphys-swapfile": "ansible_facts.services",
    "bench_tuning : Stop and mask irqbalance": "ansible_facts.services",
    "actions_runner : Check whether the runner is running a job": "actions_runner_systemd",
    "actions_runner : Reload systemd units": "actions_runner_systemd",
    "actions_runner : Restart the idle runner": "actions_runner_systemd",
    "actions_runner : Enable the runner": "actions_runner_systemd",
    "actions_runner : Start the runner if it is not running": "actions_runner_systemd",
    "actions_runner : Enable and start the watchdog timer": "actions_runner_systemd",
    "actions_runner : Download the runner release, verified against the pinned sha256": "actions_runner_archive_path",
    "actions_runner : Store the registration credential": "actions_runner_github_token",
}
# Skipped on a stock runner as well: the overclock is off unless opted in.
SKIPPED_WITH_THE_OVERCLOCK_OFF = {
    "bench_tuning : Warn loudly that the overclock is ON",
    "bench_tuning : Refuse overclock values beyond the published 2.2 GHz setup",
}


def _podman(*args: str, check: bool = True, timeout: float = 120, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=timeout, input=stdin)


def _fake_runner_release(directory: Path) -> tuple[Path, str]:
    """A stand-in for actions-runner-linux-<arch>-<version>.tar.gz (GitHub is not reachable)."""
    arch = {"x86_64": "x64", "aarch64": "arm64"}[os.uname().machine]
    path = directory / f"actions-runner-linux-{arch}-{RUNNER_VERSION}.tar.gz"
    files = {
        "run.sh": "#!/bin/sh\necho 'stand-in runner: never registers'\nexit 1\n",
        "config.sh": "#!/bin/sh\nexit 1\n",
        "bin/installdependencies.sh": "#!/bin/sh\necho 'stand-in: no dependencies'\n",
    }
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size, info.mode = len(text), 0o755
            tar.addfile(info, io.BytesIO(text.encode()))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _runner_image() -> str:
    state = Path(os.environ.get("VKBENCH_CONTAINERS_STATE", REPO / ".cache/containers"))
    marker = state / "runner-image"
    if not marker.is_file() or _podman("image", "exists", marker.read_text().strip(), check=False).returncode:
        pytest.fail("the runner test image is missing: run tools/setup/runner-image.sh (tools/setup.sh --test does)")
    return marker.read_text().strip()


def _ansible_env(tmp: Path) -> dict[str, str]:
    collections = REPO / ".cache/ansible/collections"
    if not (collections / "ansible_collections/containers/podman").is_dir():
        pytest.fail("containers.podman is missing: run tools/setup/ansible-collections.sh (tools/setup.sh --test does)")
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collections),
        "ANSIBLE_CONNECTION_PLUGINS": str(REPO / "tests/integration/ansible_plugins/connection"),
        "ANSIBLE_PIPELINING": "True",          # one podman exec per task (see podman_pipelined.py)
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local"),
        # An absolute remote temp dir: no `echo ~` round trip before every file transfer.
        "ANSIBLE_REMOTE_TMP": "/tmp/.ansible-tmp",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    })
    env.pop("ANSIBLE_CONFIG", None)
    return env


def _task_outcomes(output: str) -> dict[str, set[str]]:
    """{"role : task name": {"ok", "changed", "skipping", ...}} from the default callback's log."""
    outcomes: dict[str, set[str]] = {}
    current = None
    for line in output.splitlines():
        header = re.match(r"^(?:TASK|RUNNING HANDLER) \[(.+?)\] \*+$", line)
        if header:
            current = header.group(1)
            outcomes.setdefault(current, set())
        elif current and (result := re.match(r"^(ok|changed|skipping|failed|fatal): \[", line)):
            outcomes[current].add(result.group(1))
    return outcomes


def _cpu_list(text: str) -> set[int]:
    """ "0-2,5" -> {0, 1, 2, 5} """
    cpus: set[int] = set()
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def _host_tuning() -> dict:
    """What the tuning would change on this machine; the container shares its kernel, so the
    roles must leave all of it as it was."""
    thp = Path("/sys/kernel/mm/transparent_hugepage")
    return {
        "swaps": Path("/proc/swaps").read_text(),
        "thp": {k: (thp / k).read_text() for k in ("enabled", "defrag") if (thp / k).exists()},
        "governors": {p.name: (p / "scaling_governor").read_text()
                      for p in Path("/sys/devices/system/cpu/cpufreq").glob("policy*")},
        "irqs": {p.parent.name: p.read_text() for p in Path("/proc/irq").glob("[0-9]*/smp_affinity_list")},
        "sysctls": {k: Path("/proc/sys", k.replace(".", "/")).read_text()
                    for k in BENCH_TUNING_DEFAULTS["bench_tuning_sysctls"]},
    }


def _expected_checks(governor: str, thp_mode: str, irq_cpus: str) -> dict[str, tuple[int, list[str]]]:
    """Each tuning script's --check outcome (exit status, output lines), worked out here from the
    kernel the container shares, as the scripts document it."""
    expected = {}
    policies = sorted(Path("/sys/devices/system/cpu/cpufreq").glob("policy*"))
    if not policies:
        expected["cpufreq"] = (0, ["cpufreq: no cpufreq policies under /sys (usual on cloud VMs): nothing to set"])
    else:
        lines, status = [], 0
        for policy in policies:
            current = (policy / "scaling_governor").read_text().strip()
            available = (policy / "scaling_available_governors").read_text().strip()
            if current == governor:
                lines.append(f"cpufreq: {policy.name} already {governor}")
            elif governor not in available.split():
                lines.append(f"cpufreq: {policy.name} offers '{available}', not {governor}")
                status = 1
                break
            else:
                lines.append(f"cpufreq: would set {policy.name} from {current} to {governor}")
        expected["cpufreq"] = (status, lines)
    thp = Path("/sys/kernel/mm/transparent_hugepage")
    if not thp.is_dir():
        expected["thp"] = (0, [f"thp: {thp} missing (kernel without THP): nothing to set"])
    else:
        lines = []
        for knob in ("enabled", "defrag"):
            current = re.search(r"\[(\w+)\]", (thp / knob).read_text()).group(1)
            lines.append(f"thp: {knob} already {thp_mode}" if current == thp_mode
                         else f"thp: would set {knob} from {current} to {thp_mode}")
        expected["thp"] = (0, lines)
    active = [line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:] if line.strip()]
    expected["swap"] = (0, [f"swap: would turn off: {' '.join(active)} " if active else "swap: already off"])
    wanted = _cpu_list(irq_cpus)
    moving = [f"irq: would move IRQ {p.parent.name} from {p.read_text().strip()} to {irq_cpus}"
              for p in Path("/proc/irq").glob("[0-9]*/smp_affinity_list") if _cpu_list(p.read_text()) != wanted]
    already = len(list(Path("/proc/irq").glob("[0-9]*/smp_affinity_list"))) - len(moving)
    mask = format(sum(1 << cpu for cpu in wanted), "x")
    expected["irq"] = (0, [*moving, f"irq: would set default_smp_affinity to {mask}",
                           f"irq: would move {len(moving)}, already on {irq_cpus}: {already}, not movable: 0"])
    return expected


class Machine:
    """The container and how the playbook reaches it."""

    def __init__(self, name: str, tmp: Path, archive: Path, sha256: str):
        self.name, self.tmp = name, tmp
        self.inventory = tmp / "inventory.yml"
        self.host_vars = {
            "ansible_connection": "podman_pipelined",
            "ansible_host": name,
            # Root inside the container already: no sudo in a minimal Debian.
            "ansible_become": False,
            "ansible_python_interpreter": "/usr/bin/python3",
            "actions_runner_repository": "example-org/vkbench",
            "actions_runner_github_token": "",
            "actions_runner_archive_path": str(archive),
            "actions_runner_sha256": {"x64": sha256, "arm64": sha256},
            "docker_engine": "podman",             # Docker's apt repository is not reachable here
            "bench_tuning_pi": True,               # the Pi hook and overclock tasks run too
        }
        self.env = _ansible_env(tmp)
        self.runs: list[dict] = []
        self.host_tuning_before: dict = {}
        self.debs_before: list[str] = []

    def write_inventory(self, **overrides) -> Path:
        group = "cloud_x86" if os.uname().machine == "x86_64" else "cloud_arm64"
        hv = {**self.host_vars, **overrides}
        self.inventory.write_text(yaml.safe_dump({"all": {"children": {group: {"hosts": {self.name: hv}}}}}))
        return self.inventory

    def play(self, start_at: str | None = None, **overrides) -> dict:
        inventory = self.write_inventory(**overrides)
        began = time.monotonic()
        done = subprocess.run(
            ["ansible-playbook", "-i", str(inventory), str(RUNNERS / "site.yml"),
             *(["--start-at-task", start_at] if start_at else [])],
            capture_output=True, text=True, env=self.env, timeout=PLAYBOOK_TIMEOUT_S, cwd=self.tmp,
        )
        elapsed = time.monotonic() - began
        (self.tmp / f"play-{len(self.runs) + 1}.log").write_text(done.stdout + done.stderr)
        recap = re.search(rf"^{re.escape(self.name)}\s*:\s*(.*)$", done.stdout, re.M)
        counts = dict(re.findall(r"(\w+)=(\d+)", recap.group(1))) if recap else {}
        run = {"rc": done.returncode, "seconds": round(elapsed, 1), "output": done.stdout + done.stderr,
               **{k: int(v) for k, v in counts.items()}}
        self.runs.append(run)
        return run

    def sh(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        return _podman("exec", self.name, "/bin/sh", "-c", script, check=check)

    def write(self, path: str, text: str) -> None:
        _podman("exec", "-i", self.name, "/bin/sh", "-c", f'mkdir -p "$(dirname {path})" && cat >{path}', stdin=text)

    def debs(self) -> list[str]:
        return sorted(self.sh("ls /var/cache/apt/archives").stdout.split())

    def prepare(self) -> None:
        """What a real runner may bring along (see FSTAB, CONFIG_TXT), and apt lists that count as
        fresh: the image's are as old as the image, and the roles' apt tasks refresh lists older
        than an hour (cache_valid_time), which here would fetch from the mirror what the image
        already holds, or newer versions of it."""
        self.write("/etc/fstab", FSTAB)
        self.write(CONFIG_TXT_PATH, CONFIG_TXT)
        self.sh("mkdir -p /var/lib/apt/periodic && touch /var/lib/apt/periodic/update-success-stamp")
        self.debs_before = self.debs()


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    image = _runner_image()
    tmp = tmp_path_factory.mktemp("provision")
    archive, sha256 = _fake_runner_release(tmp)
    name = f"vkbench-provision-{secrets.token_hex(3)}"
    _podman("run", "-d", "--name", name, "--hostname", "bench-x86-test", image)
    try:
        m = Machine(name, tmp, archive, sha256)
        m.host_tuning_before = _host_tuning()
        m.prepare()
        first = m.play()
        assert first["rc"] == 0, first["output"][-4000:]
        second = m.play()
        assert second["rc"] == 0, second["output"][-4000:]
        print(f"\nplaybook: first run {first['seconds']} s, changed={first.get('changed')}; "
              f"second run {second['seconds']} s, changed={second.get('changed')}")
        yield m
    finally:
        _podman("rm", "-f", "-t", "0", name, check=False)


def test_every_role_runs_and_a_second_run_changes_nothing(machine):
    first, second = machine.runs[:2]
    assert first["failed"] == 0 and first["unreachable"] == 0
    assert first["changed"] > 20, "the first run on a fresh machine must change it"
    for role in ("docker", "bench_tuning", "cleanup", "actions_runner"):
        assert re.search(rf"^TASK \[{role} : ", first["output"], re.M), f"role {role} did not run"
    assert second["changed"] == 0, re.findall(r"^changed: .*$", second["output"], re.M)
    assert second["failed"] == 0


def test_the_runner_user_is_unprivileged_and_in_the_engine_and_video_groups(machine):
    groups = machine.sh("id -nG vkbench-runner").stdout.split()
    assert {"vkbench-runner", "docker", "video"} <= set(groups)
    assert "sudo" not in groups
    entry = machine.sh("getent passwd vkbench-runner").stdout.strip().split(":")
    assert entry[5] == "/home/vkbench-runner" and entry[6] == "/bin/bash"
    assert machine.sh("getent shadow vkbench-runner").stdout.split(":")[1] == "!"


def test_scripts_and_hooks_are_root_owned_and_not_writable_by_the_runner(machine):
    expected = [f"{TOOLS}/bin/{s}" for s in (
        "register-runner.sh", "run-job-hooks.sh", "job-started-hook.sh", "job-completed-hook.sh",
        "cleanup-after-job.sh", "check-machine-quiet.sh", "set-cpufreq-governor.sh", "set-thp.sh",
        "set-irq-affinity.sh", "disable-swap.sh", "check-pi-throttling.sh")]
    hooks = [f"{TOOLS}/hooks/job-started.d/10-machine-quiet", f"{TOOLS}/hooks/job-started.d/20-pi-throttling",
             f"{TOOLS}/hooks/job-completed.d/50-cleanup"]
    stats = machine.sh("stat -c '%n %U %a' " + " ".join(expected + hooks)).stdout.splitlines()
    assert sorted(stats) == sorted(f"{p} root 755" for p in expected + hooks)
    assert machine.sh(f"su -s /bin/sh vkbench-runner -c 'test -w {TOOLS}/bin/set-thp.sh'", check=False).returncode != 0
    quiet = machine.sh(f"cat {TOOLS}/hooks/job-started.d/10-machine-quiet").stdout
    assert "check-machine-quiet.sh --max-load 0.5 --wait-s 300" in quiet and "--process valkey-server" in quiet
    cleanup = machine.sh(f"cat {TOOLS}/hooks/job-completed.d/50-cleanup").stdout
    assert "cleanup-after-job.sh --grace-s 10" in cleanup


def test_the_runner_unit_carries_the_declared_class_labels(machine):
    classes = yaml.safe_load((RUNNERS / "classes.yaml").read_text())
    unit = machine.sh("cat /etc/systemd/system/vkbench-runner.service").stdout
    labels = re.search(r"--labels (\S+)", unit).group(1).split(",")
    assert labels[0] == "self-hosted"
    assert labels[1] in classes["classes"] and labels[1].startswith("cloud-")
    assert labels[2:] == ["bench-client"] and set(labels[2:]) <= set(classes["roles"])
    assert "ExecStartPre=+/opt/vkbench-runner/bin/register-runner.sh --mode jit --repo example-org/vkbench" in unit
    for unit_file in ("vkbench-runner-watchdog.service", "vkbench-runner-watchdog.timer",
                      "vkbench-bench-tuning.service", "podman.socket.d/vkbench.conf"):
        machine.sh(f"test -s /etc/systemd/system/{unit_file}")


def test_the_runner_release_is_unpacked_from_the_verified_archive_and_no_credential_is_made(machine):
    listing = machine.sh("stat -c '%U' /opt/actions-runner/run.sh; ls -a /opt/actions-runner").stdout
    assert listing.startswith("vkbench-runner") and f".vkbench-installed-{RUNNER_VERSION}" in listing
    assert machine.sh("stat -c '%U %a' /etc/vkbench-runner").stdout.strip() == "root 700"
    assert machine.sh("test -e /etc/vkbench-runner/github-token", check=False).returncode == 1


def test_a_release_with_another_checksum_is_refused(machine):
    run = machine.play(actions_runner_sha256={"x64": "0" * 64, "arm64": "0" * 64},
                       start_at="Copy the runner release from the controller instead (actions_runner_archive_path)")
    assert run["rc"] != 0
    assert not re.search(r"^TASK \[actions_runner : Unpack", run["output"], re.M)
    assert re.search(r"has sha256 [0-9a-f]{64}, not the pinned 0{64}", run["output"])


def test_an_undeclared_class_label_stops_the_play_before_anything_changes(machine):
    run = machine.play(actions_runner_class_label="cloud-x87")
    assert run["rc"] != 0 and run.get("changed", 0) == 0
    assert "Need a class label declared in classes.yaml" in run["output"]
    assert not re.search(r"^TASK \[docker : ", run["output"], re.M)


def test_sysctls_are_set_for_boot_and_name_keys_this_kernel_has(machine):
    text = machine.sh("cat /etc/sysctl.d/90-vkbench-bench.conf").stdout
    settings = dict(re.findall(r"^([\w.]+) = (\S+)$", text, re.M))
    assert settings["vm.overcommit_memory"] == "1" and int(settings["net.core.somaxconn"]) >= 512
    assert settings["vm.swappiness"] == "1"
    for key in settings:   # the container sees the host kernel's /proc/sys (read-only): every key exists
        machine.sh(f"test -e /proc/sys/{key.replace('.', '/')}")


def test_exactly_what_a_container_cannot_do_is_skipped_and_docs_say_what_decides_it(machine):
    outcomes = _task_outcomes(machine.runs[0]["output"])
    skipped = {task for task, seen in outcomes.items() if seen == {"skipping"}}
    expected = set(SKIPPED_IN_A_CONTAINER) | SKIPPED_WITH_THE_OVERCLOCK_OFF
    assert skipped == expected, (f"skipped but not expected: {sorted(skipped - expected)}; "
                                 f"expected but ran or absent: {sorted(expected - skipped)}")
    # The Pi tasks ran (bench_tuning_pi, as group_vars/pi_cm4.yml sets it) and changed config.txt.
    assert "changed" in outcomes["bench_tuning : Comment out any other overclock in config.txt"]
    section = DOCS[DOCS.index("## Applied to a container"):DOCS.index("## Security")]
    for decided_by in set(SKIPPED_IN_A_CONTAINER.values()):
        assert f"`{decided_by}`" in section, f"docs/runners.md does not name {decided_by} among the container skips"


def test_the_playbook_installed_everything_from_the_image_without_downloading(machine):
    assert machine.debs() == machine.debs_before, (
        "the roles installed packages tools/setup/runner-image.sh did not download: add them to its PACKAGES")


def test_the_tuning_is_installed_for_every_boot_and_not_applied_to_the_shared_kernel(machine):
    unit = machine.sh("cat /etc/systemd/system/vkbench-bench-tuning.service").stdout
    starts = re.findall(r"^ExecStart=(.*)$", unit, re.M)
    assert starts == [f"{TOOLS}/bin/set-cpufreq-governor.sh --governor performance",
                      f"{TOOLS}/bin/set-thp.sh --mode never",
                      f"{TOOLS}/bin/set-irq-affinity.sh --cpus 0",
                      f"{TOOLS}/bin/disable-swap.sh"]
    assert _host_tuning() == machine.host_tuning_before


@pytest.mark.parametrize(("script", "argv"), [
    ("cpufreq", "set-cpufreq-governor.sh --governor performance"),
    ("thp", "set-thp.sh --mode never"),
    ("irq", "set-irq-affinity.sh --cpus 0"),
    ("swap", "disable-swap.sh"),
])
def test_each_tuning_script_reports_exactly_what_it_would_change_here(machine, script, argv):
    # /sys and /proc are the host's, read-only here: --check only reports, and what it reports
    # follows from that kernel's state (no cpufreq on most cloud VMs: nothing to set).
    status, lines = _expected_checks("performance", "never", "0")[script]
    done = machine.sh(f"{TOOLS}/bin/{argv} --check", check=False)
    assert done.returncode == status, done.stdout + done.stderr
    assert sorted((done.stdout + done.stderr).splitlines()) == sorted(lines)


def test_swap_lines_in_fstab_are_commented_out_and_nothing_else(machine):
    fstab = machine.sh("cat /etc/fstab").stdout
    assert fstab == FSTAB.replace("/swapfile none swap sw 0 0\n",
                                  "# /swapfile none swap sw 0 0  # disabled by vkbench bench_tuning\n")


def test_the_pi_overclock_is_off_whoever_set_it(machine):
    text = machine.sh(f"cat {CONFIG_TXT_PATH}").stdout
    assert OVERCLOCK_MARK not in text
    active = [line for line in text.splitlines() if re.match(r"\s*(arm_freq|over_voltage|force_turbo)\s*=", line)]
    assert active == [], text
    assert "# over_voltage=6  # overclock off: vkbench bench_tuning (bench_tuning_pi_overclock)" in text
    assert "# arm_freq=2000  # overclock off: vkbench bench_tuning (bench_tuning_pi_overclock)" in text
    assert text.startswith("# For more options and information see http://rptl.io/configtxt\n"
                           "dtparam=audio=on\ncamera_auto_detect=1\n[pi4]\narm_boost=1\n[all]\n")
    # blockinfile and replace keep the file as it was beside it.
    assert machine.sh(f"ls {Path(CONFIG_TXT_PATH).parent}").stdout.count("config.txt.") >= 2


def test_the_pi_throttling_hook_fails_a_job_on_a_machine_without_vcgencmd(machine):
    pi = machine.sh(f"{TOOLS}/hooks/job-started.d/20-pi-throttling", check=False)
    assert pi.returncode == 1 and "vcgencmd not found" in pi.stderr


def test_build_tools_and_perf_are_installed(machine):
    machine.sh("command -v gcc g++ make ccache autoreconf libtoolize pkg-config git jq curl python3")
    machine.sh("pkg-config --exists libevent openssl zlib libpcre")
    machine.sh("dpkg-query -W -f='${Status}' linux-perf | grep -q 'install ok installed' && ls /usr/bin/perf*")
    machine.sh("python3 -m venv /tmp/venv-check && rm -rf /tmp/venv-check")


def test_the_podman_engine_stays_on_the_host_network(machine):
    conf = machine.sh("cat /etc/containers/containers.conf").stdout
    assert 'netns = "host"' in conf and 'runtime = "runc"' in conf
    machine.sh("command -v podman runc")
