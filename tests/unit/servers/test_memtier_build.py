"""The memtier recipe's checks that need no build: the archive's sha256 and the patches."""

from __future__ import annotations

from pathlib import Path

import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers import memtier_build

REPO = Path(__file__).resolve().parents[3]


def test_an_archive_with_another_sha256_is_refused(tmp_path):
    fake = tmp_path / "memtier_benchmark-2.3.0.tar.gz"
    fake.write_bytes(b"not the release")
    with pytest.raises(MissingBinaryError, match="expected c093d855"):
        memtier_build.verify(fake, str(fake))


def test_source_defaults_to_github_and_takes_the_environment(monkeypatch):
    monkeypatch.delenv("VKBENCH_MEMTIER_SOURCE", raising=False)
    assert memtier_build.source().startswith("https://github.com/RedisLabs/memtier_benchmark/")
    monkeypatch.setenv("VKBENCH_MEMTIER_SOURCE", "/somewhere/memtier_benchmark-2.3.0.tar.gz")
    assert memtier_build.source() == "/somewhere/memtier_benchmark-2.3.0.tar.gz"


def test_patches_ship_with_the_package_and_match_the_image_copies():
    patches = dict(memtier_build.patches())
    assert set(patches) == {"memtier-2.3.0-totals-latency.patch", "memtier-2.3.0-timestamp-average.patch"}
    for name, body in patches.items():
        assert (REPO / "compose" / "images" / "memtier-patches" / name).read_bytes() == body
        assert b"--- a/" in body and b"+++ b/" in body
    dockerfile = (REPO / "compose" / "images" / "bench.Dockerfile").read_text()
    assert memtier_build.MEMTIER_SHA256 in dockerfile
