"""Process helpers of the native backend without real servers: ports, pid files, stale cleanup."""

import json
import os
import subprocess
import sys
import time

from vkbench.topology import procs
from vkbench.topology.cluster_setup import slot_ranges
from vkbench.topology.readiness import parse_fields


def test_allocate_ports_distinct_free_and_bus_free():
    ports = procs.allocate_ports(6, cluster=True)
    assert len(set(ports)) == 6
    for port in ports:
        assert procs.PORT_RANGE[0] <= port < procs.PORT_RANGE[1]
        assert procs.port_is_free(port) and procs.port_is_free(port + procs.CLUSTER_BUS_OFFSET)


def test_busy_port_is_detected():
    sock = procs._bind(0)
    sock.listen()
    port = sock.getsockname()[1]
    try:
        assert not procs.port_is_free(port)
        assert procs.ports_in_use([port], cluster=False) == [port]
    finally:
        sock.close()


def test_write_private_is_0600_even_over_an_existing_file(tmp_path):
    path = tmp_path / "valkey.conf"
    path.write_text("old")
    path.chmod(0o644)
    procs.write_private(path, "requirepass x\n")
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text() == "requirepass x\n"


def test_slot_ranges_cover_every_slot_once():
    for shards in (1, 2, 3, 5, 7):
        ranges = slot_ranges(shards)
        assert ranges[0][0] == 0 and ranges[-1][1] == 16383
        assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(shards - 1))
    assert slot_ranges(3) == [(0, 5460), (5461, 10922), (10923, 16383)]


def test_parse_fields():
    text = "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=1,state=online\r\n"
    assert parse_fields(text) == {"role": "master", "connected_slaves": "1", "slave0": "ip=127.0.0.1,port=1,state=online"}


def _fake_server(tmp_path):
    """A long sleep whose command line names valkey-server, like a real server's title."""
    link = tmp_path / "valkey-server"
    link.symlink_to("/bin/sleep")
    return subprocess.Popen([str(link), "60"], start_new_session=True)


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _record(state_dir, proc, owner_pid, owner_start):
    state_dir.mkdir(exist_ok=True)
    path = state_dir / f"native-{owner_pid}-{proc.pid}.json"
    path.write_text(json.dumps({
        "pid": proc.pid, "start_time": procs.process_start_time(proc.pid), "owner_pid": owner_pid,
        "owner_start_time": owner_start, "node": "primary", "port": 1, "binary": "/x/valkey-server",
    }))
    return path


def test_cleanup_kills_servers_of_a_dead_owner(tmp_path):
    server = _fake_server(tmp_path)
    try:
        pidfile = _record(tmp_path / "state", server, _dead_pid(), None)
        removed = procs.cleanup_stale(tmp_path / "state")
        assert removed and "killed leftover server" in removed[0]
        assert server.wait(timeout=5) is not None
        assert not pidfile.exists()
    finally:
        server.kill()
        server.wait()


def test_cleanup_leaves_a_live_owner_alone(tmp_path):
    server = _fake_server(tmp_path)
    try:
        pidfile = _record(tmp_path / "state", server, os.getpid(), procs.process_start_time(os.getpid()))
        assert procs.cleanup_stale(tmp_path / "state") == []
        assert server.poll() is None and pidfile.exists()
    finally:
        server.kill()
        server.wait()


def test_cleanup_never_kills_a_reused_pid(tmp_path):
    other = subprocess.Popen(["sleep", "60"])   # not a server: the pid file's start time differs
    try:
        path = _record(tmp_path / "state", other, _dead_pid(), None)
        record = json.loads(path.read_text())
        record["start_time"] = 1   # what the dead run's server had; now the pid is someone else's
        path.write_text(json.dumps(record))
        removed = procs.cleanup_stale(tmp_path / "state")
        assert "exited server" in removed[0]
        time.sleep(0.05)
        assert other.poll() is None and not path.exists()
    finally:
        other.kill()
        other.wait()


def test_cleanup_of_missing_state_dir(tmp_path):
    assert procs.cleanup_stale(tmp_path / "none") == []
