"""The generated compose stacks: current, host network only, no password, and each server started
with exactly the directives the native backend writes to its config file."""

from __future__ import annotations

import importlib.util
import os
import shlex
from pathlib import Path

import pytest

from vkbench.servers import Binary
from vkbench.topology import native, procs
from vkbench.topology.backend import DeploymentSpec
from vkbench.topology.compose_render import (
    COMMITTED_TOPOLOGIES, GENERATED_HEADER, render_stack, stack_file_name,
)
from vkbench.topology.model import ServerSettings, Topology

from .interpolate import MissingVariable, interpolate
from .stubs import directives_from_argv, directives_from_config, load_stack, recorded, run_script

REPO = Path(__file__).resolve().parents[3]
COMPOSE_DIR = REPO / "compose"
PASSWORD = "Pw-0123456789abcdef"   # a dummy, for the stubs


def committed(text: str) -> str:
    return (COMPOSE_DIR / stack_file_name(Topology.parse(text))).read_text()


def stack_text(text: str) -> str:
    return committed(text) if text in COMMITTED_TOPOLOGIES else render_stack(Topology.parse(text))


def server_services(stack: dict) -> dict[str, dict]:
    return {name: s for name, s in stack["services"].items() if name not in ("cluster-init", "cluster-ready", "bench")}


# -- the committed files ---------------------------------------------------------------------

@pytest.mark.parametrize("text", COMMITTED_TOPOLOGIES)
def test_committed_file_is_current(text):
    assert committed(text) == render_stack(Topology.parse(text)), "run: python tools/gen_compose.py"
    assert committed(text).startswith(GENERATED_HEADER)


