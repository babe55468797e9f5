#!/usr/bin/env python3
"""Write the compose stack files in compose/ from the topology model (compose cannot loop).

    python tools/gen_compose.py                     # regenerate the committed shapes
    python tools/gen_compose.py --check             # exit 1 if a committed file is stale
    python tools/gen_compose.py cluster:6:2 --out /tmp/stacks   # any other shape

The library code is vkbench.topology.compose_render; server arguments come from
vkbench.topology.model.server_config, like the native backend's config files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vkbench.topology.compose_render import COMMITTED_TOPOLOGIES, render_stack, stack_file_name
from vkbench.topology.model import Topology

COMPOSE_DIR = Path(__file__).resolve().parent.parent / "compose"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("topologies", nargs="*", default=list(COMMITTED_TOPOLOGIES),
                        help=f"default: {' '.join(COMMITTED_TOPOLOGIES)}")
    parser.add_argument("--out", type=Path, default=COMPOSE_DIR, help="directory (default: compose/)")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if a file differs")
    args = parser.parse_args(argv)

    stale = []
    for text in args.topologies:
        topology = Topology.parse(text)
        path = args.out / stack_file_name(topology)
        wanted = render_stack(topology)
        current = path.read_text() if path.exists() else None
        if current == wanted:
            continue
        if args.check:
            stale.append(path)
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted)
        print(f"wrote {path}")
    if stale:
        print("stale compose files (run: python tools/gen_compose.py): " + " ".join(map(str, stale)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
