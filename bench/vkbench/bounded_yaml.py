"""YAML from outside (matrix files, annotations) read with bounds: size, aliases, expanded nodes.

``yaml.safe_load`` builds no object twice for an alias, but everything that walks the result
afterwards (validation, date conversion, expansion) does: a "billion laughs" file of a few
hundred bytes is 10^9 nodes to them (55 s and a MemoryError measured). So the number of
aliases is bounded, and so is the size of the document as a walker sees it.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import ConfigError

MAX_YAML_BYTES = 1024 * 1024
MAX_ALIASES = 100
MAX_EXPANDED_NODES = 100_000


class _CountingLoader(yaml.SafeLoader):
    def __init__(self, stream):
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise ConfigError(f"more than {MAX_ALIASES} YAML aliases (*name)",
                                  hint="write the values out; aliases are bounded (a file of nested aliases expands without end)")
        return super().compose_node(parent, index)


def _expanded_size(data: Any, origin: str) -> None:
    """Walk as a validator would (shared nodes once per reference), at most MAX_EXPANDED_NODES."""
    count = 0
    stack = [data]
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_EXPANDED_NODES:
            raise ConfigError(f"{origin}: more than {MAX_EXPANDED_NODES} values once its aliases are expanded",
                              hint="a matrix or annotations file is small; write the values out instead of nesting aliases")
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def load_yaml(text: str, origin: str) -> Any:
    """``text`` parsed safely within the bounds above; ConfigError (exit 2) naming ``origin``."""
    if len(text.encode("utf-8", errors="replace")) > MAX_YAML_BYTES:
        raise ConfigError(f"{origin}: larger than {MAX_YAML_BYTES} bytes", hint="a matrix or annotations file is a few KiB")
    loader = _CountingLoader(text)
    try:
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except ConfigError as exc:
        raise ConfigError(f"{origin}: {exc.message}", hint=exc.hint) from None
    except RecursionError:
        raise ConfigError(f"{origin}: nested too deeply", hint="a matrix or annotations file is a few levels deep") from None
    _expanded_size(data, origin)
    return data
