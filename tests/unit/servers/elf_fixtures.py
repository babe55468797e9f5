"""Small ELF files built byte by byte: any architecture, loader, libraries and glibc versions.

Each has the parts ``vkbench.servers.elf`` reads (ELF header, PT_LOAD, PT_INTERP, PT_DYNAMIC with
DT_NEEDED/DT_STRTAB/DT_VERNEED, one Elf_Verneed record for libc.so.6) and no code: they are never
run, only read.
"""

from __future__ import annotations

import struct

EM = {"x86_64": 62, "aarch64": 183}


def build_elf(machine: str = "aarch64", *, interpreter: str | None = "/lib/ld-linux-aarch64.so.1",
              needed: tuple[str, ...] = ("libm.so.6", "libc.so.6"),
              glibc_versions: tuple[str, ...] = ("GLIBC_2.17", "GLIBC_2.38", "GLIBC_2.4"),
              big_endian: bool = False) -> bytes:
    end = ">" if big_endian else "<"
    base = 0x400000                      # vaddr of file offset 0 (one PT_LOAD maps the whole file)
    ehsize, phentsize = 64, 56
    headers = [t for t in ("load", "interp" if interpreter else None, "dynamic" if needed or glibc_versions else None) if t]
    phoff = ehsize
    after_headers = phoff + phentsize * len(headers)

    # String table: "\0" + names.
    strtab = b"\x00"
    offsets: dict[str, int] = {}
    for name in (*needed, "libc.so.6", *glibc_versions):
        if name not in offsets:
            offsets[name] = len(strtab)
            strtab += name.encode() + b"\x00"
    interp_bytes = (interpreter.encode() + b"\x00") if interpreter else b""

    interp_off = after_headers
    strtab_off = interp_off + len(interp_bytes)
    verneed_off = (strtab_off + len(strtab) + 7) & ~7
    verneed = b""
    if glibc_versions:
        aux = b""
        for index, version in enumerate(glibc_versions):
            last = index == len(glibc_versions) - 1
            aux += struct.pack(end + "IHHII", 0, 0, index + 2, offsets[version], 0 if last else 16)
        verneed = struct.pack(end + "HHIII", 1, len(glibc_versions), offsets["libc.so.6"], 16, 0) + aux
    dynamic_off = (verneed_off + len(verneed) + 7) & ~7
    entries = [(1, offsets[n]) for n in needed] + [(5, base + strtab_off), (10, len(strtab))]
    if glibc_versions:
        entries += [(0x6FFFFFFE, base + verneed_off), (0x6FFFFFFF, 1)]
    entries.append((0, 0))
    dynamic = b"".join(struct.pack(end + "qQ", tag, value) for tag, value in entries)
    total = dynamic_off + len(dynamic)

    ident = b"\x7fELF" + bytes([2, 2 if big_endian else 1, 1, 0]) + b"\x00" * 8
    header = ident + struct.pack(end + "HHIQQQIHHHHHH", 2, EM.get(machine, 0) if isinstance(machine, str) else machine,
                                 1, base, phoff, 0, 0, ehsize, phentsize, len(headers), 64, 0, 0)
    phdrs = b""
    for kind in headers:
        if kind == "load":
            phdrs += struct.pack(end + "IIQQQQQQ", 1, 5, 0, base, base, total, total, 0x1000)
        elif kind == "interp":
            phdrs += struct.pack(end + "IIQQQQQQ", 3, 4, interp_off, base + interp_off, base + interp_off,
                                 len(interp_bytes), len(interp_bytes), 1)
        else:
            phdrs += struct.pack(end + "IIQQQQQQ", 2, 6, dynamic_off, base + dynamic_off, base + dynamic_off,
                                 len(dynamic), len(dynamic), 8)
    out = bytearray(total)
    out[0:len(header)] = header
    out[phoff:phoff + len(phdrs)] = phdrs
    out[interp_off:interp_off + len(interp_bytes)] = interp_bytes
    out[strtab_off:strtab_off + len(strtab)] = strtab
    out[verneed_off:verneed_off + len(verneed)] = verneed
    out[dynamic_off:dynamic_off + len(dynamic)] = dynamic
    return bytes(out)


def static_elf(machine: str = "aarch64") -> bytes:
    return build_elf(machine, interpreter=None, needed=(), glibc_versions=())


#: A binfmt_misc entry as the kernel shows qemu-user-static's aarch64 handler.
QEMU_AARCH64_ENTRY = """enabled
interpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P
flags: POCF
offset 0
magic 7f454c460201010000000000000000000200b700
mask ffffffffffffff00fffffffffffffffffeffffff
"""
