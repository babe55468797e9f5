"""`vkbench site build` / `vkbench site serve` and the preview server."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from vkbench.cli import main
from vkbench.errors import UsageError
from vkbench.site.serve import make_server, serve_in_thread


def test_cli_build(small_history, tmp_path, capsys):
    root, facts = small_history
    main(["site", "build", "--history", str(root), "--out", str(tmp_path), "--no-reference"])
    assert f"{len(facts['sids'])} series" in capsys.readouterr().out
    assert json.loads((tmp_path / "data" / "reference.json").read_text()) == {"references": []}


def test_cli_build_bad_history_exits_7_with_hint(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["site", "build", "--history", str(tmp_path), "--out", str(tmp_path / "out")])
    assert done.value.code == 7
    err = capsys.readouterr().err
    assert "no index.json" in err and "hint:" in err


def test_serve_serves_the_site_on_loopback(built_site):
    out, _, _ = built_site
    server, url = serve_in_thread(out)
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "index.html", timeout=5) as r:
            assert r.status == 200 and b"assets/app/main.js" in r.read()
        with urllib.request.urlopen(url + "assets/app/main.js", timeout=5) as r:
            assert r.headers["Content-Type"].startswith("text/javascript")
    finally:
        server.shutdown()
        server.server_close()


def test_serve_refuses_a_directory_without_a_site(tmp_path):
    with pytest.raises(UsageError, match="not a built site"):
        make_server(tmp_path)


def test_cli_serve_prints_the_url(built_site, capsys, monkeypatch):
    out, _, _ = built_site
    from vkbench.site import serve as serve_module

    started = threading.Event()

    real = serve_module.make_server

    def make_and_stop(site_dir, port):
        server, url = real(site_dir, port)
        server.serve_forever = lambda: started.set()  # return at once instead of serving forever
        return server, url

    monkeypatch.setattr(serve_module, "make_server", make_and_stop)
    main(["site", "serve", str(out), "--port", "0"])
    assert started.is_set()
    assert "http://127.0.0.1:" in capsys.readouterr().out
