"""The arm64 machine of the tests: tools/setup/arm64.sh's Debian bookworm arm64 image, run by the
project's podman (tools/containers-env.sh) under qemu-user emulation.

- ``aarch64_binfmt``: qemu's aarch64 handler in binfmt_misc for the session (tests/arm64/binfmt.py:
  an existing handler is used and kept; otherwise one is registered and only that one removed).
- ``arm64``: runs shell scripts in that image (``podman run --arch arm64``), with a work folder
  mounted at the same path in every container: the venv holding the vkbench wheel built from
  this checkout, vkbench's cache and the results live there, so later containers reuse them.

Skipped only where podman or qemu-user is absent (a machine without tools/setup.sh --test); a
missing image fails with the command that builds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .binfmt import Handler, aarch64_handler, qemu_interpreter

REPO = Path(__file__).resolve().parents[2]
#: Where the work folder appears inside every container.
WORK = "/vkbench-work"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _containers_env() -> dict[str, str]:
    state = Path(os.environ.get("VKBENCH_CONTAINERS_STATE", REPO / ".cache/containers"))
    env = dict(os.environ)
    env.setdefault("VKBENCH_CONTAINERS_STATE", str(state))
    env.setdefault("CONTAINERS_CONF", str(state / "containers.conf"))
    env.setdefault("CONTAINERS_STORAGE_CONF", str(state / "storage.conf"))
    return env


@pytest.fixture(scope="session")
def arm64_image() -> str:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (tools/setup/containers.sh installs it)")
    if qemu_interpreter() is None:
        pytest.skip("qemu-user-static is not installed (tools/setup/arm64.sh installs it)")
    env = _containers_env()
    marker = Path(env["VKBENCH_CONTAINERS_STATE"]) / "arm64-image"
    image = marker.read_text().strip() if marker.is_file() else ""
    if not image or subprocess.run(["podman", "image", "exists", image], env=env, timeout=120).returncode:
        pytest.fail("the arm64 test image is missing: run tools/setup/arm64.sh (tools/setup.sh --test does)")
    return image


@pytest.fixture(scope="session")
def aarch64_binfmt(arm64_image) -> Handler:
    from vkbench.servers import runs_here

    from .binfmt import AARCH64_HEADER, BINFMT_DIR
    if os.geteuid() != 0 and runs_here.binfmt_handler(AARCH64_HEADER, BINFMT_DIR) is None:
        pytest.skip("no aarch64 binfmt_misc handler is registered and registering one needs root")
    with aarch64_handler() as handler:
        yield handler


@pytest.fixture(scope="session")
def vkbench_wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout (sdist first, then the wheel from it: nothing written into the tree)."""
    dist = tmp_path_factory.mktemp("arm64-dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(REPO)],
                   cwd=REPO, check=True, capture_output=True, timeout=600)
    [wheel] = dist.glob("vkbench-*.whl")
    return wheel


@dataclass
class Arm64:
    image: str
    work: Path                         # mounted at WORK in every container
    handler: Handler
    env: dict[str, str] = field(default_factory=dict)

    def run(self, script: str, *, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        """``sh -euc script`` in a fresh container of the image (removed after, also on timeout)."""
        name = f"vkbench-arm64-{uuid.uuid4().hex[:10]}"
        cmd = ["podman", "run", "--rm", "--name", name, "--arch", "arm64", "--network", "host",
               "-v", f"{self.work}:{WORK}", "-w", WORK]
        if HOST_CA_BUNDLE.is_file():
            # The host's trust (a proxy's or a company's CA included) reaches PyPI and the mirror
            # as the host does, the way a Pi owner's machine trusts its own network.
            cmd += ["-v", f"{HOST_CA_BUNDLE}:/etc/ssl/certs/ca-certificates.crt:ro"]
        if not self.handler.fix_binary:
            # A handler without flag F opens its interpreter by path inside the container.
            cmd += ["-v", f"{self.handler.interpreter}:{self.handler.interpreter}:ro"]
        for key, value in {"HOME": f"{WORK}/home", "VKBENCH_CACHE": f"{WORK}/cache", **self.env, **(env or {})}.items():
            cmd += ["-e", f"{key}={value}"]
        cmd += [self.image, "/bin/sh", "-euc", script]
        try:
            return subprocess.run(cmd, env=_containers_env(), capture_output=True, text=True, timeout=timeout)
        finally:
            subprocess.run(["podman", "rm", "-f", "-t", "0", "--ignore", name], env=_containers_env(),
                           capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def arm64(arm64_image, aarch64_binfmt, vkbench_wheel, tmp_path_factory) -> Arm64:
    """The image with vkbench installed from the wheel into a venv in the work folder (system site
    packages: the image carries vkbench's dependencies as aarch64 wheels)."""
    work = tmp_path_factory.mktemp("arm64-work")
    shutil.copy2(vkbench_wheel, work / vkbench_wheel.name)
    machine = Arm64(arm64_image, work, aarch64_binfmt)
    proc = machine.run(
        f"python3 -m venv --system-site-packages --without-pip {WORK}/venv\n"
        f"{WORK}/venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-index "
        f"{WORK}/{vkbench_wheel.name}\n"
        f"{WORK}/venv/bin/vkbench --version\n"
        "uname -m\n", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "aarch64", proc.stdout
    machine.env["PATH"] = f"{WORK}/venv/bin:/usr/local/bin:/usr/bin:/bin"
    return machine