def test_gen_compose_check_mode_passes_and_flags_a_stale_file(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("gen_compose", REPO / "tools" / "gen_compose.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.main(["--check"]) == 0
    assert gen.main(["cluster:2:1", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "cluster-2-1.yaml").read_text() == render_stack(Topology.parse("cluster:2:1"))
    (tmp_path / "cluster-2-1.yaml").write_text("# edited\n")
    assert gen.main(["cluster:2:1", "--out", str(tmp_path), "--check"]) == 1
    assert "stale" in capsys.readouterr().err


@pytest.mark.parametrize("text", COMMITTED_TOPOLOGIES)
def test_every_service_is_on_the_host_network_and_the_password_stays_out(text):
    raw = committed(text)
    stack = load_stack(raw)
    for name, service in stack["services"].items():
        assert service["network_mode"] == "host", name   # never a bridge: podman would touch the host
        assert service["labels"]["vkbench.run"] == "${VKBENCH_RUN:-manual}"
    assert PASSWORD not in raw
    # The password exists only as the required variable and as the shell's $VALKEY_PASSWORD.
    assert "${VALKEY_PASSWORD:?set VALKEY_PASSWORD}" in raw
    for service in server_services(stack).values():
        script = service["command"][0]
        assert "--requirepass" not in script and "--masterauth" not in script
        assert "requirepass $$VALKEY_PASSWORD" in script
        health = service["healthcheck"]["test"]
        assert health[0] == "CMD-SHELL" and " -a " not in health[1]   # cli reads REDISCLI_AUTH


def test_cluster_files_form_the_cluster_with_the_replica_count():
    for text, replicas in (("cluster:3", 0), ("cluster:3:1", 1)):
        stack = load_stack(committed(text))
        init = stack["services"]["cluster-init"]
        assert f"--cluster-replicas {replicas} --cluster-yes" in init["command"][0]
        assert set(init["depends_on"]) == set(server_services(stack))
        ready = stack["services"]["cluster-ready"]["depends_on"]["cluster-init"]
        assert ready["condition"] == "service_completed_successfully"
    assert "cluster-init" not in load_stack(committed("replication:2"))["services"]


def test_missing_password_is_an_error_with_the_variable_named():
    stack = load_stack(committed("standalone"))
    with pytest.raises(MissingVariable, match="set VALKEY_PASSWORD"):
        interpolate(stack["services"]["primary"]["environment"]["VALKEY_PASSWORD"], {})


# -- native and compose start identical servers ------------------------------------------------

def native_directives(spec: DeploymentSpec, node, ports: list[int], tmp_path: Path, monkeypatch) -> tuple[list, Path]:
    """What the native backend really writes for ``node`` (its own code path, process start faked)."""

    class FakePopen:
        pid = os.getpid()

        def poll(self):
            return None

    monkeypatch.setattr(procs, "start_server", lambda *a, **k: FakePopen())
    binary = Binary(Path("/bin/true"), "valkey", "valkey-server", "8.0.1", "path", "sha256:0")
    started: list = []
    native._start_node(spec, binary, node, ports, tmp_path / "state", started)
    config = started[0].config
    return directives_from_config(config.read_text()), started[0].workdir


def compose_directives(text: str, node_name: str, env: dict[str, str], tmp_path: Path) -> list:
    """What the compose service's script starts valkey-server with: argv after ``-``, plus stdin."""
    service = load_stack(stack_text(text))["services"][node_name]
    assert service["entrypoint"] == ["/bin/sh", "-c"]
    done = run_script(service["command"][0], env, tmp_path)
    assert done.returncode == 0, done.stderr
    (argv, stdin), = recorded(tmp_path, "valkey-server")
    assert argv[0] == "-", "the server must read the password config from stdin"
    return directives_from_config(stdin) + directives_from_argv(argv)


@pytest.mark.parametrize("text", [*COMMITTED_TOPOLOGIES, "cluster:2:2"])
def test_native_and_compose_start_identical_server_directives(text, tmp_path, monkeypatch):
    topology = Topology.parse(text)
    settings = ServerSettings(io_threads=3, extra_args=("--maxmemory", "1gb", "--hz", "100"))
    spec = DeploymentSpec(topology, "valkey", "8.0.1", settings, PASSWORD, tmp_path / "run")
    base = 23000
    ports = [base + n.index for n in topology.nodes()]
    for node in topology.nodes():
        want, workdir = native_directives(spec, node, ports, tmp_path, monkeypatch)
        env = {
            "VALKEY_PASSWORD": PASSWORD, "BASE_PORT": str(base), "IO_THREADS": "3",
            "EXTRA_ARGS": shlex.join(settings.extra_args), "DATA_DIR": str(workdir),
        }
        got = compose_directives(text, node.name, env, tmp_path / node.name)
        assert sorted(got) == sorted(want), node.name
        # Same order too, apart from the two password directives that compose sends on stdin first.
        public = [d for d in want if d[0] not in ("requirepass", "masterauth")]
        assert got[2:] == public, node.name


def test_defaults_without_any_variable_but_the_password(tmp_path):
    got = compose_directives("replication:1", "replica-1", {"VALKEY_PASSWORD": PASSWORD}, tmp_path)
    assert ("port", "6380") in got and ("bind", "127.0.0.1") in got and ("io-threads", "1") in got
    assert ("replicaof", "127.0.0.1", "6379") in got and ("dir", "/data") in got
    assert ("requirepass", PASSWORD) in got


def test_server_host_moves_replicaof_but_not_bind(tmp_path):
    env = {"VALKEY_PASSWORD": PASSWORD, "BIND_ADDRESS": "0.0.0.0", "SERVER_HOST": "10.0.0.5"}
    got = compose_directives("replication:1", "replica-1", env, tmp_path)
    assert ("bind", "0.0.0.0") in got and ("replicaof", "10.0.0.5", "6379") in got


def test_extra_args_keep_shell_quoting(tmp_path):
    env = {"VALKEY_PASSWORD": PASSWORD, "EXTRA_ARGS": "--save '' --maxmemory-policy allkeys-lru"}
    got = compose_directives("standalone", "primary", env, tmp_path)
    assert got[-2:] == [("save", '""'), ("maxmemory-policy", "allkeys-lru")]


# -- healthchecks, cluster-init and the bench service, run against stubs -------------------------

@pytest.mark.parametrize("text,node,stub_env,healthy", [
    ("standalone", "primary", {}, True),
    ("standalone", "primary", {"STUB_PING": "NOAUTH Authentication required."}, False),
    ("replication:1", "replica-1", {}, True),
    ("replication:1", "replica-1", {"STUB_REPLICATION": "master_link_status:down"}, False),
    ("cluster:3", "shard-1-primary", {"STUB_FORMED": "1"}, True),
    ("cluster:3", "shard-1-primary", {}, False),
])
def test_healthcheck_means_ready_for_a_benchmark(text, node, stub_env, healthy, tmp_path):
    service = load_stack(committed(text))["services"][node]
    done = run_script(service["healthcheck"]["test"][1], {"VALKEY_PASSWORD": PASSWORD, "BASE_PORT": "7000"},
                      tmp_path, stub_env)
    assert (done.returncode == 0) is healthy, done.stderr
    argv = [a for a, _ in recorded(tmp_path, "valkey-cli")][0]
    index = Topology.parse(text).nodes()[[n.name for n in Topology.parse(text).nodes()].index(node)].index
    assert argv[:4] == ["-h", "127.0.0.1", "-p", str(7000 + index)]


def test_cluster_init_waits_creates_and_checks_every_node(tmp_path):
    init = load_stack(committed("cluster:3:1"))["services"]["cluster-init"]
    done = run_script(init["command"][0], {"VALKEY_PASSWORD": PASSWORD, "BASE_PORT": "7000"}, tmp_path)
    assert done.returncode == 0, done.stderr
    creates = [a for a, _ in recorded(tmp_path, "valkey-cli") if "create" in a]
    assert creates == [["--cluster", "create", *[f"127.0.0.1:{7000 + i}" for i in range(6)],
                        "--cluster-replicas", "1", "--cluster-yes"]]


def test_cluster_init_leaves_a_formed_cluster_alone(tmp_path):
    init = load_stack(committed("cluster:3"))["services"]["cluster-init"]
    done = run_script(init["command"][0], {"VALKEY_PASSWORD": PASSWORD}, tmp_path, {"STUB_FORMED": "1"})
    assert done.returncode == 0, done.stderr
    assert not any("create" in a for a, _ in recorded(tmp_path, "valkey-cli"))


@pytest.mark.parametrize("text,tool,flag", [
    ("standalone", "valkey-benchmark", None), ("cluster:3", "valkey-benchmark", "--cluster"),
    ("cluster:3", "memtier_benchmark", "--cluster-mode"),
])
def test_bench_service_targets_the_first_node(text, tool, flag, tmp_path):
    bench = load_stack(committed(text))["services"]["bench"]
    assert bench["profiles"] == ["bench"] and bench["build"]["dockerfile"] == "bench.Dockerfile"
    env = {"VALKEY_PASSWORD": PASSWORD, "BASE_PORT": "7000", "BENCH_TOOL": tool}
    done = run_script(bench["command"][0], env, tmp_path)
    assert done.returncode == 0, done.stderr
    (argv, _), = recorded(tmp_path, tool)
    assert "7000" in argv and PASSWORD in argv
    assert (flag in argv) if flag else ("--cluster" not in argv)
    done = run_script(bench["command"][0], {**env, "BENCH_ARGS": "-t ping -n 10"}, tmp_path / "args")
    (argv, _), = recorded(tmp_path / "args", tool)
    assert argv[-4:] == ["-t", "ping", "-n", "10"]


def test_every_variable_is_documented():
    """Each ${VAR} in the stack files is in compose_render.VARIABLES and in docs/compose.md."""
    import re

    from vkbench.topology.compose_render import VARIABLES

    used = set()
    for text in COMMITTED_TOPOLOGIES:
        used |= set(re.findall(r"\$\{([A-Z_]+)", committed(text)))
    assert used - {"VKBENCH_RUN", "VKBENCH_OWNER"} == set(VARIABLES)
    docs = (REPO / "docs" / "compose.md").read_text()
    for name in used:
        assert f"`{name}`" in docs, name
