"""YAML from outside (a catalog's spec files) read with bounds: no aliases, capped size and depth.

``yaml.safe_load`` builds only plain types, but an anchor/alias "billion laughs" document still
expands into gigabytes, and a huge or deeply nested file costs memory and time. The specs of
redis-benchmarks-specification use neither aliases nor deep nesting, so refusing them costs
nothing and bounds what a hostile or broken file can do.
"""

from __future__ import annotations

import yaml

from ..errors import ConfigError

#: The largest spec at the pinned commit is 572 KB (5000 init commands); 1 MB bounds the parse.
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 200000


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (and so any expansion) and counts nodes and depth."""

    def __init__(self, stream):
        super().__init__(stream)
        self._nodes = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted in catalog files",
                                              event.start_mark)
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise yaml.composer.ComposerError(None, None, f"more than {MAX_NODES} YAML nodes", self.peek_event().start_mark)
        return super().compose_node(parent, index)

    def _nested(self, compose, anchor):
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nesting deeper than {MAX_DEPTH}", self.peek_event().start_mark)
            return compose(anchor)
        finally:
            self._depth -= 1

    def compose_sequence_node(self, anchor):
        return self._nested(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor):
        return self._nested(super().compose_mapping_node, anchor)


_FAST = getattr(yaml, "CSafeLoader", None)


def _check_events(text: str) -> None:
    """The bounds on libyaml's event stream (fast), before libyaml builds the document."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_FAST):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted in catalog files",
                                              event.start_mark)
        if isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            nodes += 1
            if nodes > MAX_NODES:
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_NODES} YAML nodes", event.start_mark)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nesting deeper than {MAX_DEPTH}", event.start_mark)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def load_bounded(text: str | bytes, origin: str):
    """Parse one YAML document from ``origin`` (named in errors) within the bounds above."""
    size = len(text.encode() if isinstance(text, str) else text)
    if size > MAX_BYTES:
        raise ConfigError(f"{origin} is {size} bytes, more than the {MAX_BYTES} a catalog file may have",
                          hint="a spec file is a few KB; check that this is the right file")
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        if _FAST is not None:
            _check_events(text)
            return yaml.load(text, Loader=_FAST)     # noqa: S506 - libyaml's CSafeLoader
        return yaml.load(text, Loader=_BoundedLoader)   # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{origin} is not acceptable YAML: {exc}", hint="fix the file (see the line shown)") from None
