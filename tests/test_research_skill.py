"""research.ask, the research agent as a skill a .pipe program calls (issue 25 item 2): the golden programs of
tests/research_golden/ run durably with a scripted model and a local test web on 127.0.0.1; the call is one journaled
step (a replay asks no model), its model calls count against the run's --max-tokens, and offline it falls back to
word overlap and experiments a question carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testing import pipe
from durable_testing import only_run_id
from pipe_testing import output_lines, read_expectations, registry
from web_testing import LocalWeb

from orgtree_lang.compile.api import compile_source
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.models.roles import RunModels
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.vm.budget import Budget

GOLDEN = sorted((Path(__file__).parent / "research_golden").glob("*.pipe"))
PAGES = {
    "/docs/zephyrine": ("Zephyrine gateway", "The Zephyrine gateway routes telemetry between depots. "
                        "<a href='/docs/zephyrine/network-port'>Network settings</a>"),
    "/docs/zephyrine/network-port": ("Network settings", "Unless configured otherwise the Zephyrine gateway listens "
                                     "on port 7319 for incoming telemetry."),
}
ACCEPT = json.dumps({"concerns": [], "summary": "the page says so"})


def answer(path: str, base: str) -> tuple[str, str] | None:
    """The pages, and a SearXNG-style /search that finds only the product page."""
    if path.startswith("/search"):
        return json.dumps({"results": [{"title": "Zephyrine gateway", "url": f"{base}/docs/zephyrine",
                                        "content": "routes telemetry"}]}), "application/json"
    if path not in PAGES:
        return None
    title, text = PAGES[path]
    return f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>", "text/html"


@pytest.fixture
def web(tmp_path):
    with LocalWeb(answer, tmp_path) as local:
        yield local.base


def scripted_models(folder: Path, base: str) -> list[str]:
    """--model and --review-model for the research agent (rules over what it is asked) and its insight reviewer."""
    plan = {"plan": [{"question": "On which port does the Zephyrine gateway listen by default?", "kind": "lookup",
                      "queries": ["Zephyrine gateway"]}]}
    author = [
        {"match": {"regex": r"^- On which port"}, "reply": json.dumps(plan)},
        {"match": {"contains": f"Source: {base}/docs/zephyrine\n"},
         "reply": json.dumps({"relevant": False, "answer": "", "follow": [f"{base}/docs/zephyrine/network-port"]})},
        {"match": {"contains": "listens on port 7319"},
         "reply": json.dumps({"relevant": True, "answer": "port 7319", "follow": []})},
        {"reply": json.dumps({"relevant": False, "answer": "", "follow": []})},
    ]
    (folder / "agent.json").write_text(json.dumps(author))
    (folder / "reviewer.json").write_text(json.dumps([{"reply": ACCEPT}]))
    return [f"scripted:{folder / 'agent.json'}", f"scripted:{folder / 'reviewer.json'}"]


def run_golden(path: Path, workspace: Path, models: RunModels, **options):
    source = path.read_text(encoding="utf-8")
    (workspace / path.name).write_text(source)
    reg = registry()
    program = compile_source(source, str(workspace / path.name), reg).program
    printed: list[str] = []
    run_program(program, workspace, reg, RunOptions(workspace=workspace, registry=reg, models=models, durable=True,
                                                    printer=printed.append, **options),
                source=source, program_path=workspace / path.name)
    return source, output_lines(printed)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_research_golden(path: Path, tmp_path: Path, web: str):
    author, reviewer = scripted_models(tmp_path, web)
    source, printed = run_golden(path, tmp_path, RunModels(author, reviewer))
    assert printed == [line.replace("{web}", web) for line in read_expectations(source).output]


def test_the_call_is_one_journaled_step_so_a_replay_asks_no_model(tmp_path: Path, web: str):
    author, reviewer = scripted_models(tmp_path, web)
    run_golden(GOLDEN[0], tmp_path, RunModels(author, reviewer))
    (insight,) = InsightPool.for_workspace(tmp_path).insights("active")
    assert insight.author == "research agent" and "port 7319" in insight.text
    (tmp_path / "agent.json").write_text("[]")  # a replay that asked would find no answer
    (tmp_path / "reviewer.json").write_text("[]")
    replayed = pipe("replay", only_run_id(tmp_path), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr


def test_the_agents_model_calls_count_against_the_runs_token_budget(tmp_path: Path, web: str):
    author, reviewer = scripted_models(tmp_path, web)
    with pytest.raises(PipeRuntimeError) as err:
        run_golden(GOLDEN[0], tmp_path, RunModels(author, reviewer), budget=Budget(max_tokens=50))
    assert "model tokens budget exceeded: limit 50" in err.value.message and "for research" in err.value.message
    assert err.value.kind == "budget" and not err.value.catchable


def test_offline_a_program_gets_the_answer_of_the_experiment_its_question_carries(tmp_path: Path):
    question = ("How many primes are below 100?\\n```python\\nprint(len([n for n in range(2, 100) if all(n % d for d "
                "in range(2, n))]))\\n```")
    (tmp_path / "primes.pipe").write_text(f'use research\n\npipeline main() -> str:\n    done = research.ask('
                                          f'["{question}"], web=false)\n    return done["findings"][0]["answer"]\n')
    ran = pipe("run", "primes.pipe", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "25"


def test_a_call_with_no_question_says_how_to_ask(tmp_path: Path):
    (tmp_path / "none.pipe").write_text('use research\n\npipeline main() -> any:\n    return research.ask([" "])\n')
    ran = pipe("run", "none.pipe", cwd=tmp_path)
    assert ran.returncode != 0 and "research.ask: no question given" in ran.stderr
