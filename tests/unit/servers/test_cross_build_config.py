"""VKBENCH_BUILD_TARGET: a cross build's configuration, what it records, and when a machine
without the cross compiler still uses the build it was given (no compiler is run here)."""

from __future__ import annotations

import platform

import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers import source_build
from vkbench.servers.source_build import BuildConfig, alias_matches

URL = "file:///srv/valkey.git"


@pytest.fixture
def clean_build_env(monkeypatch):
    for name in ("VKBENCH_BUILD_TARGET", "VKBENCH_BUILD_CC", "VKBENCH_BUILD_MALLOC", "VKBENCH_BUILD_OPTIMIZATION",
                 "VKBENCH_BUILD_LTO", "VKBENCH_BUILD_CFLAGS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(source_build, "_compiler", lambda cc: (cc, f"{cc} (Debian 12.2.0-14) 12.2.0"))
    return monkeypatch


def test_the_native_configuration_is_unchanged_by_the_target_option(clean_build_env):
    config = BuildConfig.from_env()
    assert config.target == "" and config.cc == "cc" and not config.cross
    assert config.identity()["arch"] == platform.machine()
    assert dict(config.make_vars) == {"BUILD_TLS": "no", "USE_SYSTEMD": "no"}


def test_aarch64_target_uses_debians_cross_toolchain_and_records_the_target(clean_build_env):
    clean_build_env.setenv("VKBENCH_BUILD_TARGET", "aarch64")
    config = BuildConfig.from_env()
    assert config.cc == "aarch64-linux-gnu-gcc" and config.arch == "aarch64"
    assert config.cross == (platform.machine() != "aarch64")
    identity = config.identity()
    assert identity["arch"] == "aarch64"
    assert identity["make_vars"] == {"BUILD_TLS": "no", "USE_SYSTEMD": "no", "AR": "aarch64-linux-gnu-ar",
                                     "RANLIB": "aarch64-linux-gnu-ranlib", "uname_M": "aarch64"}
    args = config.make_args(source_build.Path("/w"))
    assert "CC=aarch64-linux-gnu-gcc" in args and "uname_M=aarch64" in args
    clean_build_env.delenv("VKBENCH_BUILD_TARGET")
    assert BuildConfig.from_env().config_id != config.config_id


def test_an_unknown_target_is_refused_with_the_known_ones(clean_build_env):
    clean_build_env.setenv("VKBENCH_BUILD_TARGET", "mips")
    with pytest.raises(MissingBinaryError) as info:
        BuildConfig.from_env()
    assert "aarch64" in info.value.hint


def _alias_meta(config: BuildConfig, url: str = URL) -> dict:
    return {"source": "source-build", "code": {"url": url},
            "build_config": {"id": config.config_id, **config.identity(), "source_date_epoch": 1, "ccache": True}}


def test_a_machine_without_the_cross_compiler_uses_the_build_of_the_same_configuration(clean_build_env):
    clean_build_env.setenv("VKBENCH_BUILD_TARGET", "aarch64")
    built_on_host = BuildConfig.from_env()
    meta = _alias_meta(built_on_host)
    host_id = built_on_host.config_id
    # On the arm64 machine the compiler is absent: its version reads "unknown", the id differs.
    clean_build_env.setattr(source_build, "_compiler", lambda cc: (cc, "unknown"))
    here = BuildConfig.from_env()
    assert here.config_id != host_id
    clean_build_env.setattr(source_build.shutil, "which", lambda name: None)
    assert alias_matches(meta, URL, here)
    assert not alias_matches(meta, "file:///elsewhere.git", here)
    clean_build_env.setenv("VKBENCH_BUILD_MALLOC", "jemalloc")
    assert not alias_matches(meta, URL, BuildConfig.from_env())       # another configuration: rebuild


def test_a_machine_with_the_compiler_of_another_version_rebuilds(clean_build_env):
    clean_build_env.setenv("VKBENCH_BUILD_TARGET", "aarch64")
    meta = _alias_meta(BuildConfig.from_env())
    clean_build_env.setattr(source_build, "_compiler", lambda cc: (cc, f"{cc} 13.1"))
    clean_build_env.setattr(source_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert not alias_matches(meta, URL, BuildConfig.from_env())
