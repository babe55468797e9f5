"""The built site loads nothing from outside: no CDN, no web font, no external script, style,
image or import. The only URLs allowed are anchors to commit pages (GitHub, or GitLab for a source
build from there) and GitHub workflow-run pages; a source build's git URL is named as data."""

from __future__ import annotations

import json
import re
from pathlib import Path

#: Places where a URL makes the browser fetch something (or an anchor, checked separately).
FETCHING = [
    re.compile(r"""\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(https?:)?//""", re.I),  # HTML attributes
    re.compile(r"""url\(\s*["']?\s*(https?:)?//""", re.I),  # CSS url()
    re.compile(r"""@import\s+(?:url\()?\s*["']?\s*(https?:)?//""", re.I),  # CSS @import
    re.compile(r"""\bimport\s*(?:[\w*{}\s,]+from\s*)?\(?\s*["'](https?:)?//""", re.I),  # JS import
    re.compile(r"""\b(?:fetch|importScripts)\s*\(\s*["'`](https?:)?//""", re.I),  # JS fetches
]
ALLOWED_LINK = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(commit/[0-9a-f]{7,40}|actions/runs/\d+(/attempts/\d+)?)$")
#: A source build's commit page on GitHub or GitLab, whole or as a series file's per-repository prefix.
ALLOWED_COMMIT_PAGE = re.compile(r"^https://(github\.com/[\w.-]+/[\w.-]+|gitlab\.com/[\w./-]+/-)/commit/([0-9a-f]{7,40})?$")


def text_files(out: Path):
    return [p for p in out.rglob("*") if p.suffix in {".html", ".js", ".css", ".json"}]


def json_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != "repository":          # a git URL named as data (never made a link)
                yield from json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from json_strings(v)


def test_no_external_fetches(built_site):
    out, _, _ = built_site
    offenders = []
    for path in text_files(out):
        text = path.read_text(encoding="utf-8")
        for pattern in FETCHING:
            for m in pattern.finditer(text):
                offenders.append(f"{path.relative_to(out)}: {text[max(0, m.start() - 20):m.end() + 40]!r}")
    assert not offenders, "external fetches in the site:\n" + "\n".join(offenders)


def test_every_url_in_data_is_a_github_commit_or_run_link(built_site):
    out, _, _ = built_site
    bad = []
    for path in (out / "data").rglob("*.json"):
        data = json.loads(path.read_text())
        for s in json_strings(data):
            if re.search(r"https?://", s):
                # series files keep run URLs as prefix + suffix; the prefix alone is a run-page stem
                if "series" in path.relative_to(out).parts and s.endswith("/actions/runs/"):
                    continue
                if not ALLOWED_LINK.match(s) and not ALLOWED_COMMIT_PAGE.match(s):
                    bad.append(f"{path.relative_to(out)}: {s}")
    assert not bad, "\n".join(bad[:20])


def test_app_sources_link_only_to_github(built_site):
    out, _, _ = built_site
    for path in (out / "assets" / "app").iterdir():
        for url in re.findall(r"https?://[^\s\"'`)]+", path.read_text()):
            assert url.startswith("https://github.com/"), f"{path.name}: {url}"
    html = (out / "index.html").read_text()
    assert "https://" not in html and "http://" not in html


def test_the_scanner_catches_cdn_references(tmp_path):
    """The patterns above must flag the usual ways a page pulls in a CDN."""
    samples = [
        '<script src="https://cdn.jsdelivr.net/npm/uplot"></script>',
        '<link rel="stylesheet" href="//fonts.googleapis.com/css">',
        "body { background: url('https://example.com/a.png') }",
        '@import url("https://fonts.example/x.css");',
        'import uPlot from "https://esm.sh/uplot";',
        'fetch("https://api.example.com/data")',
    ]
    for sample in samples:
        assert any(p.search(sample) for p in FETCHING), sample
