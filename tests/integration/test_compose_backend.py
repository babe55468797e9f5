"""ComposeBackend against a real engine (the podman socket of tools/setup/containers.sh here).

Standalone, cluster:3 and replication:1 stacks with the local valkey image: ready means ready,
the password is required and never in a process's argv, a real benchmark runs against them,
teardown leaves nothing (also after Ctrl-C), stale cleanup removes a killed run's stack, and the
host network is untouched. No engine FAILS these tests with the setup hint: a skipped backend
test would hide a broken setup.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import valkey

from vkbench.errors import ContainerEngineError, MissingBinaryError, ServerStartError
from vkbench.topology.backend import Deployment, DeploymentSpec
from vkbench.topology.compose import ComposeBackend
from vkbench.topology.docker_engine import Docker
from vkbench.topology.model import ServerSettings, Topology, server_config
from vkbench.topology.readiness import connect, info, parse_fields

pytestmark = pytest.mark.compose

REPO = Path(__file__).resolve().parents[2]
LOCAL_VERSION = "8.0.1"     # what tools/setup/containers.sh packs into localhost/vkbench-valkey


def containers_env() -> dict[str, str]:
    """What `. tools/containers-env.sh` exports, so the tests run without sourcing it first."""
    if os.environ.get("DOCKER_HOST"):
        return {}
    done = subprocess.run(["bash", "-c", f". {REPO}/tools/containers-env.sh && env -0"],
                          capture_output=True, check=True)
    exported = dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    names = ("DOCKER_HOST", "DOCKER_CONFIG", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "VALKEY_IMAGE",
             "VKBENCH_CONTAINERS_STATE", "VKBENCH_CONTAINERS_BIN")
    return {k: exported[k] for k in names if k in exported}


@pytest.fixture(scope="module", autouse=True)
def engine(host_network):
    with pytest.MonkeyPatch.context() as mp:
        for key, value in containers_env().items():
            mp.setenv(key, value)
        try:
            Docker().check_engine()
        except ContainerEngineError as exc:
            pytest.fail(f"{exc.message}\nhint: {exc.hint}")
        image = os.environ.get("VALKEY_IMAGE", "")
        if not image or Docker().run("image", "inspect", image, timeout=30, check=False).returncode != 0:
            pytest.fail(f"the valkey image {image or '(VALKEY_IMAGE unset)'} is missing\n"
                        "hint: run tools/setup/containers.sh and source tools/containers-env.sh")
        yield


@pytest.fixture(scope="module")
def host_network():
    """Bridges and ip_forward before these tests."""
    return _bridges(), _forward()


def _bridges() -> set[str]:
    """What podman's bridge network would add (podman0, cni-podman0); another test's veth is not."""
    return {dev.name for dev in Path("/sys/class/net").iterdir()
            if (dev / "bridge").is_dir() or dev.name.startswith(("podman", "cni-"))}


def _forward() -> str:
    return Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()


def make_spec(tmp_path: Path, topology: str, version: str = LOCAL_VERSION) -> DeploymentSpec:
    return DeploymentSpec(Topology.parse(topology), "valkey", version, ServerSettings(),
                          "pw-" + secrets.token_urlsafe(12), tmp_path / "run")


def project_of(deployment: Deployment) -> str:
    return json.loads((deployment.spec.run_dir / "compose" / "project.json").read_text())["project"]


def containers_of(project: str) -> list[dict]:
    return Docker().containers(f"label=com.docker.compose.project={project}")


def benchmark(deployment: Deployment, *, cluster: bool) -> dict[str, float]:
    """A short real valkey-benchmark from the host against the first node: {test: rps}."""
    try:
        from vkbench.servers import resolve_tool

        tool = resolve_tool("valkey-benchmark", fetch=False)
        argv0, env = str(tool.path), tool.run_env()
    except (ImportError, MissingBinaryError):
        argv0, env = str(Path(os.environ["VKBENCH_CONTAINERS_BIN"]) / "valkey-benchmark"), dict(os.environ)
    first = deployment.primaries[0]
    argv = [argv0, "-h", first.host, "-p", str(first.port), "-a", deployment.spec.password,
            "-t", "set,get", "-n", "20000", "-r", "10000", "-P", "16", "--csv"] + (["--cluster"] if cluster else [])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r'^"(SET|GET)","([\d.]+)"', done.stdout, re.M)
    assert {name for name, _ in rows} == {"SET", "GET"}, done.stdout
    return {name: float(rps) for name, rps in rows}


def assert_running_config_is_the_model(deployment: Deployment) -> None:
    """Each running server's CONFIG equals server_config() for it: the same directives the native
    backend writes (workdir /data, the container's)."""
    spec = deployment.spec
    by_name = {e.name: e for e in deployment.endpoints}
    for node in spec.topology.nodes():
        endpoint = by_name[node.name]
        primary = deployment.endpoints[node.primary_index] if node.primary_index is not None else None
        want = server_config(spec.topology, node, port=endpoint.port, primary_port=primary.port if primary else None,
                             settings=spec.settings, password=spec.password, workdir="/data", primary_host=endpoint.host)
        client = connect(endpoint.host, endpoint.port, spec.password)
        try:
            for name, *values in want:
                if name == "replicaof":
                    fields = info(client, "replication")
                    assert (fields["master_host"], fields["master_port"]) == tuple(values), node.name
                    continue
                got = client.config_get(name)[name]
                assert got == " ".join("" if v == '""' else v for v in values), (node.name, name)
        finally:
            client.close()


def assert_password_required_and_hidden(deployment: Deployment) -> None:
    endpoint = deployment.endpoints[0]
    anonymous = valkey.Valkey(host=endpoint.host, port=endpoint.port, socket_timeout=2)
    with pytest.raises(valkey.exceptions.AuthenticationError):
        anonymous.ping()
    anonymous.close()
    with pytest.raises(valkey.exceptions.AuthenticationError):
        valkey.Valkey(host=endpoint.host, port=endpoint.port, password="wrong", socket_timeout=2).ping()
    leaks = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if deployment.spec.password.encode() in cmdline.read_bytes():
                leaks.append(cmdline.parent.name)
        except OSError:
            pass
    assert not leaks, f"password in the argv of pids {leaks}"


def assert_pids_are_the_servers(deployment: Deployment) -> None:
    assert len(deployment.server_pids) == len(deployment.endpoints)
    for endpoint in deployment.endpoints:
        comm = Path(f"/proc/{endpoint.pid}/cmdline").read_bytes().decode()
        assert "valkey-server" in comm and str(endpoint.port) in comm, comm


def assert_torn_down(project: str) -> None:
    assert containers_of(project) == []


# -- the three shapes --------------------------------------------------------------------------

def test_standalone_ready_locked_benchmarked_and_removed(tmp_path):
    spec = make_spec(tmp_path, "standalone")
    with ComposeBackend().deploy(spec) as deployment:
        project = project_of(deployment)
        assert [c["state"] for c in containers_of(project)] == ["running"]
        assert deployment.server_version == LOCAL_VERSION
        assert deployment.build["source"] == "image" and deployment.build["id"].startswith("sha256:")
        assert deployment.startup_s > 0          # recorded; how long it took is the machine's load
        assert_pids_are_the_servers(deployment)
        assert_password_required_and_hidden(deployment)
        assert_running_config_is_the_model(deployment)
        rps = benchmark(deployment, cluster=False)
        assert min(rps.values()) > 0             # it ran and measured; how fast is the machine's load
        # The stack's own bench service (profile bench), run the way that does not make podman spin.
        env = {**os.environ, "VALKEY_PASSWORD": spec.password, "BASE_PORT": str(deployment.endpoints[0].port),
               "BENCH_IMAGE": os.environ["VALKEY_IMAGE"], "BENCH_ARGS": "-t ping -n 2000 -q"}
        bench = subprocess.run(
            ["docker", "compose", "-p", project, "-f", str(spec.run_dir / "compose" / "stack.yaml"), "--profile", "bench",
             "up", "--no-deps", "--no-color", "--exit-code-from", "bench", "bench"],
            env=env, capture_output=True, text=True, timeout=60)
        assert bench.returncode == 0, bench.stderr
        assert "PING_INLINE" in bench.stdout and "requests per second" in bench.stdout
    assert_torn_down(project)
    assert "Ready to accept connections" in (spec.run_dir / "primary" / "server.log").read_text()


def test_cluster_3_every_node_ok_and_benchmarked(tmp_path):
    spec = make_spec(tmp_path, "cluster:3")
    with ComposeBackend().deploy(spec) as deployment:
        project = project_of(deployment)
        for endpoint in deployment.endpoints:
            client = connect(endpoint.host, endpoint.port, spec.password)
            state = parse_fields(client.execute_command("CLUSTER", "INFO"))
            client.close()
            assert (state["cluster_state"], state["cluster_slots_ok"], state["cluster_known_nodes"]) == ("ok", "16384", "3")
        assert_pids_are_the_servers(deployment)
        assert_running_config_is_the_model(deployment)
        assert min(benchmark(deployment, cluster=True).values()) > 0
    assert_torn_down(project)


def test_replication_1_replica_linked_and_in_sync(tmp_path):
    spec = make_spec(tmp_path, "replication:1")
    with ComposeBackend().deploy(spec) as deployment:
        project = project_of(deployment)
        primary, replica = deployment.endpoints
        fields = info(connect(replica.host, replica.port, spec.password), "replication")
        assert (fields["role"], fields["master_link_status"], fields["master_port"]) == ("slave", "up", str(primary.port))
        assert_running_config_is_the_model(deployment)
        benchmark(deployment, cluster=False)
        writer = connect(primary.host, primary.port, spec.password)
        writer.set("probe", "1")
        writer.execute_command("WAIT", 1, 2000)
        assert connect(replica.host, replica.port, spec.password).get("probe") == "1"
    assert_torn_down(project)


@pytest.fixture
def loaded_machine():
    """Busy loops on twice as many processes as cores, killed after the test: the load under which
    a cluster stack's `compose up` once hung for 300 s (issue 9). Each loop ends by itself after
    240 s too: killing a `timeout` wrapper leaves its child running forever (it did, for an hour)."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True)
            for _ in range(2 * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        assert all(hog.poll() is not None for hog in hogs)


#: A CPU hog bounded in time by itself.
HOG = "import time\nend = time.monotonic() + 240\nwhile time.monotonic() < end:\n    pass\n"


def test_cluster_stacks_come_up_while_the_machine_is_loaded(tmp_path, loaded_machine):
    for n, shape in enumerate(("cluster:3", "cluster:3:1", "cluster:3")):
        spec = make_spec(tmp_path / str(n), shape)
        with ComposeBackend().deploy(spec) as deployment:
            project = project_of(deployment)
            # Ready within the backend's own bounds: no compose call may stall past UP_TIMEOUT_S (a
            # stalled `up` is torn down and retried, UP_ATTEMPTS times, then fails the deploy). The
            # time it took is the load's: a retried attempt is the backend working, not a failure.
            assert deployment.startup_s > 0, shape
            for endpoint in deployment.endpoints:
                client = connect(endpoint.host, endpoint.port, spec.password)
                state = parse_fields(client.execute_command("CLUSTER", "INFO"))
                client.close()
                assert (state["cluster_state"], state["cluster_slots_ok"]) == ("ok", "16384"), (shape, endpoint.name)
            roles = sorted(e.role for e in deployment.endpoints)
            assert roles == (["primary"] * 3 + ["replica"] * 3 if shape.endswith(":1") else ["primary"] * 3)
        assert_torn_down(project)


# -- failures, Ctrl-C and leftovers ------------------------------------------------------------

def test_wrong_version_fails_and_still_tears_down(tmp_path):
    spec = make_spec(tmp_path, "standalone", version="9.1.2")
    with pytest.raises(ServerStartError, match=r"runs valkey 8\.0\.1, the cell asks for 9\.1\.2"):
        with ComposeBackend().deploy(spec):
            pytest.fail("must not get here")
    project = json.loads((spec.run_dir / "compose" / "project.json").read_text())["project"]
    assert_torn_down(project)


def test_server_that_cannot_start_is_reported_with_its_output(tmp_path):
    spec = make_spec(tmp_path, "standalone")
    spec = DeploymentSpec(spec.topology, spec.engine, spec.version, ServerSettings(extra_args=("--no-such-directive", "1")),
                          spec.password, spec.run_dir)
    with pytest.raises(ServerStartError) as failure:
        with ComposeBackend().deploy(spec):
            pytest.fail("must not get here")
    assert "primary" in failure.value.message and "no-such-directive" in failure.value.message
    assert spec.password not in failure.value.message
    assert_torn_down(json.loads((spec.run_dir / "compose" / "project.json").read_text())["project"])


_HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from vkbench.topology.backend import DeploymentSpec
    from vkbench.topology.compose import ComposeBackend
    from vkbench.topology.model import ServerSettings, Topology
    spec = DeploymentSpec(Topology.parse("standalone"), "valkey", "8.0.1", ServerSettings(), "pw-holder-x",
                          Path(sys.argv[1]))
    with ComposeBackend().deploy(spec) as deployment:
        print("READY", flush=True)
        time.sleep(120)
""")


