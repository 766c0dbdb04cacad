"""`pipe serve` shows a running run's printed lines and step count while its attempt runs, over real HTTP."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")
pytest.importorskip("uvicorn", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")

from viewer_testing import PRINTING_PROGRAM, Server, pipe_process, stop, wait_for  # noqa: E402


def _steps(page: str) -> int | None:
    found = re.search(r'<span class="steps">(\d+)</span>', page)
    return int(found.group(1)) if found else None


def test_a_running_run_page_shows_what_it_printed_and_its_steps_so_far(tmp_path):
    (tmp_path / "printing.pipe").write_text(PRINTING_PROGRAM)
    run = pipe_process("run", "printing.pipe", cwd=tmp_path)
    try:
        with Server(tmp_path) as server:
            link = wait_for(lambda: re.search(r'href="/runs/(\w+)"', server.http.get(server.url).text),
                            "the run on the runs page")
            page_url = f"{server.url}runs/{link.group(1)}"

            def running(page: str):
                return page if "status-running" in page and _steps(page) else None

            first = wait_for(lambda: running(server.http.get(page_url).text), "the steps of the run while it runs")
            assert "so far" in first and "waiting for go.txt" in first  # the line printed before the wait
            later = wait_for(lambda: (lambda p: p if running(p) and _steps(p) > _steps(first) else None)(
                server.http.get(page_url).text), "more steps while it runs")
            lines = re.findall(r"still waiting after (\d+) naps", later)
            assert lines and lines == sorted(lines, key=int)  # the lines printed so far, in order
            (tmp_path / "go.txt").write_text("go")
            done = wait_for(lambda: (lambda p: p if "status-done" in p else None)(server.http.get(page_url).text),
                            "the run's end")
            assert "so far" not in done and _steps(done) >= _steps(later)
            run.wait(timeout=60)  # done in its journal; the process then closes the run and exits
    finally:
        out, err = stop(run)
    assert run.returncode == 0, err
