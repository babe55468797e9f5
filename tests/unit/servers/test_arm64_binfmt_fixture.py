"""The arm64 tests' binfmt_misc handling (tests/arm64/binfmt.py) against a stand-in folder: an
existing aarch64 handler is used and kept; otherwise exactly one entry of its own is registered
(flag F, so it works inside containers) and only that one is removed."""

from __future__ import annotations

from arm64.binfmt import AARCH64_HEADER, aarch64_handler, registration_line  # tests/ is on sys.path
from vkbench.servers import runs_here

EXISTING = ("enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POCF\noffset 0\n"
            "magic 7f454c460201010000000000000000000200b700\nmask ffffffffffffff00fffffffffffffffffeffffff\n")


def _binfmt(tmp_path):
    (tmp_path / "register").write_text("")
    (tmp_path / "status").write_text("enabled\n")
    return tmp_path


def test_an_existing_handler_is_used_and_never_removed(tmp_path):
    directory = _binfmt(tmp_path)
    (directory / "qemu-aarch64").write_text(EXISTING)
    assert runs_here.binfmt_handler(AARCH64_HEADER, directory) == "/usr/libexec/qemu-binfmt/aarch64-binfmt-P"
    with aarch64_handler(directory) as handler:
        assert not handler.ours and handler.fix_binary
    assert (directory / "qemu-aarch64").read_text() == EXISTING
    assert (directory / "register").read_text() == ""          # nothing registered


def test_a_disabled_handler_does_not_count_and_its_own_entry_is_registered(tmp_path):
    directory = _binfmt(tmp_path)
    (directory / "qemu-aarch64").write_text(EXISTING.replace("enabled", "disabled"))
    with aarch64_handler(directory) as handler:
        assert handler.ours and handler.fix_binary
        line = (directory / "register").read_text()
    name = line.split(":")[1]
    assert name.startswith("vkbench-test-aarch64-") and "F" in line.split(":")[7]
    assert (directory / "qemu-aarch64").exists()                # another's entry is left alone


def test_the_registration_line_is_named_and_fixes_the_binary():
    line = registration_line("vkbench-test-aarch64-1")
    fields = line.split(":")
    assert len(fields) == 8 and fields[1] == "vkbench-test-aarch64-1" and fields[2] == "M" and "F" in fields[7]
    assert "\\xb7" in fields[4]
