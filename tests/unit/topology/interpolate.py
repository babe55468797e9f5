"""Compose-style variable interpolation, enough to run a stack file's scripts without compose.

``${VAR}``, ``${VAR:-default}`` (the default may itself interpolate), ``${VAR:?message}`` and
``$$`` (a literal ``$``), as docker compose does it; the integration tests check real compose.
"""

from __future__ import annotations


class MissingVariable(KeyError):
    pass


def interpolate(text: str, env: dict[str, str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            end = _closing_brace(text, i + 2)
            out.append(_expand(text[i + 2:end], env))
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _closing_brace(text: str, start: int) -> int:
    depth = 1
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unclosed ${{ in {text!r}")


def _expand(body: str, env: dict[str, str]) -> str:
    for op in (":-", ":?"):
        if op in body:
            name, rest = body.split(op, 1)
            value = env.get(name, "")
            if value:
                return value
            if op == ":?":
                raise MissingVariable(f"{name}: {rest}")
            return interpolate(rest, env)
    return env.get(body, "")
