"""The nightly-datatypes preset (issue 20): catalog specs beside (or instead of) a matrix's
groups, every data-type group covered, every spec runnable here, CLI overrides applied."""

from __future__ import annotations

import pytest

from vkbench.errors import ConfigError, UsageError
from vkbench.matrix.expand import expand_matrix, load_matrix
from vkbench.matrix.model import MatrixFile

DATA_TYPE_GROUPS = {"string", "hash", "list", "set", "sorted-set", "stream", "bitmap", "hyperloglog", "geo",
                    "scripting", "transactions", "pubsub", "generic"}


def test_nightly_datatypes_covers_every_group_with_runnable_specs():
    cells = expand_matrix(load_matrix("nightly-datatypes"))
    assert len(cells) == 21 and all(c.catalog and c.tool == "memtier_benchmark" for c in cells)
    assert {g for c in cells for g in c.catalog.groups} >= DATA_TYPE_GROUPS
    assert all(c.duration == 30 and c.repetitions == 3 and c.topology == "standalone" for c in cells)
    assert all(c.catalog.spec_duration and c.catalog.spec_duration > 30 for c in cells)
    # at most two specs per group, so a runner class finishes it in a night
    for group in DATA_TYPE_GROUPS:
        assert 1 <= sum(group in c.catalog.groups for c in cells) <= 3, group


def test_cli_overrides_and_runners_reach_catalog_cells():
    cells = expand_matrix(load_matrix("nightly-datatypes"),
                          overrides={"duration": 2, "repetitions": 1, "server": ["valkey:9.0.0"],
                                     "runner": ["pi-cm4", "cloud-x86"]})
    assert len(cells) == 42 and {c.runner for c in cells} == {"pi-cm4", "cloud-x86"}
    assert all(c.duration == 2 and c.repetitions == 1 and c.server == "valkey:9.0.0" for c in cells)
    with pytest.raises(UsageError, match="cannot apply to catalog specs"):
        expand_matrix(load_matrix("nightly-datatypes"), overrides={"pipeline": 4})


def test_a_matrix_with_groups_and_specs_and_a_refused_spec():
    both = MatrixFile.model_validate({"name": "both", "groups": [{"server": "valkey:9.1.2"}],
                                      "catalog": {"specs": ["memtier_benchmark-1key-geo-2-elements-geopos"]}})
    cells = expand_matrix(both)
    assert [bool(c.catalog) for c in cells] == [False, True]
    refused = MatrixFile.model_validate({"name": "bad", "catalog": {"specs": ["memtier_benchmark-array-arget-1K-random"]}})
    with pytest.raises(ConfigError, match="memtier_benchmark-array-arget-1K-random: command not in Valkey"):
        expand_matrix(refused)
    with pytest.raises(UsageError, match="no spec named nope"):
        expand_matrix(MatrixFile.model_validate({"name": "x", "catalog": {"specs": ["nope"]}}))
    with pytest.raises(ValueError, match="groups, or catalog specs"):
        MatrixFile.model_validate({"name": "empty"})
