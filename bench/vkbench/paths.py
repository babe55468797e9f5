"""Checks on paths and names that come from outside (flags, a branch's content) before a write.

Every writer that takes a folder from a flag or from a git branch goes through here, so that
nothing lands outside the history or the checkout: a relative subpath stays relative and below
its root, no folder on the way to a destination is a symlink (a commit on gh-pages can carry
one), a branch name is a plain name (not an option, not a refspec, not a ref outside
refs/heads/), and two folders that must stay apart (a site and its history) do.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from .errors import ResultFileError, UsageError

#: A branch name we accept: letters, digits and ``._/-``, starting with a letter or digit.
#: Narrower than git's own rules on purpose: what passes cannot be read as an option
#: (``-f``), a forced refspec (``+x``), a revision range (``a..b``) or a special ref.
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_BRANCH_MAX = 200
_SPECIAL_REFS = {"HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "stash"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: The ids a follow-up carries from detection into a dispatch input and back into the history:
#: a confirmation request (``confirm-<12 hex>``) and an incident (12 hex, or ``inc-<12 hex>``).
CONFIRM_ID = re.compile(r"confirm-[0-9a-f]{12}", re.ASCII)
INCIDENT_ID = re.compile(r"(inc-)?[0-9a-f]{12}", re.ASCII)


def check_branch_name(name: str, what: str = "--branch") -> str:
    """``name`` if it is a plain branch name, else UsageError (exit 2) saying why."""
    why = None
    if not name:
        why = "it is empty"
    elif len(name) > _BRANCH_MAX:
        why = f"it is longer than {_BRANCH_MAX} characters"
    elif not _BRANCH.match(name):
        why = "a branch name starts with a letter or digit and holds only letters, digits and . _ / -"
    elif name in _SPECIAL_REFS or name.startswith("refs/"):
        why = "it names a special ref, not a branch"
    elif ".." in name or "//" in name or "/." in name or name.endswith(("/", ".")) or name.endswith(".lock") or "@{" in name:
        why = "git does not allow '..', '//', '/.', a trailing '/' or '.', or a '.lock' ending in branch names"
    if why:
        raise UsageError(f"{what} {name!r} is not a plain branch name: {why}", hint="use a name such as gh-pages")
    return name


def check_repo_arg(value: str, what: str = "--repo-dir") -> str:
    """A git URL or path that git cannot read as one of its options."""
    if not value or value.startswith("-") or _CONTROL.search(value):
        raise UsageError(f"{what} {value!r} is not a repository URL or path (it starts with '-', is empty or holds control characters)",
                         hint="name the repository by a URL or a path; write ./-name for a folder whose name starts with '-'")
    return value


def safe_subpath(value: str, what: str) -> PurePosixPath:
    """A relative path without ``..`` (a folder inside a checkout), else UsageError."""
    text = str(value)
    path = PurePosixPath(text)
    if not text or text.strip() == "" or _CONTROL.search(text):
        why = "it is empty or holds control characters"
    elif path.is_absolute() or text.startswith("~"):
        why = "it is absolute"
    elif ".." in path.parts:
        why = "it contains '..'"
    elif path == PurePosixPath("."):
        why = "it is the checkout itself"
    else:
        return path
    raise UsageError(f"{what} {text!r} must be a folder inside the checkout: {why}", hint="give a relative path such as history")


def check_no_symlink(root: Path, dest: Path, what: str = "destination") -> None:
    """Refuse ``dest`` when it, or any folder between ``root`` and it, is a symlink (or
    ``dest`` is not below ``root``): writing through it would land outside ``root``.
    ``root`` itself is the caller's choice and may be a symlink. Missing parts are fine:
    they will be created as real folders."""
    root = Path(root)
    dest = Path(dest)
    try:
        rel = Path(os.path.relpath(dest, root))
    except ValueError:
        rel = Path("..")
    if rel.is_absolute() or (rel.parts and rel.parts[0] == ".."):
        raise ResultFileError(f"{dest}: {what} is not inside {root}", hint="this is a bug or a hostile name; nothing was written")
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            raise ResultFileError(
                f"{current}: a symlink inside {root} (to {os.readlink(current)}); refusing to write the {what} through it",
                hint="a history holds real folders only; remove the link (on a branch: git rm it) and try again; nothing was written",
            )
        if not current.exists():
            return


def is_inside(child: Path, parent: Path) -> bool:
    """``child`` is ``parent`` or below it, after resolving symlinks."""
    c, p = Path(child).resolve(), Path(parent).resolve()
    return c == p or p in c.parents


def check_apart(out: Path, history: Path, what: str = "--out") -> None:
    """A folder we replace parts of (a site) may not be the history or contain it (the build
    swaps folders of ``out``; the history must never be one of them)."""
    if is_inside(history, out):
        raise UsageError(f"{what} {out} overlaps the history {history}: it may not be the history or contain it",
                         hint="build the site into its own folder, e.g. site/ beside history/")
