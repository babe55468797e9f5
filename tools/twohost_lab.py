#!/usr/bin/env python3
"""Two machines on one: the Pi blog's client/server split, built from two network namespaces.

    server namespace  vkb-srv-<id>  198.18.N.1/30  podman's API service on tcp://198.18.N.1:<port>
         | veth pair (vkbs<id> <-> vkbc<id>)
    client namespace  vkb-cli-<id>  198.18.N.2/30  vkbench run --backend compose (DOCKER_HOST=tcp://...)

Addresses come from 198.18.0.0/15, the range RFC 2544 sets aside for network benchmarks; they
exist only inside the two namespaces, which are deleted afterwards. The host's own namespace gets
no address, route, bridge, firewall rule or IPv4/IPv6 forwarding change (:func:`host_network_snapshot`
is what the test compares before and after). The podman service uses the project's podman state
(tools/setup/containers.sh) and, with netns=host, its containers live in the server namespace.

As a tool it measures one cell both ways, same image, same settings (needs root):

    tools/twohost_lab.py                       # standalone, SET and GET, -P 16, 3 repetitions
    tools/twohost_lab.py --cell '{"topology": "cluster:3:1"}' --json   # any topology, replicas too

and prints the two-host throughput against the one-host throughput (client and servers on one
network stack, the engine's local socket, 127.0.0.1). The test is
tests/integration/test_two_host.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINE_START_TIMEOUT_S = 120.0


def _run(*argv: str, check: bool = True, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=timeout, env=env)


def containers_env() -> dict[str, str]:
    """What `. tools/containers-env.sh` exports (the project's podman state)."""
    done = subprocess.run(["bash", "-c", f". '{REPO}/tools/containers-env.sh' && env -0"], capture_output=True,
                          check=True, env={k: v for k, v in os.environ.items() if k != "DOCKER_HOST"})
    exported = dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    names = ("DOCKER_HOST", "DOCKER_CONFIG", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "VALKEY_IMAGE",
             "VKBENCH_CONTAINERS_STATE", "VKBENCH_CONTAINERS_BIN")
    return {k: exported[k] for k in names if k in exported}


def host_network_snapshot(netns: str | None = None) -> dict:
    """What a lab must leave as it found it in the host's namespace (or in ``netns``, which the
    test uses to show that each part of the comparison notices a change): links, the actual
    addresses, IPv4 and IPv6 routes, IPv4 and IPv6 forwarding (global, default and per link), and
    the firewall, read both from nf_tables itself (:func:`nftables_objects`, no ``nft`` binary
    needed) and as iptables-save/ip6tables-save print it. Only sorted lists and strings: the
    snapshot of a namespace comes back as JSON from a process run inside it."""
    if netns is not None:
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import twohost_lab; "
                "print(json.dumps(twohost_lab.host_network_snapshot()))")
        done = _run("ip", "netns", "exec", netns, sys.executable, "-c", code, str(Path(__file__).resolve().parent))
        return json.loads(done.stdout)
    snap: dict = {"links": sorted(p.name for p in Path("/sys/class/net").iterdir())}
    snap["addresses"] = sorted(
        f"{link['ifname']} {a['family']} {a['local']}/{a['prefixlen']}"
        for link in json.loads(_run("ip", "-j", "addr", "show").stdout or "[]")
        for a in link.get("addr_info", []) if "local" in a)
    # A route learnt from a router advertisement counts down its lifetime: not a change.
    snap["routes"] = [re.sub(r" expires \d+sec", "", _run("ip", *family, "route", "show", "table", "all").stdout)
                      for family in (("-4",), ("-6",))]
    snap["forwarding"] = {
        str(path.relative_to("/proc/sys/net")): path.read_text().strip()
        for path in sorted([Path("/proc/sys/net/ipv4/ip_forward"),
                            *Path("/proc/sys/net/ipv4/conf").glob("*/forwarding"),
                            *Path("/proc/sys/net/ipv6/conf").glob("*/forwarding")])}
    snap["nftables"] = nftables_objects()
    for name in ("iptables-save", "ip6tables-save", "iptables-legacy-save", "ip6tables-legacy-save"):
        if shutil.which(name):
            out = _run(name, check=False)
            # Comment lines carry the time of the dump; [packets:bytes] counters move with traffic.
            lines = [re.sub(r"\[\d+:\d+\]", "", line) for line in out.stdout.splitlines() if not line.startswith("#")]
            snap[name] = lines if out.returncode == 0 else [f"exit {out.returncode}: {out.stderr.strip()}"]
    return snap


# nf_tables over netlink (linux/netfilter/nfnetlink.h, nf_tables.h): what `nft list ruleset` reads.
_NETLINK_NETFILTER = 12
_NFNL_SUBSYS_NFTABLES = 10
_NFT_GETTABLE, _NFT_GETCHAIN, _NFT_GETRULE, _NFT_GETSET = 1, 4, 7, 10
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NFPROTO = {1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge", 10: "ip6"}
# Expressions whose dump carries state that traffic moves (packet counts, quota used, last seen).
_STATEFUL_EXPRESSIONS = {"counter", "quota", "last"}


def _netlink_attributes(data: bytes) -> list[tuple[int, bytes]]:
    found, offset = [], 0
    while offset + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, offset)
        if length < 4:
            break
        found.append((kind & 0x3FFF, data[offset + 4:offset + length]))
        offset += (length + 3) & ~3
    return found


