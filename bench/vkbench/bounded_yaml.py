"""YAML from outside (matrix files, annotations, catalog specs) read with bounds.

``yaml.safe_load`` builds only plain types and no object twice for an alias, but everything that
walks the result afterwards (validation, date conversion, expansion) does: a "billion laughs"
file of a few hundred bytes is 10^9 nodes to them (55 s and a MemoryError measured), and a huge
or deeply nested file costs memory and time. So each kind of file gets its ``YamlBounds``: size,
aliases (counted, or refused where the files never use them), nodes, depth, and the size of the
document as a walker sees it. The bounds are checked on the parser's event stream (libyaml's when
present: fast) before any document is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from .errors import ConfigError

_FAST = getattr(yaml, "CSafeLoader", None)


@dataclass(frozen=True)
class YamlBounds:
    kind: str                               # names the file in messages, e.g. "catalog file"
    size_hint: str                          # what such a file usually weighs
    max_bytes: int = 1024 * 1024
    max_aliases: int = 0                    # 0: any alias (*name) is refused
    max_nodes: int | None = None            # scalars and collections as written
    max_depth: int | None = None            # nesting of collections
    max_expanded_nodes: int | None = None   # values once aliases are expanded (a validator's walk)


#: Matrix files and annotations: a few aliases are fine (people write them), their expansion is bounded.
MATRIX_BOUNDS = YamlBounds(kind="matrix or annotations file", size_hint="a matrix or annotations file is a few KiB",
                           max_aliases=100, max_expanded_nodes=100_000)

#: Catalog specs (redis-benchmarks-specification) use neither aliases nor deep nesting, so refusing
#: them costs nothing. The largest spec at the pinned commit is 572 KB (5000 init commands).
CATALOG_BOUNDS = YamlBounds(kind="catalog file", size_hint="a spec file is a few KB; check that this is the right file",
                            max_nodes=200_000, max_depth=32)


def _refuse(origin: str, mark, message: str, hint: str) -> ConfigError:
    where = f", line {mark.line + 1}" if mark is not None else ""
    return ConfigError(f"{origin}{where}: {message}", hint=hint)


def _check_events(text: str, origin: str, bounds: YamlBounds) -> None:
    """The bounds on the parser's event stream, before any document is built."""
    aliases = nodes = depth = 0
    for event in yaml.parse(text, Loader=_FAST or yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if bounds.max_aliases == 0:
                raise _refuse(origin, event.start_mark, f"aliases (*name) are not accepted in a {bounds.kind}",
                              "write the values out (see the line shown)")
            if aliases > bounds.max_aliases:
                raise _refuse(origin, event.start_mark, f"more than {bounds.max_aliases} YAML aliases (*name)",
                              "write the values out; aliases are bounded (a file of nested aliases expands without end)")
        elif isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            nodes += 1
            if bounds.max_nodes is not None and nodes > bounds.max_nodes:
                raise _refuse(origin, event.start_mark, f"more than {bounds.max_nodes} YAML nodes", bounds.size_hint)
            if not isinstance(event, yaml.ScalarEvent):
                depth += 1
                if bounds.max_depth is not None and depth > bounds.max_depth:
                    raise _refuse(origin, event.start_mark, f"nesting deeper than {bounds.max_depth}",
                                  f"a {bounds.kind} is a few levels deep")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _check_expanded_size(data: Any, origin: str, bounds: YamlBounds) -> None:
    """Walk as a validator would (shared nodes once per reference), at most ``max_expanded_nodes``."""
    count = 0
    stack = [data]
    while stack:
        node = stack.pop()
        count += 1
        if count > bounds.max_expanded_nodes:
            raise ConfigError(f"{origin}: more than {bounds.max_expanded_nodes} values once its aliases are expanded",
                              hint=f"a {bounds.kind} is small; write the values out instead of nesting aliases")
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def load_yaml(text: str | bytes, origin: str, bounds: YamlBounds = MATRIX_BOUNDS) -> Any:
    """One YAML document from ``origin`` (named in errors) within ``bounds``; ConfigError (exit 2)."""
    size = len(text.encode("utf-8", errors="replace") if isinstance(text, str) else text)
    if size > bounds.max_bytes:
        raise ConfigError(f"{origin} is {size} bytes, more than the {bounds.max_bytes} a {bounds.kind} may have",
                          hint=bounds.size_hint)
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        _check_events(text, origin, bounds)
        # libyaml's composer recurses in C: only with the depth bounded above; else the Python one.
        loader = _FAST if _FAST is not None and bounds.max_depth is not None else yaml.SafeLoader
        data = yaml.load(text, Loader=loader)   # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{origin} is not valid YAML: {exc}", hint="fix the YAML syntax at the line shown") from None
    except RecursionError:
        raise ConfigError(f"{origin}: nested too deeply", hint=f"a {bounds.kind} is a few levels deep") from None
    if bounds.max_expanded_nodes is not None:
        _check_expanded_size(data, origin, bounds)
    return data
