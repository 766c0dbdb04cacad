"""`pipe serve`'s skills pages over real HTTP: every skill with its docs, as `pipe skills` shows them, and one
skill's recorded calls and bug reports, as `pipe skills history` and `pipe skills bugs` show them."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")
pytest.importorskip("uvicorn", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")

from cli_testing import pipe  # noqa: E402
from viewer_testing import Server, finished_runs  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    made = finished_runs(tmp_path_factory.mktemp("skills"))
    filed = pipe("skills", "report", "text.contains", "--use-case", "match a phrase whatever its case",
                 "--expected", "Please add matches", "--observed", "no match", "--no-review",
                 "--workspace", made.workspace)
    assert filed.returncode == 0, filed.stderr
    return made


@pytest.fixture(scope="module")
def server(runs):
    with Server(runs.workspace) as running:
        yield running


def test_the_skills_page_lists_every_skill_pipe_skills_lists(server, runs):
    listed = pipe("skills", "--workspace", runs.workspace, "--json", env={"PIPE_NO_PLUGINS": "1"})
    names = [s["name"] for s in json.loads(listed.stdout)]
    page = server.http.get(f"{server.url}skills").text
    assert names and all(f'href="/skills/{name}"' in page for name in names)
    split = json.loads(pipe("skills", "text.split", "--json", "--workspace", runs.workspace).stdout)[0]
    assert split["description"].strip().splitlines()[0].replace('"', "&quot;") in page


def test_a_skill_page_shows_its_signature_parameters_and_docs(server, runs):
    shown = json.loads(pipe("skills", "text.contains", "--json", "--workspace", runs.workspace).stdout)[0]
    page = server.http.get(f"{server.url}skills/text.contains").text
    assert shown["signature"].replace("->", "-&gt;") in page
    for param in shown["params"]:
        assert f"<code>{param['name']}</code>" in page and f"<code>{param['type']}</code>" in page
    assert "pure" in page and f"from {shown['origin']}" in page


def test_a_skill_page_shows_the_calls_the_history_records_with_their_runs(server, runs):
    history = json.loads(pipe("skills", "history", "text.contains", "--json", "--workspace", runs.workspace).stdout)
    assert history  # the generated classify module called it
    page = server.http.get(f"{server.url}skills/text.contains").text
    assert f"{len(history)} call(s) shown, newest first, 0 failed" in page
    assert f'<a href="/runs/{runs.triage}">{runs.triage}</a>' in page
    assert "please add" in page  # an input of one of those calls
    assert page.count('class="status status-ok"') >= len(history)


def test_a_skill_page_shows_the_bug_reports_filed_about_it(server):
    page = server.http.get(f"{server.url}skills/text.contains").text
    assert "match a phrase whatever its case" in page and "Please add matches" in page
    assert "status-open" in page
    other = server.http.get(f"{server.url}skills/text.split").text
    assert "no bug reports about text.split" in other and "match a phrase" not in other


def test_an_unknown_skill_or_a_path_is_not_found(server):
    for name in ("text.nope", "..%2Fstate.db", "text.split%2F..", "mcp"):
        response = server.http.get(f"{server.url}skills/{name}")
        assert response.status_code == 404, name
        assert "SQLite" not in response.text
    assert "no skill text.nope in this workspace" in server.http.get(f"{server.url}skills/text.nope").text
    assert server.http.get(f"{server.url}skills/text.split").status_code == 200


def test_the_skills_page_needs_the_token(server):
    import httpx

    assert httpx.get(f"{server.url}skills").status_code == 401