def _nft_dump(sock: socket.socket, message: int) -> list[tuple[str, dict[int, bytes]]]:
    """Every object of one kind, in every family: [(family, {attribute: value})]."""
    header = struct.pack("=LHHLL", 20, (_NFNL_SUBSYS_NFTABLES << 8) | message, _NLM_F_REQUEST | _NLM_F_DUMP, message, 0)
    sock.send(header + struct.pack("=BBH", 0, 0, 0))   # nfgenmsg: every family, version 0
    found = []
    while True:
        data, offset = sock.recv(1 << 20), 0
        while offset + 16 <= len(data):
            length, kind = struct.unpack_from("=LH", data, offset)
            body = data[offset + 16:offset + length]
            offset += (max(length, 16) + 3) & ~3
            if kind == _NLMSG_DONE:
                return found
            if kind == _NLMSG_ERROR:
                error = -struct.unpack_from("=i", body)[0]
                if error:
                    raise OSError(error, os.strerror(error))
                continue
            found.append((_NFPROTO.get(body[0], str(body[0])), dict(_netlink_attributes(body[4:]))))


def nftables_objects() -> list[str]:
    """Tables, chains (hook, policy), sets and rules of nf_tables in this namespace, one line each,
    sorted; a rule as its handle and a hash of its expressions without their counters. A rule
    added, removed or replaced changes the list; traffic does not."""
    def text(value: bytes) -> str:
        return value.rstrip(b"\0").decode(errors="replace")

    def handle(value: bytes | None) -> int:
        return struct.unpack(">Q", value)[0] if value else -1

    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_NETFILTER) as sock:
            tables, chains, sets, rules = (_nft_dump(sock, m) for m in (_NFT_GETTABLE, _NFT_GETCHAIN, _NFT_GETSET, _NFT_GETRULE))
    except OSError as exc:   # no nfnetlink/nf_tables in this kernel: nothing to compare but that
        return [f"nf_tables unavailable: {exc.strerror}"]
    found = [f"table {family} {text(a[1])} #{handle(a.get(4))}" for family, a in tables]
    found += [f"chain {family} {text(a[1])} {text(a[3])} #{handle(a.get(2))} hook={a.get(4, b'').hex()} "
              f"policy={a.get(5, b'').hex()} type={text(a.get(7, b''))}" for family, a in chains]
    found += [f"set {family} {text(a[1])} {text(a[2])} #{handle(a.get(16))}" for family, a in sets]
    for family, a in rules:
        digest = hashlib.sha256()
        for _, element in _netlink_attributes(a.get(4, b"")):
            expression = dict(_netlink_attributes(element))
            name = text(expression.get(1, b""))
            digest.update(name.encode() + b"\0")
            if name not in _STATEFUL_EXPRESSIONS:
                digest.update(expression.get(2, b"") + b"\0")
        found.append(f"rule {family} {text(a[1])} {text(a[2])} #{handle(a.get(3))} {digest.hexdigest()[:16]}")
    return sorted(found)


def listening_addresses(netns: str | None = None) -> set[tuple[str, int]]:
    """(address, port) of every listening TCP socket in a namespace (the host's when None)."""
    argv = ["ss", "-Hltn"]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    found = set()
    for line in _run(*argv).stdout.splitlines():
        local = line.split()[3]
        address, _, port = local.rpartition(":")
        found.add((address.strip("[]"), int(port)))
    return found


