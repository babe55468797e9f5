"""Names shown to people (series, commands, versions, labels), isolated from the text around them.

Result files are checked at the boundary: a name with a control or a bidirectional formatting
character (U+202E shows a name reversed) is refused (vkbench.results.checks). What may still be
in a name, or in text from elsewhere (an annotation's reason, a file name), is shown here so it
cannot act on what surrounds it:

* a control character (C0, DEL, C1) or a bidirectional formatting character is shown escaped
  (``\\u202e``), never sent to the terminal or the page as itself;
* text with right-to-left letters (Hebrew, Arabic, ...) is wrapped in FIRST STRONG ISOLATE ...
  POP DIRECTIONAL ISOLATE (U+2068 ... U+2069), so it cannot reorder the words next to it;
  plain left-to-right text is returned unchanged.

The site does the same in JavaScript (``isolate`` in site/static/format.js); Markdown goes
through :mod:`vkbench.markdown`, which calls :func:`isolate`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

FSI, PDI = "\u2068", "\u2069"

#: C0 (newlines included), DEL, C1, ALM, LRM/RLM, embeddings/overrides, isolates, line/paragraph separators.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def escape_controls(text: str) -> str:
    return CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def has_rtl(text: str) -> bool:
    return any(unicodedata.bidirectional(c) in ("R", "AL") for c in text)


#: The same, except the isolates :func:`isolate` puts around a name (for text composed of
#: isolated names: a title, a series name).
_CONTROLS_BUT_ISOLATES = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066\u2067\u2028\u2029]")


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        if c == FSI:
            depth += 1
        elif c == PDI:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def safe_text(value: Any) -> str:
    """Text composed of isolated names (a title): controls escaped, its isolates kept when
    they pair up (an unpaired one could close an isolate around it: then all are escaped)."""
    text = "" if value is None else str(value)
    if not _balanced(text):
        return escape_controls(text)
    return _CONTROLS_BUT_ISOLATES.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                                      else f"\\u{ord(m.group()):04x}", text)


def isolate(value: Any) -> str:
    """``value`` as text that shows as itself: controls escaped, right-to-left text isolated."""
    text = escape_controls("" if value is None else str(value))
    return f"{FSI}{text}{PDI}" if has_rtl(text) else text


def isolate_composed(value: Any) -> str:
    """Like :func:`isolate` for text that may hold names isolated already (titles, series
    names, Markdown cells): their isolates are kept (:func:`safe_text`), the whole is isolated
    when it has right-to-left text."""
    text = safe_text(value)
    return f"{FSI}{text}{PDI}" if has_rtl(text) else text
