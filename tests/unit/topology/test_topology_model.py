"""The topology description shared by both backends."""

import pytest

from vkbench.errors import UsageError
from vkbench.topology.model import ServerSettings, Topology, render_command_args, render_config_file, server_config


@pytest.mark.parametrize("text,kind,shards,replicas,count", [
    ("standalone", "standalone", 1, 0, 1),
    ("cluster:3", "cluster", 3, 0, 3),
    ("cluster:3:1", "cluster", 3, 1, 6),
    ("replication:2", "replication", 1, 2, 3),
])
def test_parse_and_nodes(text, kind, shards, replicas, count):
    topo = Topology.parse(text)
    assert (topo.kind, topo.shards, topo.replicas) == (kind, shards, replicas)
    assert str(topo) == text
    nodes = topo.nodes()
    assert len(nodes) == count
    assert [n.index for n in nodes] == list(range(count))
    assert sum(n.role == "primary" for n in nodes) == (shards if kind == "cluster" else 1)


def test_cluster_replicas_point_at_their_shard_primary():
    nodes = Topology.parse("cluster:2:2").nodes()
    replicas = [n for n in nodes if n.role == "replica"]
    assert [(n.shard, n.primary_index) for n in replicas] == [(0, 0), (0, 0), (1, 1), (1, 1)]


@pytest.mark.parametrize("bad", ["ring", "cluster", "cluster:0", "replication:0", "cluster:3:x", ""])
def test_bad_topologies_name_the_forms(bad):
    with pytest.raises(UsageError) as info:
        Topology.parse(bad)
    assert info.value.hint and "cluster:N:R" in (info.value.hint + info.value.message + " cluster:N:R")


def test_server_config_requires_password_binds_loopback_and_disables_persistence():
    topo = Topology.parse("replication:1")
    replica = topo.nodes()[1]
    d = dict((x[0], x[1:]) for x in server_config(topo, replica, port=7001, primary_port=7000,
                                                  settings=ServerSettings(io_threads=2), password="pw", workdir="/tmp/n1"))
    assert d["requirepass"] == ("pw",) and d["bind"] == ("127.0.0.1",)
    assert d["save"] == ('""',) and d["appendonly"] == ("no",)
    assert d["io-threads"] == ("2",) and d["repl-diskless-sync-delay"] == ("0",)
    assert d["replicaof"] == ("127.0.0.1", "7000")
    assert d["logfile"] == ("/tmp/n1/server.log",)


def test_cluster_nodes_enable_cluster_mode_and_extra_args_are_appended():
    topo = Topology.parse("cluster:3")
    directives = server_config(topo, topo.nodes()[0], port=7000, primary_port=None,
                               settings=ServerSettings(extra_args=("--maxmemory", "1gb")), password="pw", workdir="/w")
    names = [d[0] for d in directives]
    assert "cluster-enabled" in names and "replicaof" not in names
    assert directives[-1] == ("maxmemory", "1gb")


def test_renderings_agree():
    topo = Topology.parse("standalone")
    directives = server_config(topo, topo.nodes()[0], port=7000, primary_port=None, settings=ServerSettings(),
                               password="pw", workdir="/w")
    text = render_config_file(directives)
    assert "save \"\"\n" in text and "requirepass pw\n" in text
    args = render_command_args(directives)
    assert args[args.index("--save") + 1] == ""
    assert args[args.index("--port") + 1] == "7000"


def test_config_file_quotes_values_with_spaces_and_quotes():
    text = render_config_file([("dir", "/tmp/a b"), ("requirepass", 'p"w'), ("save", '""'), ("port", "7000")])
    assert text == 'dir "/tmp/a b"\nrequirepass "p\\"w"\nsave ""\nport 7000\n'