class TwoHostLab:
    """``with TwoHostLab() as lab:`` two namespaces, a veth pair and the engine in the server one."""

    def __init__(self, workdir: Path | None = None):
        self.id = secrets.token_hex(3)
        self.server_ns, self.client_ns = f"vkb-srv-{self.id}", f"vkb-cli-{self.id}"
        self.server_link, self.client_link = f"vkbs{self.id}", f"vkbc{self.id}"
        octet = random.randrange(0, 256)
        self.server_address, self.client_address = f"198.18.{octet}.1", f"198.18.{octet}.2"
        self.engine_port = random.randrange(20000, 30000)
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="vkbench-twohost-"))
        self.engine: subprocess.Popen | None = None
        self.base_env = containers_env()

    @property
    def docker_host(self) -> str:
        return f"tcp://{self.server_address}:{self.engine_port}"

    def client_env(self) -> dict[str, str]:
        """Environment of a client-namespace process: the remote engine, the server address."""
        env = {**os.environ, **self.base_env}
        env.update({"DOCKER_HOST": self.docker_host, "VKBENCH_SERVER_HOST": self.server_address})
        return env

    def in_client(self, argv: list[str]) -> list[str]:
        return ["nsenter", f"--net=/run/netns/{self.client_ns}", *argv]

    # -- setup / teardown ----------------------------------------------------------------------

    def __enter__(self) -> TwoHostLab:
        try:
            self._make_network()
            self._start_engine()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _make_network(self) -> None:
        for ns in (self.server_ns, self.client_ns):
            _run("ip", "netns", "add", ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        # Made in the server namespace, the peer moved to the client one: never in the host's.
        _run("ip", "-n", self.server_ns, "link", "add", self.server_link, "type", "veth", "peer", "name", self.client_link)
        _run("ip", "-n", self.server_ns, "link", "set", self.client_link, "netns", self.client_ns)
        for ns, link, address in ((self.server_ns, self.server_link, self.server_address),
                                  (self.client_ns, self.client_link, self.client_address)):
            _run("ip", "-n", ns, "addr", "add", f"{address}/30", "dev", link)
            _run("ip", "-n", ns, "link", "set", link, "up")

    def _start_engine(self) -> None:
        """podman's Docker API on the server namespace's address (nsenter: network only, so the
        service shares the host's mounts and podman state)."""
        env = {**os.environ, **self.base_env}
        env.pop("DOCKER_HOST", None)
        log = open(self.workdir / "podman-service.log", "ab")
        self.engine = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.server_ns}", "podman", "system", "service", "--time=0",
             f"tcp://{self.server_address}:{self.engine_port}"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True)
        log.close()
        deadline = time.monotonic() + ENGINE_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.engine.poll() is not None:
                raise RuntimeError(f"podman system service exited ({self.engine.returncode}); "
                                   f"see {self.workdir / 'podman-service.log'}")
            done = subprocess.run(self.in_client(["docker", "version", "--format", "{{.Server.Version}}"]),
                                  capture_output=True, text=True, env=self.client_env(), timeout=30)
            if done.returncode == 0 and done.stdout.strip():
                return
            time.sleep(0.5)
        raise RuntimeError(f"the engine did not answer at {self.docker_host} from the client namespace "
                           f"within {ENGINE_START_TIMEOUT_S:.0f} s")

    def close(self) -> None:
        if self.engine is not None and self.engine.poll() is None:
            self.engine.terminate()
            try:
                self.engine.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.engine.kill()
                self.engine.wait(timeout=30)
        self.engine = None
        for ns in (self.client_ns, self.server_ns):
            _run("ip", "netns", "del", ns, check=False)


# -- measuring --------------------------------------------------------------------------------

DEFAULT_CELL = {"tests": ["set", "get"], "pipeline": 16, "requests": 200000, "keyspace": 100000,
                "repetitions": 3, "warmup": 20000}


def run_cell(cell: dict, out: Path, *, lab: TwoHostLab | None, timeout: float = 900) -> list[dict]:
    """``vkbench run --backend compose --cell CELL``: in the client namespace against the lab's
    engine, or (lab None) on the host against the local engine. Returns the result files."""
    argv = [sys.executable, "-m", "vkbench", "run", "--backend", "compose", "--cell", json.dumps(cell),
            "--out", str(out), "--json"]
    if lab is None:
        env = {**os.environ, **containers_env()}
    else:
        env, argv = lab.client_env(), lab.in_client(argv)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"vkbench run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def medians(result: dict) -> dict[str, float]:
    return {test: block["rps"]["median"] for test, block in result["summary"].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cell", default="{}", help="JSON overrides of the measured cell (default: standalone, SET+GET, -P 16)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("needs root (network namespaces)")
    env = containers_env()
    cell = {**DEFAULT_CELL, "server": f"valkey:{_image_version(env)}", **json.loads(args.cell)}
    work = Path(tempfile.mkdtemp(prefix="vkbench-twohost-lab-"))
    one = run_cell(cell, work / "one-host", lab=None)[0]
    with TwoHostLab(work) as lab:
        two = run_cell(cell, work / "two-host", lab=lab)[0]
    one_rps, two_rps = medians(one), medians(two)
    figures = {test: {"one_host_rps": one_rps[test], "two_host_rps": two_rps[test],
                      "ratio": round(two_rps[test] / one_rps[test], 3)} for test in one_rps if test in two_rps}
    if args.json:
        print(json.dumps({"cell": cell, "figures": figures}, indent=2))
    else:
        print(f"cell: {json.dumps(cell)}")
        print(f"{'test':<6} {'one-host rps':>14} {'two-host rps':>14} {'two/one':>8}")
        for test, f in figures.items():
            print(f"{test:<6} {f['one_host_rps']:>14,.0f} {f['two_host_rps']:>14,.0f} {f['ratio']:>8.3f}")
    return 0


def _image_version(env: dict[str, str]) -> str:
    """The valkey version of the project's image (its tag): localhost/vkbench-valkey:8.0.1."""
    image = env.get("VALKEY_IMAGE", "")
    return image.rpartition(":")[2] or "8.0.1"


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "bench"))
    sys.exit(main())
