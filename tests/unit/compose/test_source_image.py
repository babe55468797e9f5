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
