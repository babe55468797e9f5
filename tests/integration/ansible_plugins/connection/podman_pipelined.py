"""containers.podman's podman connection, made fast: pipelining over one persistent ``podman exec``.

The collection's plugin runs a new ``podman exec`` for every command (four to six per task: temp
dir, module, chmod, cleanup) and a ``podman mount`` at every connect, and turns pipelining off
(its exec has no ``-i``, so a module sent on standard input never arrives). Each podman call
starts the podman CLI, runc and a conmon: about 0.3 s idle, seconds on a loaded machine.

Here, like SSH's ControlPersist, the first command of a run starts a small relay on the
controller (this file run as a script) that keeps ONE ``podman exec -i <container> python3``
open; every later command and file transfer goes to it through a unix socket, and the
interpreter in the container runs ``/bin/sh -c CMD`` (or writes/reads the file) and answers.
Pipelining is on, so a module is one command. The relay ends when the container does, or after
``IDLE_TIMEOUT_S`` without a request. If it cannot start, commands fall back to the collection's
plain ``podman exec``.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time

IDLE_TIMEOUT_S = 120
AGENT = r"""
import base64, json, subprocess, sys
for line in sys.stdin:
    req = json.loads(line)
    try:
        if "put" in req:
            with open(req["put"], "wb") as f:
                f.write(base64.b64decode(req["data"]))
            res = {"rc": 0, "out": "", "err": ""}
        elif "fetch" in req:
            with open(req["fetch"], "rb") as f:
                res = {"rc": 0, "out": base64.b64encode(f.read()).decode(), "err": ""}
        else:
            p = subprocess.run(["/bin/sh", "-c", req["cmd"]], input=base64.b64decode(req["stdin"]),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            res = {"rc": p.returncode, "out": base64.b64encode(p.stdout).decode(),
                   "err": base64.b64encode(p.stderr).decode()}
    except OSError as exc:
        res = {"rc": 1, "out": "", "err": base64.b64encode(str(exc).encode()).decode()}
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()
"""


def _relay_main(sock_path: str, podman: str, container: str, python: str) -> None:
    """Hold one `podman exec -i` open; pass each socket client's request line through it."""
    agent = subprocess.Popen([podman, "exec", "-i", container, python, "-u", "-c", AGENT],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = f"{sock_path}.{os.getpid()}"
    server.bind(tmp)
    os.chmod(tmp, 0o600)
    os.replace(tmp, sock_path)          # appears complete: clients never see a half-made socket
    server.listen(8)
    server.settimeout(1.0)              # wake up to notice the container is gone
    last_request = time.monotonic()
    try:
        while agent.poll() is None:
            try:
                conn, _ = server.accept()
            except socket.timeout:
                if time.monotonic() - last_request > IDLE_TIMEOUT_S:
                    break
                continue
            last_request = time.monotonic()
            with conn, conn.makefile("rwb") as stream:
                request = stream.readline()
                if not request:
                    continue
                agent.stdin.write(request)
                agent.stdin.flush()
                answer = agent.stdout.readline()
                if not answer:
                    break
                stream.write(answer)
                stream.flush()
    finally:
        try:
            if os.path.exists(sock_path) and os.stat(sock_path).st_ino == os.fstat(server.fileno()).st_ino:
                os.unlink(sock_path)
        except OSError:
            pass
        server.close()
        if agent.poll() is None:
            agent.stdin.close()
            try:
                agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()


if __name__ == "__main__":
    _relay_main(*sys.argv[1:5])
    sys.exit(0)

# ---- the connection plugin (imported by Ansible) ---------------------------------------------

import hashlib  # noqa: E402
import shlex  # noqa: E402
import stat  # noqa: E402

from ansible.errors import AnsibleError  # noqa: E402
from ansible.module_utils.common.process import get_bin_path  # noqa: E402
from ansible.module_utils.common.text.converters import to_bytes, to_native  # noqa: E402
from ansible.plugins.connection import ConnectionBase, ensure_connect  # noqa: E402
from ansible_collections.containers.podman.plugins.connection import podman  # noqa: E402

DOCUMENTATION = podman.DOCUMENTATION.replace("name: podman\n", "name: podman_pipelined\n", 1)
RELAY_START_TIMEOUT_S = 60
#: sockaddr_un's sun_path on Linux: 108 bytes with the terminating NUL.
SUN_PATH_MAX = 107
AGENT_PYTHON = "/usr/bin/python3"     # Debian's; the targets here are Debian and Ubuntu


class Connection(podman.Connection):
    transport = "podman_pipelined"
    has_pipelining = True

    def _connect(self):
        ConnectionBase._connect(self)
        self._mount_point = None        # no `podman mount`: files go through the relay
        self._connected = True
        return self

    # -- the relay ------------------------------------------------------------------------------

    def _relay_socket(self) -> str:
        base = os.environ.get("ANSIBLE_LOCAL_TEMP") or "/tmp"
        base = os.path.expanduser(base)
        os.makedirs(base, mode=0o700, exist_ok=True)
        path = os.path.join(base, f"podman-relay-{self._container_id}.sock")
        if len(os.fsencode(path)) + 8 <= SUN_PATH_MAX:     # the relay binds "<path>.<pid>" first
            return path
        # Too long for a unix socket (pytest-xdist's per-worker temp folders are deeper): the
        # bind fails, and every command would wait RELAY_START_TIMEOUT_S for a relay that died.
        # A short private folder instead, and a name every worker process of this run derives alike.
        short = os.path.join("/tmp", f"vkbench-relay-{os.getuid()}")
        os.makedirs(short, mode=0o700, exist_ok=True)
        info = os.lstat(short)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise AnsibleError(f"{short}: not a private folder of this user; remove it")
        return os.path.join(short, hashlib.sha256(os.fsencode(path)).hexdigest()[:20] + ".sock")

    def _relay(self, request: dict) -> dict | None:
        """Send one request through the relay (starting it if needed); None if unavailable."""
        path = self._relay_socket()
        for attempt in range(2):
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.connect(path)
                    with sock.makefile("rwb") as stream:
                        stream.write(json.dumps(request).encode() + b"\n")
                        stream.flush()
                        answer = stream.readline()
                if answer:
                    return json.loads(answer)
            except (FileNotFoundError, ConnectionRefusedError):
                pass
            if attempt == 0 and not self._start_relay(path):
                return None
        return None

    def _start_relay(self, path: str) -> bool:
        try:
            podman_cmd = get_bin_path(self.get_option("podman_executable"))
        except ValueError:
            return False
        relay = subprocess.Popen([sys.executable, __file__, path, podman_cmd, self._container_id, AGENT_PYTHON],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True, close_fds=True)
        deadline = time.monotonic() + RELAY_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if os.path.exists(path):
                return True
            if relay.poll() is not None:      # it died (could not bind, no podman): fall back now
                return False
            time.sleep(0.05)
        return False

    # -- the connection API ---------------------------------------------------------------------

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        if not self.user:
            answer = self._relay({"cmd": to_native(cmd, errors="surrogate_or_strict"),
                                  "stdin": base64.b64encode(to_bytes(in_data or b"")).decode()})
            if answer is not None:
                return answer["rc"], base64.b64decode(answer["out"]), base64.b64decode(answer["err"])
        exec_args = ["exec"]
        if in_data is not None:
            exec_args.append("-i")      # keep stdin open: the pipelined module arrives on it
        if self.user:
            exec_args += ["--user", self.user]
        return self._podman(exec_args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)

    def put_file(self, in_path, out_path):
        ConnectionBase.put_file(self, in_path, out_path)
        if not self.user:
            with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as f:
                data = base64.b64encode(f.read()).decode()
            answer = self._relay({"put": to_native(out_path), "data": data})
            if answer is not None:
                if answer["rc"] != 0:
                    raise AnsibleError(f"cannot write {out_path} in {self._container_id}: "
                                       f"{base64.b64decode(answer['err']).decode(errors='replace')}")
                return
        super().put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        ConnectionBase.fetch_file(self, in_path, out_path)
        if not self.user:
            answer = self._relay({"fetch": to_native(in_path)})
            if answer is not None:
                if answer["rc"] != 0:
                    raise AnsibleError(f"cannot read {in_path} in {self._container_id}: "
                                       f"{base64.b64decode(answer['err']).decode(errors='replace')}")
                with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as f:
                    f.write(base64.b64decode(answer["out"]))
                return
        super().fetch_file(in_path, out_path)
