"""Bytes values in the viewer, in a real browser (Debian's Chromium): a run's images are shown inline from the token-
checked blob endpoint, other bytes are download links, and no stored blob is ever served as something that runs."""

from __future__ import annotations

import base64
import json

import pytest

from browser_testing import browser  # noqa: F401 (a fixture; importing it skips without a browser)
from cli_testing import pipe
from viewer_testing import Server

from orgtree_lang.runtime.artifacts import BytesValue

# A real 2x1 PNG: a browser that decoded it reports its natural size.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAAEUlEQVR42mP8z8DwnwEIGGEMAEgfA/9XZ8ZJAAAAAElFTkSuQmCC")
PDF = b"%PDF-1.4\n% a stand-in report\n%%EOF\n"
SCRIPT = b"<html><body><script>document.title='RAN'</script>not a picture</body></html>"
PROGRAM = '''use fs

pipeline main(photo: bytes) -> list[bytes]:
    return [photo, fs.read_bytes("report.pdf"), fs.read_bytes("page.html", media_type="image/svg+xml")]
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("artifacts")
    (root / "photo.png").write_bytes(PNG)
    (root / "report.pdf").write_bytes(PDF)
    (root / "page.html").write_bytes(SCRIPT)
    (root / "a.pipe").write_text(PROGRAM)
    done = pipe("run", "a.pipe", "-i", "photo=photo.png", "--json", cwd=root, env={"PIPE_NO_PLUGINS": "1"})
    assert done.returncode == 0, done.stderr
    return root, json.loads(done.stdout)["run_id"]


def test_a_runs_image_is_shown_inline_and_other_bytes_are_download_links(workspace, browser, tmp_path):
    root, run_id = workspace
    with Server(root) as server:
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(60_000)
        server.open(page, f"runs/{run_id}")
        image = page.locator(".artifacts figure.artifact img")
        image.wait_for()
        page.wait_for_function("() => document.querySelector('.artifacts img').complete")
        assert image.evaluate("e => [e.naturalWidth, e.naturalHeight]") == [2, 1]  # fetched and decoded
        assert image.count() == 1  # the SVG-typed value is not shown inline
        links = page.locator(".artifacts p.artifact a[download]")
        assert links.count() == 2
        assert "application/pdf" in links.nth(0).inner_text() and "image/svg+xml" in links.nth(1).inner_text()
        with page.expect_download() as caught:
            links.nth(0).click()
        saved = tmp_path / "report.pdf"
        caught.value.save_as(saved)
        assert saved.read_bytes() == PDF
        page.screenshot(path=str(tmp_path / "artifacts.png"), full_page=True)
        context.close()


def test_the_blob_endpoint_needs_the_token_and_never_serves_a_page(workspace):
    import httpx

    root, _ = workspace
    script = BytesValue(SCRIPT).sha256
    with Server(root) as server:
        without = httpx.get(server.url + f"blobs/{BytesValue(PNG).sha256}?type=image/png", timeout=60)
        assert without.status_code == 401 and PNG not in without.content
        shown = server.http.get(server.url + f"blobs/{BytesValue(PNG).sha256}?type=image/png")
        assert shown.status_code == 200 and shown.content == PNG and shown.headers["content-type"] == "image/png"
        for kind in ("text/html", "image/svg+xml"):
            risky = server.http.get(server.url + f"blobs/{script}?type={kind}")
            assert risky.status_code == 200 and risky.content == SCRIPT
            assert risky.headers["content-type"] == "application/octet-stream"
            assert risky.headers["content-disposition"].startswith("attachment")
            assert "sandbox" in risky.headers["content-security-policy"]
        assert server.http.get(server.url + "blobs/" + "0" * 64).status_code == 404
        assert server.http.get(server.url + "blobs/..%2f..%2forgtree.toml").status_code == 404
