import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers.catalog import known_versions, map_version
from vkbench.servers.inventory import aliases


def test_known_versions_newest_first():
    assert known_versions("valkey") == ["9.1.2", "9.1.1", "9.1.0", "9.0.0", "8.0.1"]
    assert known_versions("redis") == ["7.0.15"]


@pytest.mark.parametrize(
    ("engine", "given", "exact"),
    [
        ("valkey", "latest", "9.1.2"),
        ("valkey", "9.1", "9.1.2"),
        ("valkey", "9", "9.1.2"),
        ("valkey", "9.0", "9.0.0"),
        ("valkey", "8", "8.0.1"),
        ("redis", "latest", "7.0.15"),
        ("redis", "7.0", "7.0.15"),
        ("valkey", "9.1.1", "9.1.1"),          # exact stays
        ("valkey", "unstable", "unstable"),    # git refs stay
        ("valkey", "1a2b3c4d", "1a2b3c4d"),
    ],
)
def test_map_version(engine, given, exact):
    assert map_version(engine, given) == exact


def test_short_version_without_release_names_known_versions():
    with pytest.raises(MissingBinaryError) as err:
        map_version("valkey", "7.2")
    assert "7.2" in err.value.message
    assert "9.1.2" in err.value.hint


def test_unknown_engine():
    with pytest.raises(MissingBinaryError) as err:
        map_version("keydb", "6")
    assert "valkey" in err.value.hint


def test_aliases_follow_the_catalog():
    table = aliases()
    assert table["valkey:9.1"] == "9.1.2"
    assert table["valkey:latest"] == "9.1.2"
    assert table["redis:7"] == "7.0.15"
