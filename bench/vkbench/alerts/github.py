"""The few GitHub REST calls vkbench makes (alerts, the workflows' dispatches and comments:
``vkbench ci dispatch|comment``), over plain ``requests``. One client, one redaction; no call is
retried (a repeated POST could dispatch or comment twice).

The token never leaves this object: not in reprs, not in exceptions (every message goes
through :meth:`GitHubClient.redact`), not in logs.
"""

from __future__ import annotations

from typing import Any

import requests

from ..errors import AlertError

USER_AGENT = "vkbench-alerts"


class GitHubClient:
    def __init__(self, repo: str, token: str | None, *, api_url: str = "https://api.github.com", timeout: float = 30.0,
                 session: requests.Session | None = None):
        if repo.count("/") != 1 or not all(repo.split("/")):
            raise AlertError(f"--repo {repo!r} is not OWNER/NAME", hint="e.g. --repo valkey-io/valkey-benchmarks")
        self.repo = repo
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout
        self._token = token or None
        self._session = session or requests.Session()

    def __repr__(self) -> str:
        return f"GitHubClient(repo={self.repo!r}, api_url={self.api_url!r}, token={'set' if self._token else 'unset'})"

    @property
    def can_write(self) -> bool:
        return self._token is not None

    def redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    # -- calls ---------------------------------------------------------------------------------
    def list_issues(self, label: str) -> list[dict]:
        """Every issue (open and closed, not pull requests) carrying ``label``."""
        issues: list[dict] = []
        page = 1
        while True:
            batch = self._call("GET", f"/repos/{self.repo}/issues",
                               params={"labels": label, "state": "all", "per_page": 100, "page": page})
            issues.extend(i for i in batch if "pull_request" not in i)
            if len(batch) < 100:
                return issues
            page += 1

    def create_issue(self, title: str, body: str, labels: list[str]) -> dict:
        return self._call("POST", f"/repos/{self.repo}/issues", json={"title": title, "body": body, "labels": labels})

    def update_issue(self, number: int, **fields: Any) -> dict:
        return self._call("PATCH", f"/repos/{self.repo}/issues/{number}", json=fields)

    def comment(self, number: int, body: str) -> dict:
        return self._call("POST", f"/repos/{self.repo}/issues/{number}/comments", json={"body": body})

    def dispatch_workflow(self, workflow: str, body: dict) -> dict:
        """``workflow_dispatch`` of ``workflow`` (a file name of .github/workflows) with
        ``body`` = {"ref": ..., "inputs": {...}}."""
        return self._call("POST", f"/repos/{self.repo}/actions/workflows/{workflow}/dispatches", json=body)

    def remove_label(self, number: int, label: str) -> dict:
        return self._call("DELETE", f"/repos/{self.repo}/issues/{number}/labels/{label}")

    def _call(self, method: str, path: str, **kwargs) -> Any:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": USER_AGENT,
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        url = self.api_url + path
        try:
            response = self._session.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise AlertError(
                self.redact(f"{method} {path}: {type(exc).__name__}: {exc}"),
                hint="check --api-url and the network; the alert step can be re-run safely",
            ) from None
        if response.status_code >= 400:
            try:
                detail = response.json().get("message", "")
            except ValueError:
                detail = response.text[:200]
            hint = {
                401: "the token is missing or expired: set the env var named by --token-env",
                403: "the token lacks the permission this call needs ('issues: write' for issues and comments, "
                     "'actions: write' for a dispatch; workflow permissions), or a rate limit was hit",
                404: "wrong --repo, or the token cannot see the repository",
                410: "issues are disabled on the repository",
                422: "GitHub rejected the fields (label or body too long?)",
            }.get(response.status_code, "re-run the alert step; it is idempotent")
            raise AlertError(self.redact(f"{method} {path}: HTTP {response.status_code} {detail}"), hint=hint)
        if response.status_code == 204 or not response.content:
            return {}
        return response.json()