def _start_holder(tmp_path: Path) -> tuple[subprocess.Popen, str]:
    run_dir = tmp_path / "holder"
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() == "READY", f"holder said {line!r}"
    project = json.loads((run_dir / "compose" / "project.json").read_text())["project"]
    assert [c["state"] for c in containers_of(project)] == ["running"]
    return proc, project


def test_ctrl_c_tears_the_stack_down(tmp_path):
    proc, project = _start_holder(tmp_path)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) != 0
    assert_torn_down(project)


def test_stale_cleanup_removes_the_stack_of_a_killed_run(tmp_path):
    proc, project = _start_holder(tmp_path)
    proc.kill()                      # no teardown: a killed run leaves its stack behind
    proc.wait(timeout=10)
    assert containers_of(project), "the killed run's containers should still be there"
    removed = ComposeBackend().cleanup_stale(tmp_path / "state")
    assert any(project in line for line in removed), removed
    assert_torn_down(project)


def test_host_network_unchanged(host_network):
    """podman added no bridge and left ip_forward alone (netns=host, network_mode: host), neither
    during these tests nor since tools/setup/containers.sh first ran."""
    bridges, forward = host_network
    assert _bridges() == bridges and _forward() == forward
    state = Path(os.environ.get("VKBENCH_CONTAINERS_STATE", REPO / ".cache" / "containers"))
    if (state / "host-bridges.baseline").exists():
        assert _bridges() <= set((state / "host-bridges.baseline").read_text().split())
        assert _forward() == (state / "ip-forward.baseline").read_text().strip()
