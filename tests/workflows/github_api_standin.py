"""GitHub's REST API on 127.0.0.1 for the workflow tests (the local chain and the workflows under act).

A plain ``http.server`` in its own thread (no asyncio) that records every call and answers what the
workflows ask: the issues of `vkbench alert` (remembered: what one call creates, the next lists,
filtered by label and state and paged as GitHub does, and a PATCH changes), comments, the commit
github-action-benchmark looks up, workflow dispatches (204) and label removals. (Not
tests/unit/alerts/fake_github.py, which checks tokens and injects failures for the alert
client's own tests: the module names differ because pytest imports test helpers by their bare
name.)
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class FakeGitHub:
    """GitHub's REST API on 127.0.0.1, in its own thread (plain http.server, no asyncio), recording
    every call. Answers what the workflows ask: the issues of vkbench alert, and the commit that
    github-action-benchmark looks up.

    ``issues`` is the repository's issues before the first call (number -> issue, as GitHub returns
    it); pass ``earlier.issues`` to continue from what an earlier stand-in saw created."""

    def __init__(self, head_sha: str = "0" * 40, owner_repo: str = "vkbench-test/vkbench",
                 issues: dict[int, dict] | None = None) -> None:
        self.calls: list[dict] = []
        self.head_sha = head_sha
        self.issues: dict[int, dict] = {n: json.loads(json.dumps(i)) for n, i in (issues or {}).items()}
        repo_url = f"https://github.com/{owner_repo}"
        issues_path = f"/repos/{owner_repo}/issues"
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

            def _issue(self, path: str) -> tuple[dict | None, list[str]]:
                """The remembered issue a path under .../issues/<n> names, and the rest of the path."""
                rest = path[len(issues_path) + 1:].split("/")
                if not rest[0].isdigit():
                    return None, rest
                return fake.issues.get(int(rest[0])), rest[1:]

            def do_GET(self):  # noqa: N802 (http.server's naming)
                call = self._record()
                parts = urlsplit(call["path"])
                if re.fullmatch(rf"/repos/{owner_repo}/commits/[^/]+", parts.path):
                    who = {"name": "Test Author", "email": "author@example.invalid", "date": "2026-11-01T02:17:00Z"}
                    self._reply(200, {"sha": fake.head_sha, "html_url": f"{repo_url}/commit/{fake.head_sha}",
                                      "author": {"login": "author"}, "committer": {"login": "author"},
                                      "commit": {"author": who, "committer": who, "message": "the commit under test"}})
                elif parts.path == issues_path:
                    # GitHub: labels= a comma-separated list (all of them), state= open (default),
                    # closed or all; newest first; page/per_page (default 30).
                    query = parse_qs(parts.query)
                    wanted = [name for name in query.get("labels", [""])[0].split(",") if name]
                    state = query.get("state", ["open"])[0]
                    page, per_page = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
                    with fake._lock:
                        found = [i for _, i in sorted(fake.issues.items(), reverse=True)
                                 if set(wanted) <= {label["name"] for label in i["labels"]}
                                 and (state == "all" or i["state"] == state)]
                    self._reply(200, found[(page - 1) * per_page: page * per_page])
                elif parts.path.startswith(issues_path + "/"):
                    issue, rest = self._issue(parts.path)
                    if issue is None:
                        self._reply(404, {"message": "Not Found"})
                    else:
                        self._reply(200, issue if not rest else [])
                else:
                    self._reply(200, [])

            def do_POST(self):  # noqa: N802
                call = self._record()
                path, body = urlsplit(call["path"]).path, call["body"] or {}
                if path.endswith("/dispatches"):
                    # workflow_dispatch: GitHub answers 204 with no body.
                    self.send_response(204)
                    self.end_headers()
                    return
                if path == issues_path:
                    with fake._lock:
                        number = max(fake.issues, default=0) + 1
                        fake.issues[number] = {
                            "number": number, "html_url": f"{repo_url}/issues/{number}", "title": body.get("title", ""),
                            "state": "open", "labels": [{"name": name} for name in body.get("labels", [])],
                            "body": body.get("body", "")}
                        issue = json.loads(json.dumps(fake.issues[number]))
                    self._reply(201, issue)
                    return
                # A comment (on an issue of this repository, or a pull request of another one).
                self._reply(201, {"id": len(fake.calls), "body": body.get("body", "")})

            def do_PATCH(self):  # noqa: N802
                call = self._record()
                path, body = urlsplit(call["path"]).path, call["body"] or {}
                issue, rest = self._issue(path) if path.startswith(issues_path + "/") else (None, [])
                if issue is None or rest:
                    self._reply(404, {"message": "Not Found"})
                    return
                with fake._lock:
                    for field in ("title", "body", "state", "state_reason"):
                        if field in body:
                            issue[field] = body[field]
                    if "labels" in body:
                        issue["labels"] = [{"name": name} for name in body["labels"]]
                    answer = json.loads(json.dumps(issue))
                self._reply(200, answer)

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
