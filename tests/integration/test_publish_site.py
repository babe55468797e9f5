"""`vkbench publish --site-out`: the published site carries the reference overlay, and the next
publish updates it incrementally (only what the new run touched) to what a full build writes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner


from factory import make_result, write_result  # noqa: E402

from vkbench.cli.publish import publish_cmd  # noqa: E402
from vkbench.site.build import build_site  # noqa: E402

REFERENCES = sorted((Path(__file__).resolve().parents[2] / "results" / "reference").glob("*.json"))


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def site_files(root: Path) -> dict[str, object]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name == "index.json":
                index = json.loads(data)
                index.pop("built")
                data = index
            out[str(path.relative_to(root))] = data
    return out


def test_publish_builds_the_site_with_references_then_incrementally(tmp_path):
    remote = tmp_path / "pages.git"
    git("init", "-q", "--bare", str(remote))
    runner = CliRunner()
    for night in range(2):
        write_result(tmp_path / "first", make_result(run_id=f"n{night}", timestamp=f"2026-11-0{night + 1}T02:00:00Z", io_threads=1 + night % 2))
    out = runner.invoke(publish_cmd, [str(tmp_path / "first"), "--repo-dir", str(remote), "--site-out", "site", "--json"])
    assert out.exit_code == 0, out.output
    assert "(full build: " in out.stderr, out.stderr

    write_result(tmp_path / "second", make_result(run_id="n9", timestamp="2026-11-09T02:00:00Z", io_threads=2))
    out = runner.invoke(publish_cmd, [str(tmp_path / "second"), "--repo-dir", str(remote), "--site-out", "site", "--json",
                                      "--workdir", str(tmp_path / "checkout")])
    assert out.exit_code == 0, out.output
    assert "(incremental build: " in out.stderr, out.stderr
    git("clone", "-q", "--branch", "gh-pages", str(remote), str(tmp_path / "pages"))
    pages = tmp_path / "pages"
    references = json.loads((pages / "site" / "data" / "reference.json").read_text())["references"]
    assert len(references) == len(REFERENCES) > 0
    assert not [p for p in pages.joinpath("site").iterdir() if p.name.startswith(".vkbench-")], "no build leftovers committed"

    full = tmp_path / "full"
    build_site(pages / "history", full, reference_dir=REFERENCES[0].parent, full=True)
    assert site_files(pages / "site") == site_files(full)
    manifest = json.loads((pages / "site" / "data" / "build-manifest.json").read_text())
    assert len(manifest["series"]) == 4  # io-threads 1 and 2 x SET, GET
