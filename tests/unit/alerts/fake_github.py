"""A tiny stand-in for the GitHub issues REST API on 127.0.0.1 (a thread), recording calls."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "ghs_FAKE_SECRET_token_0123456789"


class FakeGitHub:
    def __init__(self, repo: str = "o/r", token: str = TOKEN, leak_auth_in_errors: bool = False):
        self.repo = repo
        self.token = token
        self.leak_auth_in_errors = leak_auth_in_errors
        self.issues: dict[int, dict] = {}
        self.calls: list[tuple[str, str, dict | None]] = []
        self.fail_next: int | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def add_issue(self, title: str, body: str, state: str = "open", labels=("vkbench-regression",)) -> dict:
        number = len(self.issues) + 1
        self.issues[number] = {"number": number, "title": title, "body": body, "state": state,
                               "labels": [{"name": n} for n in labels], "comments": []}
        return self.issues[number]

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):      # keep test output clean
                pass

            def _send(self, status: int, payload) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                fake.calls.append((method, self.path, body))
                auth = self.headers.get("Authorization", "")
                if fake.fail_next is not None:
                    status, fake.fail_next = fake.fail_next, None
                    message = f"Bad credentials ({auth})" if fake.leak_auth_in_errors else "Server Error"
                    return self._send(status, {"message": message})
                if auth != f"Bearer {fake.token}":
                    return self._send(401, {"message": "Bad credentials"})
                base = f"/repos/{fake.repo}/issues"
                path = parts.path
                if method == "GET" and path == base:
                    label = query.get("labels", [""])[0]
                    page, per_page = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
                    found = [i for i in fake.issues.values() if label in [lab["name"] for lab in i["labels"]]]
                    return self._send(200, found[(page - 1) * per_page: page * per_page])
                if method == "POST" and path == base:
                    issue = fake.add_issue(body["title"], body["body"], labels=body.get("labels", []))
                    return self._send(201, issue)
                if path.startswith(base + "/"):
                    rest = path[len(base) + 1:].split("/")
                    issue = fake.issues.get(int(rest[0]))
                    if issue is None:
                        return self._send(404, {"message": "Not Found"})
                    if method == "PATCH" and len(rest) == 1:
                        issue.update(body)
                        return self._send(200, issue)
                    if method == "POST" and rest[1:] == ["comments"]:
                        issue["comments"].append(body["body"])
                        return self._send(201, {"id": len(issue["comments"]), "body": body["body"]})
                return self._send(404, {"message": "Not Found"})

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        return Handler
