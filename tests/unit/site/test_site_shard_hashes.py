"""An incremental `vkbench site build` hashes every shard: a shard edited in place to the same
size is refused (exit 7 naming it) when index.json records its sha256 (history v2), and is
rebuilt from its shards, never kept, when the index has no digests to check it by (v1)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

from factory import make_result, write_result  # noqa: E402

import history_factory  # noqa: E402  (tests/browser, on the path through conftest.py)

from vkbench.history.ingest import ingest  # noqa: E402

from vkbench.history.store import HistoryStore  # noqa: E402
from vkbench.site.build import build_site  # noqa: E402
from cli_outcome import vk  # tests/cli_outcome.py


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def same_size_edit(path: Path) -> None:
    """One digit of the first rps median changed: valid JSON, same size, same line count."""
    data = path.read_bytes()
    at = data.index(b'"median":') + len(b'"median":')
    while not data[at:at + 1].isdigit():
        at += 1
    digit = b"2" if data[at:at + 1] == b"1" else b"1"
    path.write_bytes(data[:at] + digit + data[at + 1:])
    assert len(path.read_bytes()) == len(data)


@pytest.fixture
def v2_history(tmp_path) -> Path:
    """Ingested by vkbench (history v2: index.json records each shard's sha256), two months."""
    for i in range(6):
        write_result(tmp_path / "res", make_result(run_id=f"night-{i}", timestamp=f"2026-{10 + i // 3}-{1 + i:02d}T02:00:00Z",
                                                   rps={"SET": 4e5 + i, "GET": 4.5e5 - i}))
    ingest(HistoryStore(tmp_path / "history"), [tmp_path / "res"])
    return tmp_path / "history"


@pytest.mark.parametrize("month", ["2026-10", "2026-11"], ids=["older-shard", "newest-shard"])
def test_incremental_build_refuses_a_shard_edited_to_the_same_size(v2_history, tmp_path, month):
    site = tmp_path / "site"
    assert build_site(v2_history, site).mode == "full"
    assert build_site(v2_history, site).mode == "incremental"       # the manifest is there
    store = HistoryStore(v2_history)
    shard = store.shard_path(store.series_ids()[0], month)
    same_size_edit(shard)
    before = tree_hash(site)
    code, text = vk("site", "build", "--history", v2_history, "--out", site, "--no-reference")
    assert code == 7, text
    assert str(shard) in text and "does not match index.json" in text
    assert tree_hash(site) == before, "the previous site changed"


def test_an_appended_nightly_is_still_extended_not_rebuilt(v2_history, tmp_path):
    site = tmp_path / "site"
    build_site(v2_history, site)
    write_result(tmp_path / "res2", make_result(run_id="night-9", timestamp="2026-11-20T02:00:00Z"))
    ingest(HistoryStore(v2_history), [tmp_path / "res2"])
    report = build_site(v2_history, site)
    assert (report.mode, report.appended, report.rebuilt, report.kept) == ("incremental", 2, 0, 0)


def test_version_1_history_rebuilds_a_series_edited_to_the_same_size(tmp_path):
    """No digests in a v1 index: the edit cannot be told from a legitimate rewrite, so the
    series is rebuilt from its shards (points counted against the index), never kept."""
    root = tmp_path / "history"
    facts = history_factory.write_history(root)
    site, full = tmp_path / "site", tmp_path / "full"
    build_site(root, site, reference_dir=None)
    sid = sorted(facts["sids"])[0]
    same_size_edit(root / "series" / sid[:2] / sid / "2026-10.jsonl")
    report = build_site(root, site, reference_dir=None)
    assert report.mode == "incremental" and report.rebuilt == 1 and report.kept == len(facts["sids"]) - 1
    build_site(root, full, reference_dir=None, full=True)
    for name in ("series", ):
        a, b = site / "data" / name / f"{sid}.json", full / "data" / name / f"{sid}.json"
        assert a.read_bytes() == b.read_bytes()
