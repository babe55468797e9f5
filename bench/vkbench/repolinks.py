"""Links to commits in the repository they came from: GitHub and GitLab URLs (https, ssh or scp
form, github.com/gitlab.com or a self-hosted host named ``gitlab.*``/``github.*``); anything else
(a file:// mirror, an unknown host) gets plain text, never a guessed link."""

from __future__ import annotations

import re

_FORGE = re.compile(
    r"^(?:https?://(?:[^/@]+@)?|ssh://(?:[^/@]+@)?|[^/@:]+@)"
    r"(?P<host>(?:[a-z0-9-]+\.)*(?P<kind>github|gitlab)(?:\.[a-z0-9-]+)+)"
    r"(?::\d+)?[/:](?P<path>[^\s?#]+?)(?:\.git)?/?$",
    re.IGNORECASE,
)


def web_url(url: str | None) -> tuple[str, str] | None:
    """(``https://host/owner/name``, ``github``|``gitlab``) of a forge clone URL, else None."""
    match = _FORGE.match(url or "")
    if not match:
        return None
    return f"https://{match.group('host').lower()}/{match.group('path')}", match.group("kind").lower()


def commit_prefix(url: str | None) -> str | None:
    """``https://github.com/o/r/commit/`` (GitLab: ``.../-/commit/``); None for another host."""
    forge = web_url(url)
    if forge is None:
        return None
    base, kind = forge
    return f"{base}/-/commit/" if kind == "gitlab" else f"{base}/commit/"


def commit_url(url: str | None, commit: str) -> str | None:
    prefix = commit_prefix(url)
    return prefix + commit if prefix and commit else None


def compare_url(url: str | None, good: str, bad: str) -> str | None:
    forge = web_url(url)
    if forge is None or not good or not bad or good == bad:
        return None
    base, kind = forge
    return f"{base}/-/compare/{good}...{bad}" if kind == "gitlab" else f"{base}/compare/{good}...{bad}"


def commit_link(url: str | None, commit: str, digits: int = 10, *, name_url: bool = True) -> str:
    """Markdown: a link on a forge, else the short commit in code type (followed by the URL
    when known and ``name_url``)."""
    link = commit_url(url, commit)
    if link:
        return f"[`{commit[:digits]}`]({link})"
    return f"`{commit[:digits]}`" + (f" ({url})" if url and name_url else "")
