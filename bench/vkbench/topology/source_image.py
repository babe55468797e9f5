"""A local container image of a cached source build, so the compose backend runs what was built.

``localhost/vkbench-valkey:src-<sha12>-<config id>``: the build's unstripped binaries in
/usr/bin, every shared library ``ldd`` lists, /bin/sh and sleep (the stack's start script and
healthchecks), made with ``docker import`` from a tar (no registry, no base image, about a
second). Labels name the repository and commit. Made once per build; later runs reuse it.

:func:`check_identity` is the guard both backends run after start: a server that reports another
version or commit than the cell asked for is refused, never benchmarked under the wrong name.
"""

from __future__ import annotations

import io
import platform
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from ..errors import ContainerEngineError, ServerStartError
from ..servers.binary import Binary

IMAGE_REPO = "localhost/vkbench-valkey"
IMPORT_TIMEOUT_S = 300
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")


def image_tag(binary: Binary) -> str:
    code, config = binary.code or {}, binary.config or {}
    return f"{IMAGE_REPO}:src-{code.get('commit', 'unknown')[:12]}-{config.get('id', 'unknown')}"


def _libraries(paths: list[Path]) -> list[Path]:
    found: set[str] = set()
    for path in paths:
        done = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=30)
        found.update(re.findall(r"(/\S+)", done.stdout))
    return [Path(p) for p in sorted(found) if Path(p).exists()]


def _rootfs_tar(binary: Binary) -> bytes:
    bin_dir = binary.path.parent
    binaries = [bin_dir / n for n in ("valkey-server", "valkey-cli", "valkey-benchmark") if (bin_dir / n).is_file()]
    helpers = [Path(p) for p in (shutil.which("sh") or "/bin/sh", shutil.which("sleep") or "/bin/sleep")]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        def add_dir(name: str, mode: int = 0o755) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)

        for name in ("usr", "usr/bin", "bin", "data", "etc"):
            add_dir(name)
        add_dir("tmp", 0o1777)
        for path in binaries:
            tar.add(str(path.resolve()), arcname=f"usr/bin/{path.name}")
        for path in helpers:
            tar.add(str(path.resolve()), arcname=f"bin/{path.name}")
        for lib in _libraries(binaries + helpers):
            tar.add(str(lib.resolve()), arcname=str(lib).lstrip("/"))
        passwd = b"root:x:0:0:root:/data:/bin/sh\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    return buffer.getvalue()


def ensure_image(binary: Binary, docker, *, engine_arch: str | None = None) -> str:
    """The tag of the image of ``binary``'s build (made now when the engine does not have it).

    ``engine_arch``: the architecture of a remote engine (None: the engine runs on this
    machine). The image holds this machine's binaries and libraries, so an engine of another
    architecture is refused: it could not run them, or would run them emulated and slow."""
    tag = image_tag(binary)
    built_for = (binary.config or {}).get("arch") or platform.machine()
    if engine_arch is not None and engine_arch != built_for:
        raise ContainerEngineError(
            f"the container engine is a remote {engine_arch} machine; the source build {tag} holds this "
            f"machine's {built_for} binaries",
            hint="run vkbench on the engine's machine (it builds there), use an engine of this machine's "
            "architecture, or benchmark a release (its official image is multi-architecture)")
    if docker.run("image", "inspect", "--format", "{{.Id}}", tag, timeout=60, check=False).returncode == 0:
        return tag
    code = binary.code or {}
    args = ["docker", "import",
            "--change", "WORKDIR /data", "--change", 'CMD ["valkey-server"]',
            "--change", f"LABEL org.opencontainers.image.source={code.get('url', '')}",
            "--change", f"LABEL org.opencontainers.image.revision={code.get('commit', '')}",
            "--change", f"LABEL org.opencontainers.image.version={code.get('ref', '')}",
            "-", tag]
    try:
        done = subprocess.run(args, input=_rootfs_tar(binary), capture_output=True, timeout=IMPORT_TIMEOUT_S,
                              env=docker.env, start_new_session=True)
    except subprocess.TimeoutExpired:
        raise ContainerEngineError(f"docker import {tag} did not finish within {IMPORT_TIMEOUT_S} s",
                                   hint="is the engine overloaded?") from None
    if done.returncode != 0:
        raise ContainerEngineError(f"docker import {tag} failed: {done.stderr.decode(errors='replace')[-400:]}",
                                   hint="check the container engine (tools/setup/containers.sh)")
    return tag


def check_identity(engine: str, version: str, reported_version: str | None, reported_commit: str | None,
                   code: dict | None, where: str) -> None:
    """Refuse a server that is not what the cell asked for (release version, or source commit)."""
    if code and code.get("commit") and reported_commit and not code["commit"].startswith(reported_commit.lower()):
        raise ServerStartError(
            f"{where} runs {engine} commit {reported_commit}, the cell asks for {version} = {code['commit'][:12]}",
            hint="the image or binary is not the build that was asked for; remove it and run again",
        )
    if code and code.get("commit") and not reported_commit:
        raise ServerStartError(
            f"{where} reports no commit, the cell asks for {version} = {code['commit'][:12]}",
            hint="a release image answered where a source build was expected; unset VALKEY_IMAGE for source versions",
        )
    if _RELEASE.match(version) and reported_version and not (
            reported_version == version or reported_version.startswith(version + ".")):
        raise ServerStartError(
            f"{where} runs {engine} {reported_version}, the cell asks for {version}",
            hint="set VALKEY_IMAGE (or ComposeBackend(image=...)) to an image of that version, or unset it",
        )
