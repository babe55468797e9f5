"""The counted server's config follows the method: a real valkey-server, pinned as the
instruction count pins it (natively: what the config says does not depend on valgrind)."""

from __future__ import annotations

import os
import secrets
import shutil

import pytest

from vkbench.instruments.method import InstructionsMethod
from vkbench.instruments.valgrind import PinnedServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server():
    # the machine kind runs tests as root with util-linux's unshare: without them the pinning
    # itself is broken, which is a failure, not a skip
    assert shutil.which("unshare") is not None, "unshare (util-linux) is missing: apt-get install util-linux"
    assert os.geteuid() == 0, "the pinning's mount namespace needs root: run the tests as root"
    from vkbench.servers import resolve_server

    return resolve_server("valkey", "9.1.2")


@pytest.mark.parametrize("slowlog, expected", [(False, b"-1"), (True, b"10000")])
def test_the_slow_log_is_off_unless_the_method_keeps_it(server, tmp_path, slowlog, expected):
    """Off, no command is logged however long valgrind and the machine's load make it take
    (issue 19's run-to-run drift); kept, the server's default threshold (10 ms) stays."""
    password = secrets.token_urlsafe(16)
    with PinnedServer(server.path, tmp_path / "server", seed=1, method=InstructionsMethod(slowlog=slowlog),
                      password=password, env=dict(server.env)) as pinned:
        with pinned.client() as conn:
            reply = conn.execute_command("CONFIG", "GET", "slowlog-log-slower-than")
    assert reply[1] == expected
