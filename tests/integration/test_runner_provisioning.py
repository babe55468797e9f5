"""runners/site.yml applied for real: a Debian bookworm container (debootstrap minbase, made by
tools/setup/runner-image.sh) provisioned through Ansible's podman connection, twice.

Every role runs (podman engine, runner user and directories, bench tuning, cleanup hooks, the
class labels from runners/classes.yaml); the second run changes nothing; then the files, users,
sysctls, hooks and labels the roles promise are checked inside the container. What a container
cannot do (systemd units, tuning the shared kernel, registering with GitHub, downloading the
runner) the roles skip themselves: docs/runners.md, "Applied to a container".
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


def _podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=timeout)


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


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    image = _runner_image()
    tmp = tmp_path_factory.mktemp("provision")
    archive, sha256 = _fake_runner_release(tmp)
    name = f"vkbench-provision-{secrets.token_hex(3)}"
    _podman("run", "-d", "--name", name, "--hostname", "bench-x86-test", image)
    try:
        m = Machine(name, tmp, archive, sha256)
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
    for key in settings:   # the container sees the host kernel's /proc/sys (read-only): every key exists
        machine.sh(f"test -e /proc/sys/{key.replace('.', '/')}")


def test_tuning_scripts_report_what_they_would_change_where_a_container_sees_it(machine):
    # /sys and /proc/irq are the host's, read-only here: --check only reports.
    thp = machine.sh(f"{TOOLS}/bin/set-thp.sh --mode never --check")
    assert re.search(r"^thp: (would set (enabled|defrag) from \w+ to never|(enabled|defrag) already never)$",
                     thp.stdout, re.M) or "missing" in thp.stdout, thp.stdout
    assert machine.sh(f"{TOOLS}/bin/set-irq-affinity.sh --cpus 0 --check", check=False).returncode == 0
    assert machine.sh(f"{TOOLS}/bin/set-cpufreq-governor.sh --governor performance --check", check=False).returncode in (0, 1)
    # Not a Pi (no vcgencmd): the throttling hook fails the job instead of passing silently.
    pi = machine.sh(f"{TOOLS}/hooks/job-started.d/20-pi-throttling", check=False)
    assert pi.returncode == 1 and "vcgencmd not found" in pi.stderr
    # The overclock stays off: no config.txt block was written.
    assert machine.sh("grep -rs arm_freq /boot/firmware/config.txt", check=False).returncode != 0


def test_build_tools_and_perf_are_installed(machine):
    machine.sh("command -v gcc g++ make ccache autoreconf libtoolize pkg-config git jq curl python3")
    machine.sh("pkg-config --exists libevent openssl zlib libpcre")
    machine.sh("dpkg-query -W -f='${Status}' linux-perf | grep -q 'install ok installed' && ls /usr/bin/perf*")
    machine.sh("python3 -m venv /tmp/venv-check && rm -rf /tmp/venv-check")


def test_the_podman_engine_stays_on_the_host_network(machine):
    conf = machine.sh("cat /etc/containers/containers.conf").stdout
    assert 'netns = "host"' in conf and 'runtime = "runc"' in conf
    machine.sh("command -v podman runc")
