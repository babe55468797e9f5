"""A TLS cell whose server is built from source gets a BUILD_TLS=yes build: its configuration,
its cache key and alias (never shared with the plain build of the same commit), make's argv, what
the result records, and the threading from the cell through resolve (no compiler is run here)."""

from __future__ import annotations

import json

import pytest

from vkbench.servers import resolve, source_build
from vkbench.servers.resolve import resolve_server
from vkbench.servers.source_build import BuildConfig, alias_name, build_name

from .helpers import make_entry

URL = "file:///srv/valkey.git"
COMMIT = "c" * 40


@pytest.fixture
def build_env(monkeypatch):
    for name in ("VKBENCH_BUILD_TARGET", "VKBENCH_BUILD_CC", "VKBENCH_BUILD_MALLOC", "VKBENCH_BUILD_OPTIMIZATION",
                 "VKBENCH_BUILD_LTO", "VKBENCH_BUILD_CFLAGS", "VKBENCH_BUILD_TLS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(source_build, "_compiler", lambda cc: (cc, f"{cc} (Debian 12.2.0-14) 12.2.0"))
    monkeypatch.setenv("VKBENCH_VALKEY_GIT_URL", URL)
    return monkeypatch


def test_a_tls_cell_builds_with_build_tls_yes_and_a_plain_cell_does_not(build_env):
    plain, tls = BuildConfig.from_env(), BuildConfig.from_env(tls=True)
    assert (plain.tls, tls.tls) == (False, True)
    assert dict(plain.make_vars)["BUILD_TLS"] == "no" and dict(tls.make_vars)["BUILD_TLS"] == "yes"
    assert "BUILD_TLS=yes" in tls.make_args(source_build.Path("/w")) and "BUILD_TLS=no" in plain.make_args(source_build.Path("/w"))
    # Everything else is the same configuration.
    assert {k: v for k, v in tls.identity().items() if k != "make_vars"} == \
           {k: v for k, v in plain.identity().items() if k != "make_vars"}


def test_vkbench_build_tls_yes_still_forces_every_source_build(build_env):
    build_env.setenv("VKBENCH_BUILD_TLS", "yes")
    assert BuildConfig.from_env().tls and BuildConfig.from_env(tls=True).tls
    assert BuildConfig.from_env().config_id == BuildConfig.from_env(tls=True).config_id
    # "no" is the default for plain cells only: a TLS cell needs the TLS build.
    build_env.setenv("VKBENCH_BUILD_TLS", "no")
    assert not BuildConfig.from_env().tls and BuildConfig.from_env(tls=True).tls


def test_a_tls_and_a_plain_build_of_one_commit_never_share_a_cache_entry(build_env):
    plain, tls = BuildConfig.from_env(), BuildConfig.from_env(tls=True)
    assert plain.config_id != tls.config_id
    assert build_name(COMMIT, plain) != build_name(COMMIT, tls)
    assert alias_name("unstable", plain) == "unstable" and alias_name("unstable", tls) == "unstable+tls"
    assert alias_name("8.0@source", tls) == "8.0@source+tls"
    # "+" is not in any ref vkbench builds, so a TLS alias is never another ref's alias.
    from vkbench.servers.catalog import GIT_REF
    assert GIT_REF.match("unstable") and not GIT_REF.match("unstable+tls")
    # A cached plain alias does not count for a TLS cell, nor the other way round.
    plain_meta = {"source": "source-build", "code": {"url": URL}, "build_config": {"id": plain.config_id}}
    tls_meta = {"source": "source-build", "code": {"url": URL}, "build_config": {"id": tls.config_id}}
    assert source_build.alias_matches(plain_meta, URL, plain) and not source_build.alias_matches(plain_meta, URL, tls)
    assert source_build.alias_matches(tls_meta, URL, tls) and not source_build.alias_matches(tls_meta, URL, plain)


def test_fetch_writes_the_tls_build_under_its_own_alias_and_records_build_tls(build_env, cache_root):
    tls = BuildConfig.from_env(tls=True)
    build = make_entry(cache_root, "valkey", build_name(COMMIT, tls), {"valkey-server": "Valkey server v=255.255.255"},
                       source="source-build")
    meta = json.loads((build / "meta.json").read_text())
    meta.update({"code": {"url": URL, "commit": COMMIT}, "build_config": {"id": tls.config_id, **tls.identity()}})
    (build / "meta.json").write_text(json.dumps(meta))
    built_with = []
    build_env.setattr(source_build, "_require_tools", lambda: None)
    build_env.setattr(source_build.Mirror, "resolve", lambda self, ref: COMMIT)
    build_env.setattr(source_build, "build_commit",
                      lambda mirror, commit, ref, config, **kw: built_with.append(config) or build)
    entry = source_build.fetch("unstable", config=tls)
    assert entry == cache_root / "valkey" / "unstable+tls" and built_with == [tls]
    written = json.loads((entry / "meta.json").read_text())
    assert written["version"] == "unstable"            # the version as asked, not the alias
    assert written["build_config"]["make_vars"]["BUILD_TLS"] == "yes"
    assert "BUILD_TLS=yes" in written["detail"]
    assert not (cache_root / "valkey" / "unstable").exists()   # the plain alias is untouched


def _fake_fetch(cache_root, calls):
    def fetch(version, root=None, progress=None, url=None, config=None):
        calls.append((version, config.tls))
        alias = source_build.alias_name(version, config)
        entry = make_entry(cache_root, "valkey", alias, {"valkey-server": "Valkey server v=255.255.255"},
                           source="source-build")
        meta = json.loads((entry / "meta.json").read_text())
        meta.update({"version": version, "code": {"url": URL, "commit": COMMIT, "ref": version},
                     "build_config": {"id": config.config_id, **config.identity()}})
        (entry / "meta.json").write_text(json.dumps(meta))
        return entry
    return fetch


@pytest.mark.parametrize("version", ["unstable", "8.0.1@source"])
def test_resolve_server_with_tls_resolves_the_tls_build_and_caches_it_apart(build_env, cache_root, version):
    calls = []
    build_env.setattr(source_build, "fetch", _fake_fetch(cache_root, calls))
    tls_binary = resolve_server("valkey", version, tls=True)
    plain_binary = resolve_server("valkey", version)
    assert calls == [(version, True), (version, False)]
    assert tls_binary.path.parent.parent.name == f"{version}+tls" and plain_binary.path.parent.parent.name == version
    assert tls_binary.version == plain_binary.version == version
    # The result's build record says which one ran.
    assert tls_binary.as_build()["config"]["make_vars"]["BUILD_TLS"] == "yes"
    assert plain_binary.as_build()["config"]["make_vars"]["BUILD_TLS"] == "no"
    # Both are cached now: neither is built again, nor re-aliased by the other.
    assert resolve_server("valkey", version, tls=True).source == "cache"
    assert resolve_server("valkey", version).source == "cache"
    assert len(calls) == 2


def test_tls_does_not_change_a_release_or_an_explicit_path(build_env, cache_root, no_fetch, tmp_path):
    make_entry(cache_root, "valkey", "8.0.1", {"valkey-server": "Valkey server v=8.0.1"}, source="debian")
    assert resolve_server("valkey", "8.0.1", tls=True).path == cache_root / "valkey" / "8.0.1" / "bin" / "valkey-server"
    assert no_fetch == []


def test_fetch_false_names_the_tls_fetch_in_its_hint(build_env, cache_root, no_fetch):
    from vkbench.errors import MissingBinaryError

    with pytest.raises(MissingBinaryError) as caught:
        resolve_server("valkey", "unstable", fetch=False, tls=True)
    assert "unstable+tls" in str(caught.value) and "--tls" in caught.value.hint


class _Stop(Exception):
    pass


def test_the_native_backend_resolves_a_tls_cells_server_with_tls(monkeypatch):
    from vkbench.topology import native

    asked = []

    def fake_resolve(engine, version, **kwargs):
        asked.append((engine, version, kwargs.get("tls", False)))
        raise _Stop()

    monkeypatch.setattr(native, "resolve_server", fake_resolve)
    for tls in (object(), None):
        spec = type("Spec", (), {"engine": "valkey", "version": "unstable", "tls": tls})()
        with pytest.raises(_Stop), native.NativeBackend().deploy(spec):
            pass
    assert asked == [("valkey", "unstable", True), ("valkey", "unstable", False)]


def test_the_sessions_up_front_check_resolves_tls_and_plain_builds_of_one_version(monkeypatch, tmp_path):
    import vkbench.servers as servers
    from vkbench.matrix.cells import cell_from_arg
    from vkbench.runner import session

    asked = []

    def fake_resolve(engine, version, **kwargs):
        asked.append((engine, version, kwargs.get("tls", False)))
        if len(asked) == 2:
            raise _Stop()

    monkeypatch.setattr(servers, "resolve_server", fake_resolve)
    monkeypatch.setattr(servers, "resolve_tool", lambda name, **kw: object())
    monkeypatch.setattr(session, "cleanup_stale_workdirs", lambda: [])
    cells = [cell_from_arg('{"server": "valkey:unstable", "tls": true}'), cell_from_arg('{"server": "valkey:unstable"}')]
    with pytest.raises(_Stop):
        session.run_session(cells, session.RunOptions(out_dir=tmp_path / "out", state_dir=tmp_path / "state"))
    assert sorted(asked) == [("valkey", "unstable", False), ("valkey", "unstable", True)]


def test_servers_fetch_tls_fills_the_tls_build_and_list_tells_it_apart(build_env, cache_root, tmp_path):
    from click.testing import CliRunner

    from vkbench.cli.servers import servers_group

    calls = []
    build_env.setattr(source_build, "fetch", _fake_fetch(cache_root, calls))
    build_env.setenv("PATH", str(tmp_path / "empty"))
    result = CliRunner().invoke(servers_group, ["fetch", "valkey", "unstable", "--tls", "--json"])
    assert result.exit_code == 0, result.output
    (fetched,) = json.loads(result.stdout)
    assert calls == [("unstable", True)] and fetched["path"].endswith("/valkey/unstable+tls/bin/valkey-server")
    listed = CliRunner().invoke(servers_group, ["list", "--json"])
    versions = {r["version"] for r in json.loads(listed.output)["binaries"] if r["source"] == "source-build"}
    assert "unstable+tls" in versions
