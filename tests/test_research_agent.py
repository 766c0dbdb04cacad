"""The research agent (issue 25 item 2): stdlib/research.pipe plans, searches the memory and a web provider, reads hits
with a model, follows links within [http] allow, runs experiments in the sandbox and cites its sources. The web is a
local HTTP server on 127.0.0.1 (a SearXNG-style search plus pages); the agent's model is scripted."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from chat_server import ChatServer
from cli_testing import pipe
from durable_testing import only_run_id
from web_testing import LocalWeb

from orgtree_lang.compile.api import compile_source
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.memory import Memory
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.models.roles import RunModels
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

REGISTRY = default_registry(plugins=False)
PORT_QUESTION = "What is the default port of the frobnicator server?"
PRIMES_QUESTION = "How many primes are there below 10000?"
# A host the [http] allowlist does not name: the agent may pick the link, the fetch is refused.
OUTSIDE = "http://192.0.2.1/frobnicator-server-mirror"

PAGES = {
    # The search finds only the index, which does not say the port but links to the page that does (the link's
    # text shares no word with the question: only its address does).
    "/docs": "<html><body><h1>Documentation index</h1><p>Start here.</p>"
             "<p><a href='/docs/frobnicator-server'>Read more</a> <a href='" + OUTSIDE + "'>Mirror</a></p>"
             "</body></html>",
    "/docs/frobnicator-server": "<html><body><h1>Networking</h1><p>Unless configured otherwise, the frobnicator "
                                "server listens on port 8421.</p></body></html>",
}


SEEN: list[str] = []  # every path the local web was asked, in order


def answer(path: str, base: str) -> tuple[str, str] | None:
    if path.startswith("/search"):
        return json.dumps({"results": [{"title": "Documentation", "url": f"{base}/docs",
                                        "content": "Start here."}]}), "application/json"
    return (PAGES[path], "text/html") if path in PAGES else None


@pytest.fixture
def web(tmp_path):
    """A local web on 127.0.0.1, configured as the workspace's search provider and only allowed origin."""
    SEEN.clear()
    with LocalWeb(answer, tmp_path, seen=SEEN) as local:
        yield local.base


