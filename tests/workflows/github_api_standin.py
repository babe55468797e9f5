"""The one GitHub REST API stand-in of the tests, on 127.0.0.1: the alert client's unit tests, the
`vkbench ci` steps, runner registration (runners/scripts/register-runner.sh), the local chain and
the workflows under act.

A plain ``http.server`` in its own thread (no asyncio) that records every call and answers what
they ask: the issues of `vkbench alert` (remembered: what one call creates, the next lists,
filtered by label and state and paged as GitHub does, and a PATCH changes), comments (kept per
issue in ``comments``), the commit github-action-benchmark looks up, workflow dispatches (204),
label removals, and a self-hosted runner's registration (JIT config, registration token).
With ``token`` set, any other credential is answered 401 as GitHub does; ``fail_next`` and
``fail_all`` inject an error status (``leak_auth_in_errors`` echoes the credential in that error's
message, to prove the client redacts it).
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
                 issues: dict[int, dict] | None = None, *, token: str | None = None,
                 leak_auth_in_errors: bool = False) -> None:
        self.calls: list[dict] = []
        self.head_sha = head_sha
        self.owner_repo = owner_repo
        self.issues: dict[int, dict] = {n: json.loads(json.dumps(i)) for n, i in (issues or {}).items()}
        self.comments: dict[int, list[str]] = {}
        self.token = token
        self.leak_auth_in_errors = leak_auth_in_errors
        self.fail_next: int | None = None     # the next call is answered with this status
        self.fail_all: int | None = None      # every call is
        self.runner_id = 42
        self.jit_config = "eyJmYWtlIjoiaml0In0="
        self.registration_token = "AREGTOKEN123"
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

            def _record(self) -> dict | None:
                """Record the call; None when it was answered already (an injected failure, a bad token)."""
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                call = {"method": self.command, "path": self.path, "auth": self.headers.get("Authorization", ""),
                        "body": json.loads(raw) if raw else None}
                with fake._lock:
                    fake.calls.append(call)
                    status = fake.fail_next or fake.fail_all
                    fake.fail_next = None
                if status:
                    message = f"Bad credentials ({call['auth']})" if fake.leak_auth_in_errors else (
                        "Bad credentials" if status == 401 else "Server Error")
                    self._reply(status, {"message": message})
                    return None
                if fake.token is not None and call["auth"] != f"Bearer {fake.token}":
                    self._reply(401, {"message": "Bad credentials"})
                    return None
                return call

            def _issue(self, path: str) -> tuple[dict | None, list[str]]:
                """The remembered issue a path under .../issues/<n> names, and the rest of the path."""
                rest = path[len(issues_path) + 1:].split("/")
                if not rest[0].isdigit():
                    return None, rest
                return fake.issues.get(int(rest[0])), rest[1:]

            def do_GET(self):  # noqa: N802 (http.server's naming)
                call = self._record()
                if call is None:
                    return
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
                if call is None:
                    return
                path, body = urlsplit(call["path"]).path, call["body"] or {}
                if path.endswith("/actions/runners/generate-jitconfig"):
                    self._reply(201, {"runner": {"id": fake.runner_id}, "encoded_jit_config": fake.jit_config})
                    return
                if path.endswith("/actions/runners/registration-token"):
                    self._reply(201, {"token": fake.registration_token, "expires_at": "2030-01-01T00:00:00Z"})
                    return
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
                issue, rest = self._issue(path) if path.startswith(issues_path + "/") else (None, [])
                if issue is not None and rest == ["comments"]:
                    with fake._lock:
                        fake.comments.setdefault(issue["number"], []).append(body.get("body", ""))
                self._reply(201, {"id": len(fake.calls), "body": body.get("body", "")})

            def do_PATCH(self):  # noqa: N802
                call = self._record()
                if call is None:
                    return
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
                call = self._record()
                if call is None:
                    return
                if "/actions/runners/" in call["path"]:
                    self.send_response(204)       # GitHub: a deleted runner, no body
                    self.end_headers()
                else:
                    self._reply(200, [])          # a removed label: the labels left

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-github", daemon=True)

    def add_issue(self, title: str, body: str, state: str = "open", labels=("vkbench-regression",)) -> dict:
        """An issue that exists before the test's first call."""
        with self._lock:
            number = max(self.issues, default=0) + 1
            self.issues[number] = {"number": number, "html_url": f"https://github.com/{self.owner_repo}/issues/{number}",
                                   "title": title, "body": body, "state": state, "labels": [{"name": n} for n in labels]}
            return self.issues[number]

    def sent(self) -> list[tuple[str, str, dict | None]]:
        """The calls as (method, path, body), for compact assertions."""
        with self._lock:
            return [(c["method"], c["path"], c["body"]) for c in self.calls]

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
