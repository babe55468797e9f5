"""Reading what an ELF file needs (architecture, loader, libraries, glibc) without running it."""

import platform
import sys
from pathlib import Path

import pytest

from vkbench.servers import elf

from .elf_fixtures import build_elf, static_elf


def test_dynamic_aarch64_binary():
    info = elf.parse(build_elf("aarch64"))
    assert info.machine == "aarch64" and info.bits == 64
    assert info.interpreter == "/lib/ld-linux-aarch64.so.1" and not info.static
    assert info.needed == ("libm.so.6", "libc.so.6")
    # 2.38 beats 2.4 and 2.17: versions compare as numbers.
    assert info.glibc_needed == "2.38"


def test_big_endian_and_other_machine():
    info = elf.parse(build_elf(62, glibc_versions=("GLIBC_2.2.5", "GLIBC_2.34"), big_endian=True))
    assert info.machine == "x86_64" and info.glibc_needed == "2.34"


def test_static_binary_needs_nothing():
    info = elf.parse(static_elf("x86_64"))
    assert info.static and info.needed == () and info.glibc_needed is None and info.machine == "x86_64"


def test_non_glibc_versions_are_ignored():
    info = elf.parse(build_elf(glibc_versions=("GLIBC_PRIVATE", "OPENSSL_3.0.0", "GLIBC_2.17")))
    assert info.glibc_needed == "2.17"


def test_unknown_machine_is_named():
    assert elf.parse(build_elf(999)).machine == "e_machine 999"


@pytest.mark.parametrize("data", [b"", b"#!/bin/sh\necho hi\n" * 10, b"\x7fELF" + b"\x09" * 60])
def test_not_elf(data):
    with pytest.raises(elf.ElfError):
        elf.parse(data)


def test_truncated_headers_are_refused():
    data = build_elf()
    with pytest.raises(elf.ElfError):
        elf.parse(data[:80])       # the program headers point past the end


def test_real_interpreter_of_this_machine():
    """The Python running the tests is an ELF of this machine's architecture."""
    path = Path(sys.executable).resolve()
    info = elf.read(path)
    assert info.machine == elf.normalize_machine(platform.machine())


def test_version_key_and_aliases():
    assert elf.version_key("2.38") > elf.version_key("2.4")
    assert elf.normalize_machine("arm64") == "aarch64" and elf.normalize_machine("AMD64") == "x86_64"
