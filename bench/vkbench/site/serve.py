"""Serve a built site on 127.0.0.1 (for a look before publishing, and for the browser tests).

Loopback only: this is a preview server, not a web server for the world.
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

from ..errors import UsageError


class _Handler(http.server.SimpleHTTPRequestHandler):
    # Module scripts must come with a JavaScript MIME type; older mimetypes tables disagree.
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".json": "application/json", ".css": "text/css"}

    def log_message(self, format: str, *args) -> None:  # keep test and CLI output quiet
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")  # a rebuilt site shows at once
        super().end_headers()


def make_server(site_dir: Path, port: int = 0) -> tuple[http.server.ThreadingHTTPServer, str]:
    """A server bound to 127.0.0.1 (``port=0`` picks a free port) and its URL; not started."""
    site_dir = Path(site_dir)
    if not (site_dir / "index.html").is_file():
        raise UsageError(f"{site_dir}: no index.html; not a built site", hint="build it first: vkbench site build --history DIR --out DIR")
    handler = functools.partial(_Handler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def serve_in_thread(site_dir: Path, port: int = 0) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Start serving in a daemon thread; call ``server.shutdown()`` to stop."""
    server, url = make_server(site_dir, port)
    threading.Thread(target=server.serve_forever, name="vkbench-site", daemon=True).start()
    return server, url
