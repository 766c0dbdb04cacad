"""`pipe serve` in the real browser (Debian's Chromium through Playwright), for what the viewer does beyond
watching: a person starts a run from a program's form and follows it, reads a skill's docs and calls, watches a
running run's printed lines and steps grow, and opens the nodes of two concurrent branches."""

from __future__ import annotations

from browser_testing import browser, page, screenshot  # noqa: F401 (fixtures; importing it skips without a browser)
from cli_testing import pipe
from test_viewer_nodes import BRANCHES
from test_viewer_start import BROKEN, GREET
from viewer_testing import NO_MODEL, PRINTING_PROGRAM, Server, finished_runs, pipe_process, run_id_of, stop


def test_a_person_starts_a_run_from_a_programs_form_and_follows_it(page, tmp_path, screenshot):
    (tmp_path / "greet.pipe").write_text(GREET)
    with Server(tmp_path, "--allow-actions") as server:
        server.open(page)
        page.get_by_role("link", name="programs").click()
        page.get_by_role("link", name="greet.pipe").click()
        page.get_by_label("input name").fill("Ada")
        page.get_by_label("input times").fill("2")
        page.get_by_label("input loud").select_option("true")
        page.get_by_label("input orders").fill('[{"item": "tea", "count": 4}]')
        screenshot(page, "start-form")
        page.get_by_role("button", name="start the run").click()
        page.locator(".summary .status", has_text="done").wait_for()  # on the new run's page, followed live
        assert "/runs/" in page.url
        assert page.locator("code.result").inner_text() == '"greeted Ada 2 times, loud=true, 4 items"'
        assert page.locator("section.printed pre").inner_text() == "hello, Ada!\nhello, Ada!"
        screenshot(page, "started-run")


def test_a_program_that_does_not_compile_shows_where_on_its_page_and_when_started(page, tmp_path):
    (tmp_path / "broken.pipe").write_text(BROKEN)
    (tmp_path / "greet.pipe").write_text(GREET)
    with Server(tmp_path, "--allow-actions") as server:
        server.open(page, "programs/broken.pipe")
        errors = page.locator("section.compile-errors pre.error")
        errors.wait_for()
        assert errors.inner_text().startswith("broken.pipe:3:")
        server.open(page, "programs/greet.pipe")
        page.get_by_label("input times").fill("many")
        page.get_by_role("button", name="start the run").click()
        refused = page.locator("#action-result.error")
        refused.wait_for()
        assert "input `times` (int): expected a whole number" in refused.inner_text()
        assert "/programs/greet.pipe" in page.url  # it stayed on the form


def test_a_skill_page_shows_its_docs_and_the_calls_the_history_records(page, tmp_path, screenshot):
    runs = finished_runs(tmp_path)
    with Server(runs.workspace) as server:
        server.open(page)
        page.get_by_role("link", name="skills").click()
        page.get_by_role("link", name="text.contains", exact=True).click()
        page.locator("pre.signature", has_text="text.contains(").wait_for()
        history = page.locator("table.history tbody tr")
        assert history.count() >= 1
        assert page.locator("table.history").get_by_role("link", name=runs.triage).count() == history.count()
        screenshot(page, "skill")
        page.locator("table.history").get_by_role("link", name=runs.triage).first.click()
        page.locator("section.tree").get_by_text("classify@3").wait_for()  # the run that made the call


def test_a_running_runs_printed_lines_and_steps_grow_on_its_page(page, tmp_path, screenshot):
    (tmp_path / "printing.pipe").write_text(PRINTING_PROGRAM)
    run = pipe_process("run", "printing.pipe", cwd=tmp_path)
    try:
        with Server(tmp_path) as server:
            server.open(page)
            page.locator("a.run-link").first.click()
            printed = page.locator("section.printed pre")
            printed.get_by_text("still waiting after 10 naps").wait_for()
            assert page.locator(".summary .status").inner_text() == "running"
            page.evaluate("window.notReloaded = true")
            steps = int(page.locator(".summary .steps").inner_text())
            naps = int(printed.inner_text().splitlines()[-1].split()[3])  # "still waiting after N naps"
            printed.get_by_text(f"still waiting after {naps + 20} naps").wait_for()  # pushed into the same page
            assert int(page.locator(".summary .steps").inner_text()) > steps
            assert page.evaluate("window.notReloaded") is True
            screenshot(page, "running-printing")
            (tmp_path / "go.txt").write_text("go")
            page.locator(".summary .status", has_text="done").wait_for()
            run.wait(timeout=60)  # done in its journal; the process then closes the run and exits
    finally:
        out, err = stop(run)
    assert run.returncode == 0, err


def test_the_nodes_of_two_concurrent_branches_show_only_their_own_events(page, tmp_path, screenshot):
    (tmp_path / "branches.pipe").write_text(BRANCHES)
    done = pipe("run", "branches.pipe", cwd=tmp_path, env=NO_MODEL)
    assert done.returncode == 0, done.stderr
    run_id = run_id_of(tmp_path, "branches.pipe")
    with Server(tmp_path) as server:
        server.open(page, f"runs/{run_id}")
        panel = page.locator("#node-detail")
        works = page.locator("section.tree").get_by_role("button", name="work#1")
        assert works.count() == 2
        works.nth(0).click()
        panel.locator("table.events").get_by_text("text=working on left").wait_for()
        assert "working on right" not in panel.inner_text()
        screenshot(page, "branch-node")
        works.nth(1).click()
        panel.locator("table.events").get_by_text("text=working on right").wait_for()
        assert "working on left" not in panel.inner_text()
