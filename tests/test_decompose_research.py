"""Research instead of failure: a "needs research" answer starts the research child (stdlib/research.pipe), its
findings are reviewed as insights and given to the author, which then writes the module."""

from __future__ import annotations

import json

import pytest
from decompose_testing import NEEDS_RESEARCH, NO_CONCERNS, TICKETS, TICKETS_MODULE, Recording, run_decomposed
from web_testing import LocalWeb

from orgtree_lang.decompose.research import recorded_needs
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.memory import Memory
from orgtree_lang.runtime.errors import PipeRuntimeError

NOTES = ("# Ticket API notes\n\nAuthentication uses a bearer token.\n"
         "The endpoint GET /v2/tickets?state=open lists open tickets of the ticket API, newest first.\n"
         "Closed tickets are archived after 90 days.\n")


def run(tmp_path, reviewer_rules=None, **settings):
    author = Recording(tmp_path / "a.json", [{"match": {"contains": "Research was done"}, "reply": TICKETS_MODULE},
                                            {"reply": NEEDS_RESEARCH}], "author")
    reviewer = Recording(tmp_path / "r.json", reviewer_rules or [{"reply": NO_CONCERNS}], "reviewer")
    return run_decomposed(tmp_path, TICKETS, {"base": "https://tickets.test"}, author, reviewer, file="tickets.pipe",
                          **settings), author, reviewer


def remember_notes(tmp_path) -> None:
    with Memory(tmp_path, vectors=False) as memory:
        memory.add(NOTES, name="ticket-api.md")


def test_research_from_the_workspace_memory_becomes_an_insight_and_the_author_succeeds(tmp_path):
    remember_notes(tmp_path)
    result, author, _ = run(tmp_path, protocol=False)
    assert result == "https://tickets.test/v2/tickets?state=open"
    retry = author.requests[1][-1].content
    assert "Which endpoint of the ticket API lists open tickets?" in retry
    assert "GET /v2/tickets?state=open lists open tickets" in retry
    assert "no web search: research used the workspace memory only" in retry
    with InsightPool.for_workspace(tmp_path) as pool:
        (insight,) = pool.insights()
    assert "/v2/tickets?state=open" in insight.text and insight.status == "active"
    assert "workspace memory node #" in insight.evidence and "tickets_url" in insight.evidence
    assert len(recorded_needs(tmp_path)) == 1


def test_a_finding_the_reviewer_rejects_is_not_given_to_the_author(tmp_path):
    remember_notes(tmp_path)
    concern = json.dumps({"summary": "unsupported", "concerns": [{
        "id": "c1", "severity": "blocking", "spec_basis": "evidence must support the insight",
        "evidence": "one note is not enough", "suggested_fix": "find a second source"}]})
    _, author, _ = run(tmp_path, [{"match": {"contains": "insight/"}, "reply": concern}, {"reply": NO_CONCERNS}],
                       protocol=False)
    retry = author.requests[1][-1].content
    assert "1 finding(s) were rejected" in retry and "GET /v2/tickets" not in retry


def test_research_is_bounded_a_second_need_fails_with_the_questions(tmp_path):
    author = Recording(tmp_path / "a.json", [{"reply": NEEDS_RESEARCH}], "author")
    reviewer = Recording(tmp_path / "r.json", [{"reply": NO_CONCERNS}], "reviewer")
    with pytest.raises(PipeRuntimeError, match="needs research before it can be written") as err:
        run_decomposed(tmp_path, TICKETS, {"base": "b"}, author, reviewer, file="tickets.pipe", protocol=False)
    assert "Which endpoint" in err.value.hint and len(recorded_needs(tmp_path)) == 2


def site(path: str, base: str) -> tuple[str, str]:
    """A SearXNG-style JSON search and one documentation page, on 127.0.0.1."""
    if path.startswith("/search"):
        return json.dumps({"results": [{"title": "Ticket API reference", "url": f"{base}/docs",
                                        "content": "Endpoints of the ticket API"}]}), "application/json"
    return ("<html><body><h1>Ticket API reference</h1><p>Authentication: bearer tokens.</p>"
            "<p>GET /v2/tickets?state=open lists the open tickets of the ticket API.</p></body></html>"), "text/html"


def test_research_on_the_web_through_a_local_search_server(tmp_path):
    with LocalWeb(site, tmp_path, extra="") as web:
        result, author, _ = run(tmp_path, protocol=False)
    assert result == "https://tickets.test/v2/tickets?state=open"
    assert any(p.startswith("/search?q=Which+endpoint") for p in web.seen) and "/docs" in web.seen
    with InsightPool.for_workspace(tmp_path) as pool:
        (insight,) = pool.insights()
    assert f"{web.base}/docs" in insight.evidence
    assert "GET /v2/tickets?state=open lists the open tickets" in author.requests[1][-1].content


def test_with_the_web_unreachable_research_says_it_used_the_memory_only(tmp_path):
    remember_notes(tmp_path)
    (tmp_path / "orgtree.toml").write_text('[web]\nsearch = "searxng"\nurl = "http://127.0.0.1:9"\n\n'
                                          '[http]\nallow = ["http://127.0.0.1:9"]\n')
    result, author, _ = run(tmp_path, protocol=False)
    assert result == "https://tickets.test/v2/tickets?state=open"
    retry = author.requests[1][-1].content
    assert "the web was not reachable" in retry and "used the workspace memory only" in retry


def test_a_workspace_research_module_replaces_the_stdlib_one(tmp_path):
    (tmp_path / "my_research.pipe").write_text('''record Finding:
    question: str
    answer: str
    source: str

record Research:
    findings: list[Finding]
    notes: list[str]

pipeline main(questions: list[str], web: bool) -> Research:
    found = []
    for question in questions:
        found += [Finding(question=question, answer="ask the team: GET /v2/tickets?state=open", source="the team wiki")]
    return Research(findings=found, notes=["answered by my_research.pipe"])
''')
    result, author, _ = run(tmp_path, protocol=False, research_module="my_research.pipe")
    assert result == "https://tickets.test/v2/tickets?state=open"
    retry = author.requests[1][-1].content
    assert "ask the team: GET /v2/tickets?state=open (source: the team wiki)" in retry
    assert "Note: answered by my_research.pipe" in retry