def test_offline_research_follows_a_link_from_a_search_hit_and_cites_the_page(tmp_path, web):
    done = pipe("research", PORT_QUESTION, "--workspace", tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (finding,) = json.loads(done.stdout)["findings"]
    assert "port 8421" in finding["answer"] and finding["source"] == f"{web}/docs/frobnicator-server"
    assert "/docs" in SEEN and "/docs/frobnicator-server" in SEEN
    # With no review model nothing joins the pool unreviewed; the finding says why.
    assert finding["insight"].startswith("not proposed") and "reviewer" in finding["insight"]


def test_a_link_outside_the_http_allowlist_is_not_fetched_and_noted(tmp_path, web):
    done = pipe("research", PORT_QUESTION, "--workspace", tmp_path, cwd=tmp_path)
    notes = json.loads(done.stdout)["notes"]
    assert any(note.startswith(f"could not read {OUTSIDE}") for note in notes), notes


def test_an_unanswerable_question_is_given_up_after_max_reads_with_a_note(tmp_path, web):
    done = pipe("research", "Which colour is the zebrafish logo?", "--max-reads", "1", "--workspace", tmp_path,
                cwd=tmp_path)
    result = json.loads(done.stdout)
    assert result["findings"] == []
    assert 'no answer found for "Which colour is the zebrafish logo?" in 1 read(s)' in result["notes"]


def test_offline_an_empirical_question_with_its_own_code_is_answered_by_running_it(tmp_path):
    question = "How many primes are below 100?\n```python\nprint(len([n for n in range(2, 100) if all(n % d for d in " \
               "range(2, n))]))\n```"
    done = pipe("research", question, "--workspace", tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (finding,) = json.loads(done.stdout)["findings"]
    assert finding["answer"] == "25" and finding["source"].startswith("experiment (python in code.run, exit code 0)")


def agent_rules(base: str) -> list[dict]:
    plan = {"plan": [{"question": PRIMES_QUESTION, "kind": "empirical", "queries": [PRIMES_QUESTION]},
                     {"question": PORT_QUESTION, "kind": "lookup", "queries": ["frobnicator server default port"]}]}
    insight = ("<note>\nplan: count the primes by experiment, look the port up\n</note>\n"
               '<insight tags="research">\ntext: The frobnicator docs live under /docs of the local web.\n'
               "evidence: the search provider's only result for the product is its /docs index.\n</insight>")
    code = "print(sum(1 for n in range(2, 10000) if all(n % d for d in range(2, int(n ** 0.5) + 1))))"
    return [
        {"match": {"regex": r"^- How many primes"}, "reply": json.dumps(plan) + "\n" + insight},
        {"match": {"contains": ["Source: experiment", "1229"]},
         "reply": json.dumps({"relevant": True, "answer": "1229 primes are below 10000", "follow": []})},
        {"match": {"regex": r"^Question: How many primes"},
         "reply": json.dumps({"language": "python", "source": code})},
        {"match": {"contains": ["Source: " + base + "/docs\n", "Documentation index"]},
         "reply": json.dumps({"relevant": False, "answer": "",
                              "follow": [f"{base}/docs/frobnicator-server", "http://not-a-link-of-the-page/"]})},
        {"match": {"contains": "listens on port 8421"},
         "reply": json.dumps({"relevant": True, "answer": "port 8421, unless configured otherwise", "follow": []})},
        {"reply": json.dumps({"relevant": False, "answer": "", "follow": []})},
    ]


def run_agent(tmp_path, base: str):
    (tmp_path / "author.json").write_text(json.dumps(agent_rules(base)))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": json.dumps({"concerns": [], "summary": "ok"})}]))
    models = RunModels(f"scripted:{tmp_path / 'author.json'}", f"scripted:{tmp_path / 'reviewer.json'}")
    source = resources.files("orgtree_lang.stdlib").joinpath("research.pipe").read_text(encoding="utf-8")
    program = compile_source(source, "research.pipe", REGISTRY).program
    machine = plain_machine(program, registry=REGISTRY, context=SkillContext(Workspace(tmp_path), models=models))
    machine.start("main", {"questions": [PRIMES_QUESTION, PORT_QUESTION], "web": True})
    return machine.run().result, models


def test_the_agent_plans_runs_an_experiment_reads_pages_follows_its_links_and_cites_sources(tmp_path, web):
    result, _ = run_agent(tmp_path, web)
    primes, port = [finding.fields for finding in result.fields["findings"]]
    assert primes["answer"] == "1229 primes are below 10000"
    assert primes["source"].startswith("experiment (python in code.run, exit code 0): print(sum(1 for n in range(2")
    assert port["answer"] == "port 8421, unless configured otherwise"
    assert port["source"] == f"{web}/docs/frobnicator-server"
    # The link the model made up was not on the page: it was not fetched.
    assert SEEN.count("/docs/frobnicator-server") == 1 and not any("not-a-link" in p for p in SEEN)


def test_the_research_agent_takes_its_turns_and_its_insight_is_reviewed_before_it_joins_the_pool(tmp_path, web):
    run_agent(tmp_path, web)
    with Scratchpad.for_workspace(tmp_path) as pad:
        notes = pad.notes(agent="research agent")
    assert notes[0].text == "count the primes by experiment, look the port up"
    # One turn per answer: the plan, the experiment, its output, then each source read for the port (at least the
    # index and the page it links to); a scripted answer with no note gets the harness's plan ("answer: ...").
    assert len(notes) >= 5 and notes[-1].text == f"answer: Question: {PORT_QUESTION}"
    with InsightPool.for_workspace(tmp_path) as pool:
        (insight,) = pool.insights()
    assert insight.author == "research agent" and insight.status == "active" and "/docs" in insight.text


# ---- the agent's reads of the scratchpad are journaled steps of their own (research.read) ------------------------

def test_a_resumed_research_step_uses_the_read_it_journaled_and_later_steps_read_afresh(tmp_path):
    with Memory(tmp_path, vectors=False) as memory:
        memory.add("The frobnicator server listens on port 8421 unless configured otherwise.", name="notes.txt")
    state = {"judge": "not json"}
    judged: list[tuple[str, str]] = []  # (the question judged, the system message the agent was given)

    def answer(body: dict) -> str:
        system, prompt = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith("You are an independent reviewer"):
            return json.dumps({"concerns": [], "summary": "supported"})
        if system.startswith("You plan research"):
            return json.dumps({"plan": [{"question": q[2:], "kind": "lookup", "queries": ["frobnicator port"]}
                                        for q in prompt.splitlines() if q.startswith("- ")]})
        judged.append((prompt.splitlines()[0], system))
        return state["judge"]

    server = ChatServer(answer)
    models = ["--model", "openai/agent", "--api-base", server.base, "--context-window", "32000", "--no-web"]
    try:
        first = pipe("research", PORT_QUESTION, "Which port does the frobnicator use?", *models, "--workspace",
                     tmp_path, cwd=tmp_path)
        assert first.returncode != 0 and "research.judge" in first.stderr
        # Between the failure and the resume another agent writes on the pad.
        with Scratchpad.for_workspace(tmp_path) as pad:
            with pad.turn("other agent") as turn:
                turn.plan("the cellar holds the spare keys")
        state["judge"] = json.dumps({"relevant": True, "answer": "port 8421", "follow": []})
        run_id = only_run_id(tmp_path)
        resumed = pipe("resume", run_id, *models[:6], cwd=tmp_path)
    finally:
        server.close()
    assert resumed.returncode == 0, resumed.stderr
    (question, failed), (again_question, again), (second_question, second) = judged
    assert question == again_question == f"Question: {PORT_QUESTION}"
    # The step asked again is given what was read before it failed, not a new read of the pad ...
    assert again == failed and "cellar" not in again
    # ... while the next question's step reads the pad as it is now.
    assert second_question == "Question: Which port does the frobnicator use?" and "cellar holds the spare" in second
    replayed = pipe("replay", run_id, cwd=tmp_path)
    assert replayed.returncode == 0 and "0 outside call(s)" in replayed.stderr, replayed.stderr
