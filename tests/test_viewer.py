"""`pipe serve` over real HTTP: its pages show the runs, modules and memory; actions need the flag and the token."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")
pytest.importorskip("uvicorn", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")

import httpx  # noqa: E402
from cli_testing import pipe  # noqa: E402
from viewer_testing import EXAMPLES, Server, approval_run, finished_runs, wait_for  # noqa: E402

from orgtree_lang.syntax.highlight import highlighted  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return finished_runs(tmp_path_factory.mktemp("viewer"))


@pytest.fixture(scope="module")
def server(runs):
    with Server(runs.workspace) as running:
        yield running


def show(workspace: Path, run_id: str) -> dict:
    result = pipe("show", run_id, "--workspace", workspace, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_runs_page_lists_every_run_with_its_status(server, runs):
    page = server.http.get(server.url).text
    for run_id in (runs.triage, runs.supervisor, runs.approval):
        assert f'href="/runs/{run_id}"' in page
    assert "org_approval.pipe" in page and "status-waiting" in page and "status-done" in page


def test_a_run_page_shows_its_tree_result_and_generated_child(server, runs):
    page = server.http.get(f"{server.url}runs/{runs.triage}").text
    assert f'data-node="{runs.triage}/main/classify@3"' in page  # the ambiguous block's node
    assert f'data-node="{runs.triage}/main/classify@3/main"' in page  # the generated child's entry under it
    assert "&quot;bug&quot;" in page  # the run's result, escaped
    assert re.search(r'classify@3</span></button> <span class="kind">ambiguous</span> .*?[1-9][\d,]* tokens', page)


def test_a_node_panel_shows_its_figures_trace_events_and_the_module_it_wrote(server, runs):
    panel = server.http.get(f"{server.url}runs/{runs.triage}/node", params={"id": f"{runs.triage}/main/classify@3"}).text
    assert '<a class="module-link" href="/modules/ambiguous_triage/classify.pipe">' in panel
    # The author wrote twice, the reviewer read twice (2 review rounds), then the outputs of the module's first run.
    assert panel.count("<td>model</td>") == 5
    assert "scripted:models/triage_reviewer.yaml" in panel


def test_the_messages_of_a_run_are_listed_and_drawn_under_their_sender(server, runs):
    page = server.http.get(f"{server.url}runs/{runs.supervisor}").text
    assert "main/worker#1" in page and "polish" in page and "stop" in page
    sender = page.split(f'data-node="{runs.supervisor}/main"', 1)[1].split("</li>", 1)[0]
    assert '<li class="message">→ main/worker#1 ×2: &quot;polish&quot;, &quot;stop&quot;' in sender


def test_a_module_page_highlights_the_source_and_shows_its_review(server, runs):
    page = server.http.get(f"{server.url}modules/ambiguous_triage/classify.pipe").text
    assert '<span class="tok-keyword">pipeline</span> <span class="tok-definition">main</span>' in page
    assert '<span class="tok-string">&quot;please add&quot;</span>' in page
    assert "phrases are matched case-sensitively" in page  # the concern the reviewer raised in round 1
    assert "resolved" in page


def test_a_module_path_outside_the_modules_folder_is_not_served(server, runs):
    for path in ("modules/../state.db", "modules/..%2Fstate.db", "modules/%2E%2E/%2E%2E/state.db"):
        response = server.http.get(server.url + path)
        assert response.status_code == 404, path
        assert "SQLite" not in response.text


def test_a_run_is_named_by_its_id_never_by_a_path_or_a_pattern(server, runs):
    assert server.http.get(f"{server.url}runs/{runs.triage[:4]}").status_code == 200  # a prefix, as `pipe show` takes
    for ref in ("*", "%2E%2E", runs.triage[:2] + "*", "%2E"):  # (a client folds a bare `..` away itself)
        response = server.http.get(f"{server.url}runs/{ref}")
        assert response.status_code == 404, ref
        assert "expected a run id" in response.text
    from orgtree_lang.runtime.errors import UsageError
    from orgtree_lang.viewer.runs import read_run

    for ref in ("..", ".", str(runs.workspace / ".orgtree" / "runs" / runs.triage)):
        with pytest.raises(UsageError, match="expected a run id"):
            read_run(runs.workspace, ref)


def test_a_request_for_another_host_name_is_refused(server):
    # A page on a site whose name resolves to 127.0.0.1 (DNS rebinding) must not read the runs.
    assert server.http.get(server.url, headers={"Host": "evil.example"}).status_code == 400
    assert server.http.get(server.url).status_code == 200


def test_a_read_only_viewer_refuses_a_reply_and_the_run_still_waits(server, runs):
    response = server.http.post(f"{server.url}actions/reply", json={"run": runs.approval, "text": "yes"},
                          headers={"X-Pipe-Token": "anything"})
    assert response.status_code == 403
    assert "read-only" in response.json()["message"] and "--allow-actions" in response.json()["message"]
    assert show(runs.workspace, runs.approval)["status"] == "waiting"
    page = server.http.get(f"{server.url}runs/{runs.approval}").text
    assert "Ship release 2.1.0 (2 changes)?" in page and '<form class="reply"' not in page


def test_an_action_without_the_token_or_with_a_wrong_one_is_refused(tmp_path):
    workspace, run_id = approval_run(tmp_path)
    with Server(workspace, "--allow-actions") as server:
        assert len(server.token) >= 24
        missing = server.http.post(f"{server.url}actions/reply", json={"run": run_id, "text": "yes"})
        wrong = server.http.post(f"{server.url}actions/reply", json={"run": run_id, "text": "yes"},
                           headers={"X-Pipe-Token": server.wrong_token})
        resume = server.http.post(f"{server.url}actions/resume", json={"run": run_id})
        elsewhere = server.http.post(f"{server.url}actions/reply", headers={"X-Pipe-Token": server.token},
                               json={"run": str(workspace / ".orgtree" / "runs" / run_id), "text": "yes"})
    assert (missing.status_code, wrong.status_code, resume.status_code) == (403, 403, 403)
    assert "needs the token" in missing.json()["message"] and "wrong token" in wrong.json()["message"]
    assert elsewhere.status_code == 400 and "expected a run id" in elsewhere.json()["message"]  # a path: refused
    assert show(workspace, run_id)["status"] == "waiting"
    assert not (workspace / "release.log").read_text().count("shipped")


def test_a_reply_and_a_resume_with_the_token_continue_the_run(tmp_path):
    workspace, run_id = approval_run(tmp_path)
    with Server(workspace, "--allow-actions") as server:
        headers = {"X-Pipe-Token": server.token}
        answered = server.http.post(f"{server.url}actions/reply", json={"run": run_id, "text": "yes"}, headers=headers)
        assert answered.status_code == 200, answered.text
        assert answered.json()["message"] == f"answered h1 of run {run_id} with true"  # as `pipe reply` says it
        resumed = server.http.post(f"{server.url}actions/resume", json={"run": run_id}, headers=headers)
        assert resumed.status_code == 200, resumed.text
        # Approved, the run goes on to its next question: who signs off.
        shown = wait_for(lambda: (lambda s: s if s["status"] == "waiting" and s["steps"] > 8 else None)(
            show(workspace, run_id)), "the resumed run asking its second question")
        assert "Who signs off release 2.1.0?" in json.dumps(shown["waiting"])
        again = server.http.post(f"{server.url}actions/reply", json={"run": run_id, "text": "Ada"}, headers=headers)
        assert again.status_code == 200 and "answered h2" in again.json()["message"]
        server.http.post(f"{server.url}actions/resume", json={"run": run_id}, headers=headers)
        wait_for(lambda: show(workspace, run_id)["status"] == "done", "the resumed run finishing")
        done = server.http.post(f"{server.url}actions/resume", json={"run": run_id}, headers=headers)
    assert done.status_code == 409 and "is done: there is nothing to resume" in done.json()["message"]
    assert (workspace / "release.log").read_text().endswith("shipped 2.1.0, signed off by Ada\n")


def test_the_scratchpad_and_insight_pages_show_what_agents_wrote(tmp_path):
    from orgtree_lang.memory.insights import InsightPool
    from orgtree_lang.memory.scratchpad import Scratchpad

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with Scratchpad.for_workspace(workspace, on_recover=lambda r: None) as pad:
        pad.note("planner", "split the <work> in two")
    with InsightPool.for_workspace(workspace) as pool:
        pool.propose_add("retry flaky fetches once", "3 of 40 fetches failed then passed", author="coder",
                         tags=["web"])
    with Server(workspace) as server:
        notes = server.http.get(f"{server.url}pad").text
        insights = server.http.get(f"{server.url}insights").text
    assert "<td>planner</td>" in notes and "split the &lt;work&gt; in two" in notes  # escaped, not markup
    assert "retry flaky fetches once" in insights and "3 of 40 fetches failed then passed" in insights
    assert "<td>proposed</td>" in insights and "<td>pending</td>" in insights


def test_serve_refuses_a_folder_that_does_not_exist(tmp_path):
    result = pipe("serve", "--workspace", tmp_path / "nowhere")
    assert result.returncode == 2 and "no such workspace folder" in result.stderr


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.pipe")), ids=lambda p: p.name)
def test_highlighting_keeps_the_source_and_classes_tokens_as_the_lexer_reads_them(path):
    source = path.read_text(encoding="utf-8")
    pieces = highlighted(source)
    assert "".join(piece.text for piece in pieces) == source
    kinds = {piece.text: piece.kind for piece in pieces if piece.kind}
    assert kinds.get("pipeline") == "keyword" and kinds.get("main") == "definition"
    assert all(piece.text.startswith("#") for piece in pieces if piece.kind == "comment")


def test_highlighting_tells_a_hash_in_a_string_from_a_comment_and_a_soft_keyword_from_a_keyword():
    source = 'pipeline main(label: str) -> str:\n    x = "# not a comment"  # a comment\n    return x\n'
    pieces = [(p.text, p.kind) for p in highlighted(source)]
    assert ('"# not a comment"', "string") in pieces and ("# a comment", "comment") in pieces
    assert ("label", "keyword") not in pieces  # `label` is a name here, as the parser reads it
    assert ("return", "keyword") in pieces


def sse_events(text: str) -> list[tuple[str, str]]:
    """Parse an event stream as a browser does (the HTML standard): a line ends at \\r\\n, \\r or \\n."""
    events, name, data = [], "message", []
    for line in re.split(r"\r\n|\r|\n", text):
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return events


def test_a_carriage_return_in_a_question_cannot_forge_a_live_update(tmp_path):
    from viewer_testing import FORGING_QUESTION, forging_run

    workspace, run_id = forging_run(tmp_path)
    with Server(workspace) as server:
        with server.http.stream("GET", f"{server.url}runs/{run_id}/live") as stream:
            text = ""
            for chunk in stream.iter_text():
                text += chunk
                if "\n\n" in text:
                    break
    first = text.split("\n\n", 1)[0] + "\n\n"
    assert "\r" not in first
    events = sse_events(first)
    assert len(events) == 1 and events[0][0] == "update", events
    assert "FORGED" in events[0][1] and "<h1>" not in events[0][1]  # the question's text, escaped, in the real update
    assert "Ship 2.1 to production?\\r\\revent: update\\rdata: &lt;h1&gt;FORGED" in events[0][1]
    assert FORGING_QUESTION.startswith("Ship 2.1 to production?\r")


def test_every_page_and_stream_needs_the_printed_token(server, runs):
    import httpx

    with httpx.Client(timeout=30) as stranger:  # another account on this machine: no cookie, no header
        for path in ("", f"runs/{runs.triage}", f"runs/{runs.triage}/live", "live/runs", "modules", "pad",
                     "insights", f"runs/{runs.triage}/node?id=x", "static/viewer.js", "?token=guess"):
            response = stranger.get(server.url + path)
            assert response.status_code == 401, path
            assert "needs the token" in response.text and runs.triage not in response.text
        assert stranger.get(server.url, headers={"X-Pipe-Token": server.wrong_token}).status_code == 401
        assert stranger.get(server.url, headers={"Authorization": f"Bearer {server.token}"}).status_code == 200
        entered = stranger.get(server.entry)
        assert entered.status_code == 303 and entered.headers["location"] == "/"  # the token leaves the address bar
        cookie = entered.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert f'href="/runs/{runs.triage}"' in stranger.get(server.url).text  # the cookie opens every page now


def test_on_a_wildcard_address_only_this_machines_names_and_the_allowed_ones_are_answered(runs):
    import socket

    import anyio
    import httpx

    from orgtree_lang.viewer.app import build_app
    from orgtree_lang.viewer.page import Site

    token = "t" * 32
    app = build_app(Site(runs.workspace, False, token, "0.0.0.0"), allow_hosts=("proxy.example",))

    async def status(host: str) -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as client:
            answer = await client.get("/modules", headers={"Host": host, "X-Pipe-Token": token})
            return answer.status_code

    own = socket.gethostname()
    assert anyio.run(status, "rebound.evil.example") == 400  # DNS rebinding: a stranger's name for this address
    assert anyio.run(status, "rebound.evil.example:8765") == 400
    for host in (own, f"{own}:8765", "127.0.0.1:8765", "[::1]:8765", "localhost", "proxy.example:443"):
        assert anyio.run(status, host) == 200, host
