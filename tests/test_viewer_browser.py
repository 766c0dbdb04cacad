"""`pipe serve` in a real browser (Debian's Chromium driven by Playwright): what a person sees on a finished run,
a generated module, a run that is still going, and a run waiting for them; screenshots go to pytest's tmp dir."""

from __future__ import annotations

import pytest

from browser_testing import browser, page, screenshot  # noqa: F401 (fixtures; importing it skips without a browser)
from viewer_testing import GATE_PROGRAM, Server, approval_run, finished_runs, pipe_process, stop


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return finished_runs(tmp_path_factory.mktemp("browser"))


def test_a_finished_run_shows_its_tree_values_trace_and_generated_module(page, runs, screenshot):
    with Server(runs.workspace) as server:
        server.open(page)
        page.get_by_role("link", name=runs.triage).click()
        tree = page.locator("section.tree")
        tree.get_by_text("classify@3").wait_for()
        assert tree.locator("li.kind-ambiguous > .status").first.inner_text() == "ok"
        assert page.locator("code.result").inner_text() == '"bug"'
        tree.get_by_role("button", name="classify@3").click()
        panel = page.locator("#node-detail")
        panel.get_by_text("scripted:models/triage_author.yaml").first.wait_for()
        assert 'label="bug"' in panel.locator("pre.output").inner_text()
        screenshot(page, "finished-run")
        panel.get_by_role("link", name="ambiguous_triage/classify.pipe").click()
        source = page.locator("pre.source")
        source.wait_for()
        assert "please add" in source.inner_text()
        keyword = source.locator("span.tok-keyword", has_text="pipeline")
        assert keyword.evaluate("e => getComputedStyle(e).fontWeight") == "600"  # coloured as the CSS says
        assert page.get_by_text("phrases are matched case-sensitively").is_visible()
        screenshot(page, "module")


def test_the_messages_of_a_run_are_shown(page, runs):
    with Server(runs.workspace) as server:
        server.open(page, f"runs/{runs.supervisor}")
        rows = page.locator("table.messages tbody tr")
        assert rows.count() == 2
        assert rows.nth(0).inner_text().split("\t")[1:5] == ["main", "main/worker#1", "message", '"polish"']


def test_a_live_run_updates_the_page_without_a_reload(page, tmp_path, screenshot):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "gate.pipe").write_text(GATE_PROGRAM)
    run = pipe_process("run", tmp_path / "gate.pipe", "--workspace", workspace, cwd=tmp_path)
    try:
        with Server(workspace) as server:
            server.open(page)
            page.locator("a.run-link").first.wait_for()  # the runs list shows the new run as soon as it starts
            page.locator("a.run-link").first.click()
            tree = page.locator("section.tree")
            waiting = tree.locator("li.kind-pipeline", has=page.get_by_role("button", name="wait_for#1"))
            waiting.first.wait_for()
            assert waiting.first.get_attribute("data-status") == "running"
            assert page.locator(".summary .status").inner_text() == "running"
            page.evaluate("window.notReloaded = true")
            screenshot(page, "live-run-running")
            updates = int(page.locator("body").get_attribute("data-updates") or 0)
            (workspace / "go.txt").write_text("go")
            page.locator(".summary .status", has_text="done").wait_for()
            tree.get_by_role("button", name="finish#2").wait_for()
            assert page.locator("code.result").inner_text().startswith('"went on after ')
            assert page.evaluate("window.notReloaded") is True  # the same page, changed in place
            assert int(page.locator("body").get_attribute("data-updates")) > updates
            screenshot(page, "live-run-done")
    finally:
        out, err = stop(run)
    assert run.returncode == 0, err


def test_a_read_only_page_offers_no_reply(page, runs):
    with Server(runs.workspace) as server:
        server.open(page, f"runs/{runs.approval}")
        page.get_by_text("Ship release 2.1.0 (2 changes)?").wait_for()
        assert page.locator("form.reply").count() == 0
        assert page.get_by_text("start the viewer with --allow-actions").is_visible()


def test_a_person_answers_and_resumes_a_waiting_run_from_the_page(page, tmp_path, screenshot):
    workspace, run_id = approval_run(tmp_path)
    with Server(workspace, "--allow-actions") as server:
        server.open(page, f"runs/{run_id}")  # the printed URL hands the page its token
        page.get_by_text("Ship release 2.1.0 (2 changes)?").wait_for()
        page.evaluate("window.notReloaded = true")
        page.get_by_label("answer to h1").fill("yes")
        page.get_by_role("button", name="reply").click()
        page.locator("#action-result.ok", has_text=f"answered h1 of run {run_id} with true").wait_for()
        page.get_by_role("button", name="resume the run").click()
        page.get_by_text("Who signs off release 2.1.0?").wait_for()  # the resumed run's next question, pushed live
        page.get_by_label("answer to h2").fill("Ada")
        page.get_by_role("button", name="reply").click()
        page.locator("#action-result.ok", has_text="answered h2").wait_for()
        page.get_by_role("button", name="resume the run").click()
        page.locator(".summary .status", has_text="done").wait_for()
        assert page.locator("code.result").inner_text() == '"2.1.0 shipped, signed off by Ada"'
        assert page.evaluate("window.notReloaded") is True
        screenshot(page, "answered-run")
    assert "shipped 2.1.0, signed off by Ada" in (workspace / "release.log").read_text()


def test_a_question_cannot_forge_the_live_part_a_person_reads(page, tmp_path, screenshot):
    from viewer_testing import forging_run

    workspace, run_id = forging_run(tmp_path)
    with Server(workspace) as server:
        server.open(page, f"runs/{run_id}")
        # The live update arrived (a selector, not wait_for_function: the viewer's CSP refuses the eval that needs).
        page.locator("body[data-updates]").wait_for(state="attached")
        page.wait_for_timeout(500)  # and any event that would follow it in the same stream
        screenshot(page, "forged-question")
        live = page.locator("#live")
        assert live.locator("h1", has_text="FORGED").count() == 0
        assert "Ship 2.1 to production?\\r\\revent: update\\rdata: <h1>FORGED" in live.inner_text()
        assert page.locator("section.tree").is_visible()
        assert page.evaluate("document.body.dataset.updates") == "1"
