"""GitHub's REST API on 127.0.0.1 for the workflow tests (the local chain and the workflows under act).

A plain ``http.server`` in its own thread (no asyncio) that records every call and answers what the
workflows ask: the issues of `vkbench alert` and comments, the commit github-action-benchmark looks
up, workflow dispatches (204) and label removals. (Not tests/unit/alerts/fake_github.py, which
checks tokens and injects failures for the alert client's own tests: the module names differ
because pytest imports test helpers by their bare name.)
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeGitHub:
    """GitHub's REST API on 127.0.0.1, in its own thread (plain http.server, no asyncio), recording
    every call. Answers what the workflows ask: the issues of vkbench alert, and the commit that
    github-action-benchmark looks up."""

    def __init__(self, head_sha: str = "0" * 40, owner_repo: str = "vkbench-test/vkbench") -> None:
        self.calls: list[dict] = []
        self.head_sha = head_sha
        repo_url = f"https://github.com/{owner_repo}"
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, payload) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _record(self) -> dict:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                call = {"method": self.command, "path": self.path, "auth": self.headers.get("Authorization", ""),
                        "body": json.loads(raw) if raw else None}
                with fake._lock:
                    fake.calls.append(call)
                return call

            def do_GET(self):  # noqa: N802 (http.server's naming)
                call = self._record()
                path = call["path"].split("?")[0]
                if re.fullmatch(rf"/repos/{owner_repo}/commits/[^/]+", path):
                    who = {"name": "Test Author", "email": "author@example.invalid", "date": "2026-11-01T02:17:00Z"}
                    self._reply(200, {"sha": fake.head_sha, "html_url": f"{repo_url}/commit/{fake.head_sha}",
                                      "author": {"login": "author"}, "committer": {"login": "author"},
                                      "commit": {"author": who, "committer": who, "message": "the commit under test"}})
                else:
                    self._reply(200, [])

            def do_POST(self):  # noqa: N802
                call = self._record()
                if call["path"].endswith("/dispatches"):
                    # workflow_dispatch: GitHub answers 204 with no body.
                    self.send_response(204)
                    self.end_headers()
                    return
                with fake._lock:
                    number = sum(1 for c in fake.calls if c["method"] == "POST" and c["path"].endswith("/issues"))
                body = call["body"] or {}
                self._reply(201, {"number": number, "html_url": f"{repo_url}/issues/{number}",
                                  "title": body.get("title", ""), "state": "open", "labels": [], "body": body.get("body", "")})

            def do_PATCH(self):  # noqa: N802
                call = self._record()
                self._reply(200, {"number": 1, "state": (call["body"] or {}).get("state", "open")})

            def do_DELETE(self):  # noqa: N802
                self._record()
                self._reply(200, [])

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-github", daemon=True)

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
