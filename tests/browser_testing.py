"""The real browser for the viewer's tests: Debian's Chromium through Playwright, headless and offline, as fixtures.

A test module imports this first (`from browser_testing import browser, page, screenshot`): the import skips the
whole module when Chromium, the viewer extra or Playwright is missing, as a module-level skip would."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.is_file():
    pytest.skip("no Chromium at /usr/bin/chromium (apt-get install -y chromium; .ci/run installs it)",
                allow_module_level=True)
pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")
playwright = pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright (the test extra)")

# Never download a browser, never reach the network: Debian's Chromium, headless, quiet.
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 60_000  # a loaded machine (2 cores, several test suites) can be slow to run and to render


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    yield opened
    context.close()


@pytest.fixture
def screenshot(tmp_path, capsys):
    """Save the page as tmp_path/NAME.png and print its path past pytest's capture, so every run shows it."""

    def take(page, name: str) -> Path:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        with capsys.disabled():
            print(f"\nviewer screenshot: {path}")
        assert path.stat().st_size > 10_000  # a rendered page, not an empty image
        return path

    return take
