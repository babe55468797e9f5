"""Private temporary folders of a run (``$TMPDIR/vkbench-*``) and their removal after a kill.

A deployment's folder holds the servers' 0600 config files with ``requirepass`` and
``masterauth``. The run removes it when it ends (also on failure and Ctrl-C), but a SIGKILL
leaves it behind: every folder therefore starts with an ``owner.json`` (pid and start time of
the Python process) written before anything secret, and :func:`cleanup_stale_workdirs` (called
by every ``vkbench run`` and by ``--cleanup-only``) removes the folders whose owner is gone.
A folder of a live run - maybe another user's or another engineer's - is never touched.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

from ..topology.procs import is_alive, process_start_time

log = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
#: What tempfile.mkdtemp(prefix="vkbench-...") makes: the prefix, then 8 random characters.
_NAME = re.compile(r"^vkbench-(json-)?[a-z0-9_]{8}$")


def make_workdir(prefix: str = "vkbench-", parent: str | os.PathLike | None = None) -> Path:
    """A new private (0700) folder whose first file names its owner (this process)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    record = {"owner_pid": os.getpid(), "owner_start_time": process_start_time(os.getpid())}
    (path / OWNER_FILE).write_text(json.dumps(record) + "\n")
    return path


def cleanup_stale_workdirs(parents: list[str | os.PathLike | None] | None = None) -> list[str]:
    """Remove ``vkbench-*`` folders (ours by uid) whose owning process is gone; describe each."""
    removed: list[str] = []
    seen: set[Path] = set()
    for parent in parents or [None]:
        root = Path(parent) if parent else Path(tempfile.gettempdir())
        if root in seen or not root.is_dir():
            continue
        seen.add(root)
        try:
            candidates = sorted(root.iterdir())
        except OSError:
            continue
        for path in candidates:
            if not _NAME.match(path.name):
                continue
            try:
                if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
                    continue
                record = json.loads((path / OWNER_FILE).read_text())
                pid = int(record["owner_pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue      # no readable owner: not provably ours or not provably dead
            if is_alive(pid, record.get("owner_start_time")):
                continue
            secrets = sum(1 for _ in path.rglob("*.conf"))
            shutil.rmtree(path, ignore_errors=True)
            removed.append(f"removed temp dir {path} of exited run pid {pid}" + (f" ({secrets} config file(s) with the password)" if secrets else ""))
    for line in removed:
        log.info("stale cleanup: %s", line)
    return removed
