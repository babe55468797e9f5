"""The result schema is read by json.load, which keeps the last of two equal keys without a word:
a duplicated property would silently replace the first one's definition."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "results" / "schema"


def _keys_once(pairs: list[tuple[str, object]]) -> dict:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    assert not repeated, f"keys defined twice in one object: {repeated}"
    return dict(pairs)


def test_no_schema_object_defines_a_key_twice():
    schemas = sorted(SCHEMA_DIR.glob("*.json"))
    assert schemas
    for path in schemas:
        json.loads(path.read_text(), object_pairs_hook=_keys_once)


def test_record_keeps_every_memtier_field_once():
    record = json.loads((SCHEMA_DIR / "result-v1.schema.json").read_text())["$defs"]["record"]["properties"]
    assert {"hits_per_s", "misses_per_s", "kb_per_s"} <= set(record)
    assert {"p90", "p9999"} <= set(record["latency_ms"]["properties"])
