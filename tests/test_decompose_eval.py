"""benchmarks/decompose_eval.py end to end: both flows through `pipe run` against a scripted OpenAI-compatible server
on 127.0.0.1 (the litellm path the model bridge serves), then the figures; and the tasks' hidden cases."""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from orgtree_lang.decompose.size import MAX_STATEMENTS, size_problems
from orgtree_lang.decompose.validate import validate_module
from pipe_testing import compile_text, registry
from decompose_testing import PRICE_FIRST, PRICE_FIXED

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while they are built
    spec.loader.exec_module(module)
    return module


evaluation = _load("decompose_eval", BENCH / "decompose_eval.py")
measure = _load("language_tasks_measure", BENCH / "language_tasks" / "measure.py")
TASKS = evaluation.task_names(evaluation.TASKS)


REAL_DATA = [t for t in TASKS if (evaluation.TASKS / t / "naive.pipe").is_file()]


def test_there_are_six_tasks_three_big_and_three_with_edge_cases_and_three_for_real_data() -> None:
    assert len(TASKS) >= 9 and len(REAL_DATA) >= 3


@pytest.mark.parametrize("task", TASKS)
def test_each_task_compiles_states_examples_only_for_real_data_and_its_solution_passes_every_hidden_case(task: str) -> None:
    folder = evaluation.TASKS / task
    program = compile_text((folder / "task.pipe").read_text(encoding="utf-8"), f"{task}.pipe", registry()).program
    (block,) = [a for p in program.pipelines.values() for a in p.ambiguous]
    # The "before" flow is today's: a block that stated examples would be simulated there too. Only the real-data
    # tasks state some (and the expectations a run checks), with a module that follows only them (naive.pipe).
    assert bool(block.examples) == bool(block.expects) == (folder / "naive.pipe").is_file()
    cases = json.loads((folder / "hidden.json").read_text(encoding="utf-8"))
    run_inputs = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert len(cases) >= 7 and run_inputs not in [c["inputs"] for c in cases]
    solution = (folder / "solution.pipe").read_text(encoding="utf-8")
    passed, failures = measure.run_cases(solution, cases)
    assert failures == [] and passed == len(cases)
    # It is a module the decomposer would accept for the block: so a model can write one.
    assert validate_module(solution, block, registry(), "solution.pipe").problems == []
    assert size_problems(solution, "solution.pipe", MAX_STATEMENTS) == []


@pytest.mark.parametrize("task", REAL_DATA)
def test_a_module_following_only_the_examples_passes_them_and_real_data_shows_it_wrong_at_run_time(task, tmp_path):
    """The real-data tasks' hidden cases go past the block's examples: a module that meets every example (naive.pipe)
    fails some hidden cases with evidence a run has (an error a repair is for, or a failed `expect`), so the
    repair flow's first module passes fewer than all and a repair on real data can fix it."""
    from orgtree_lang.decompose.evidence import NOT_REPAIRED
    from orgtree_lang.decompose.repair import failed_expectation
    from orgtree_lang.decompose.simulate import Case, simulate, with_tests
    from orgtree_lang.runtime.errors import PipeRuntimeError
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.run.runner import RunOptions, run_program
    from orgtree_lang.runtime.values import strict_equal, to_plain
    from orgtree_lang.runtime.workspace import Workspace
    from orgtree_lang.vm.budget import Budget

    folder = evaluation.TASKS / task
    program = compile_text((folder / "task.pipe").read_text(encoding="utf-8"), f"{task}.pipe", registry()).program
    (block,) = [a for p in program.pipelines.values() for a in p.ambiguous]
    naive = (folder / "naive.pipe").read_text(encoding="utf-8")
    assert validate_module(naive, block, registry(), "naive.pipe").problems == []
    cases = [Case.of(example, "spec") for example in block.examples]
    results = simulate(with_tests(naive, block, cases), "naive.pipe", block, cases, registry(),
                       SkillContext(Workspace(tmp_path)))
    assert [r.outcome for r in results] == ["passed"] * len(cases), [r.error for r in results]
    naive_program = compile_text(naive, "naive.pipe", registry()).program
    evidence, passed = [], 0  # per failing hidden case: whether a run has evidence of it
    (output,) = [name for name, _ in block.outputs]
    for number, case in enumerate(json.loads((folder / "hidden.json").read_text(encoding="utf-8"))):
        options = RunOptions(inputs=dict(case["inputs"]), budget=Budget(max_steps=100_000), tree=False,
                             printer=lambda _text: None, trace=tmp_path / f"t{number}.jsonl", use_cache=False)
        try:
            result = to_plain(run_program(naive_program, tmp_path, registry(), options).state.result)
        except PipeRuntimeError as err:
            if "error" in case and case["error"] in err.message:
                passed += 1
            else:
                evidence.append(err.kind not in NOT_REPAIRED)
            continue
        if strict_equal(result, case.get("expected")):
            passed += 1
        else:
            evidence.append(failed_expectation(block, case["inputs"], {output: result}, registry(), None) is not None)
    assert 0 < passed < passed + len(evidence) and any(evidence), (passed, evidence)


# ---- the harness against a scripted endpoint ---------------------------------------------------

TASK = '''use text

pipeline main(word: str) -> int:
    """Score a word for a spelling game."""
    ambiguous count_vowels(word: str) -> n: int:
        """How many of the word's letters are vowels (a, e, i, o, u), in any letter case."""
    return n
'''
HIDDEN = [{"inputs": {"word": "banana"}, "expected": 3}, {"inputs": {"word": "AEIOU"}, "expected": 5},
          {"inputs": {"word": "rhythm"}, "expected": 0}, {"inputs": {"word": "Ice"}, "expected": 2}]
DESIGN = '''```pipe
examples:
    count_vowels("banana") -> 3
    count_vowels("OUT") -> 2
expect n >= 0, "a count"
```'''
RIGHT = '''```pipe
use text

pipeline main(word: str) -> int:
    n = 0
    for c in text.lower(word):
        if c in "aeiou":
            n += 1
    return n
```
example-2: resolved: lower-cased first'''
# A plausible first module: it misses capitals, which the reviewer (reading only) does not notice.
WRONG = RIGHT.replace("text.lower(word)", "word")
ACCEPT = json.dumps({"concerns": [], "summary": "fits the spec"})


class Endpoint:
    """A chat-completions server answering by the last user message, like a person behind the model bridge."""

    def __init__(self) -> None:
        self.models: list[str] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                endpoint.models.append(body["model"])
                data = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": body["model"],
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                       "role": "assistant", "content": endpoint.answer(body)}}],
                                   "usage": {"prompt_tokens": 100, "completion_tokens": 10,
                                             "total_tokens": 110}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict) -> str:
        if body["model"] == "bridge-reviewer":
            return ACCEPT
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "First, the design" in last:
            return DESIGN
        if "Running the module on its examples" in last:
            return RIGHT
        return WRONG

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def endpoint():
    server = Endpoint()
    yield server
    server.close()


def test_both_flows_end_to_end_simulation_catches_what_review_missed(tmp_path, endpoint, capsys, monkeypatch) -> None:
    tasks = tmp_path / "tasks"
    (tasks / "count_vowels").mkdir(parents=True)
    (tasks / "count_vowels" / "task.pipe").write_text(TASK, encoding="utf-8")
    (tasks / "count_vowels" / "run.json").write_text('{"word": "hello"}', encoding="utf-8")
    (tasks / "count_vowels" / "hidden.json").write_text(json.dumps(HIDDEN), encoding="utf-8")
    monkeypatch.delenv("PIPE_MODEL", raising=False)
    monkeypatch.delenv("PIPE_REVIEW_MODEL", raising=False)
    out = tmp_path / "out"
    code = evaluation.main([str(out), "--tasks", str(tasks), "--model", "openai/bridge-author", "--review-model",
                            "openai/bridge-reviewer", "--api-base", endpoint.base, "--model-timeout", "60"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    # The folders it names are the ones the bridge would write to: the model names the server received.
    assert "author requests in DIR/bridge-author/, reviewer requests in DIR/bridge-reviewer/" in printed
    assert set(endpoint.models) == {"bridge-author", "bridge-reviewer"}

    flows = json.loads((out / "results.json").read_text(encoding="utf-8"))["flows"]
    before, after = flows["before"]["count_vowels"], flows["after"]["count_vowels"]
    assert before["run"]["exit"] == after["run"]["exit"] == 0
    settings = (out / "after" / "count_vowels" / "orgtree.toml").read_text(encoding="utf-8")
    assert "data_driven = true" in settings and "child_max_seconds = 14400" in settings
    # Today's flow: the wrong first module compiles and passes review, so it counts as a valid first answer,
    # and the hidden cases with capitals find what nobody caught.
    assert before["blocks"]["count_vowels"]["first_answer_valid"] is True
    assert before["blocks"]["count_vowels"]["simulation_before_review"] == 0
    assert before["hidden_passed"] == 2 and len(before["hidden_failures"]) == 2
    assert (before["calls"]["author_calls"], before["calls"]["reviewer_calls"]) == (1, 1)
    # The data-driven flow: design, its review, the wrong module, simulation fails "OUT", the fix, code review.
    block = after["blocks"]["count_vowels"]
    assert block["simulation_before_review"] == 1 and block["first_answer_valid"] is False
    assert block["module_answers"] == 2 and block["design_answers"] == 1
    assert (after["calls"]["author_calls"], after["calls"]["reviewer_calls"]) == (3, 2)
    assert after["calls"]["prompt_tokens"] == 500 and after["calls"]["completion_tokens"] == 50
    assert after["hidden_passed"] == 4 and after["levels"] == 1 and after["pipelines"] == 1
    # One table per flow, in the order of the JSON's figures.
    before_table = printed[printed.index("flow: before"):printed.index("flow: after")]
    after_table = printed[printed.index("flow: after"):]
    assert "count_vowels" in before_table and " 2/4 " in before_table and "1+1" in before_table
    assert " 1/1 " in after_table and "3+2" in after_table and " 4/4 " in after_table

    # Measuring again calls no model and gives the same figures.
    calls = len(endpoint.models)
    assert evaluation.main([str(out), "--tasks", str(tasks), "--score-only", "--model", "openai/bridge-author",
                            "--review-model", "openai/bridge-reviewer"]) == 0
    assert len(endpoint.models) == calls
    again = json.loads((out / "results.json").read_text(encoding="utf-8"))["flows"]
    assert again["after"]["count_vowels"]["blocks"]["count_vowels"] == block and again["before"]["count_vowels"]["hidden_passed"] == 2


def test_a_nested_module_counts_as_a_second_level(tmp_path) -> None:
    workspace = tmp_path / "ws"
    folder = workspace / ".orgtree" / "modules"
    (folder / "task").mkdir(parents=True)
    (folder / "outer").mkdir()
    header = "# orgtree: block = {block}\n# orgtree: parent = {parent}\n# orgtree: spec-hash = x\n\n"
    outer = folder / "task" / "outer.pipe"
    outer.write_text(header.format(block="outer", parent="task.pipe:4") + "pipeline main() -> int:\n    return 1\n\n"
                     "pipeline helper() -> int:\n    return 2\n", encoding="utf-8")
    (folder / "outer" / "inner.pipe").write_text(header.format(block="inner", parent=f"{outer}:3") +
                                                 "pipeline main() -> int:\n    return 3\n", encoding="utf-8")
    modules = {m["block"]: m for m in evaluation.saved_modules(workspace)}
    assert (modules["outer"]["depth"], modules["inner"]["depth"]) == (1, 2)
    assert (modules["outer"]["pipelines"], modules["inner"]["pipelines"]) == (2, 1)


# ---- the repair flow: hidden cases as real data, with the models ---------------------------------

PRICE_TASK = '''use text

pipeline main(item: str) -> int:
    """Read a price."""
    ambiguous cents(item: str) -> amount: int:
        """The amount in cents of a price written with a dot, like "3.50"; a price may have no cents part."""
    return amount
'''
PRICE_HIDDEN = [{"inputs": {"item": "3.25"}, "expected": 325}, {"inputs": {"item": "12"}, "expected": 1200},
                {"inputs": {"item": "4.00"}, "expected": 400}, {"inputs": {"item": "7"}, "expected": 700}]
PRICE_DESIGN = '```pipe\nexamples:\n    cents("3.50") -> 350\nexpect amount >= 0, "a price"\n```'
class PriceEndpoint(Endpoint):
    """The author writes a module that meets everything it was shown, and fixes it when a run shows it "12"."""

    def answer(self, body: dict) -> str:
        if body["model"] == "bridge-reviewer":
            return ACCEPT
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "First, the design" in last:
            return PRICE_DESIGN
        return PRICE_FIXED if "This is a repair" in last else PRICE_FIRST


def test_the_repair_flow_runs_the_hidden_cases_as_real_data_and_counts_the_repairs(tmp_path, capsys,
                                                                                   monkeypatch) -> None:
    tasks = tmp_path / "tasks"
    (tasks / "cents").mkdir(parents=True)
    (tasks / "cents" / "task.pipe").write_text(PRICE_TASK, encoding="utf-8")
    (tasks / "cents" / "run.json").write_text('{"item": "3.50"}', encoding="utf-8")
    (tasks / "cents" / "hidden.json").write_text(json.dumps(PRICE_HIDDEN), encoding="utf-8")
    monkeypatch.delenv("PIPE_MODEL", raising=False)
    monkeypatch.delenv("PIPE_REVIEW_MODEL", raising=False)
    endpoint = PriceEndpoint()
    try:
        code = evaluation.main([str(tmp_path / "out"), "--tasks", str(tasks), "--flows", "repair", "--model",
                                "openai/bridge-author", "--review-model", "openai/bridge-reviewer", "--api-base",
                                endpoint.base, "--model-timeout", "60"])
    finally:
        endpoint.close()
    printed = capsys.readouterr().out
    assert code == 0, printed
    result = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["flows"]["repair"]["cents"]
    # "12" fails the first module at run time; it is repaired there, and "7" then passes with no second repair.
    assert result["real_data_exits"] == [0, 0, 0, 0] and result["repairs"] == 1
    assert (result["first_module_passed"], result["hidden_passed"]) == (2, 4)
    settings = (tmp_path / "out" / "repair" / "cents" / "orgtree.toml").read_text(encoding="utf-8")
    assert 'review_outputs = "first"' in settings and "review_sample = 0" in settings
    repair_table = printed[printed.index("flow: repair"):]
    # Author: design, module, repair. Reviewer: design, code, the first run's outputs, the repair's code and its
    # first run's outputs.
    assert re.search(r"\ncents +0 +yes +2/4 +4/4 +1 +3\+5 ", repair_table), repair_table


class DateEndpoint(Endpoint):
    """The iso_date task's author: its first module is the one that follows only the examples (ISO dates), so
    the third hidden case ("2024/1/3") fails it at run time; its repair is the hand-written solution."""

    DESIGN = '```pipe\nexamples:\n    iso_date("2020-02-29") -> "2020-02-29"\nexpect len(iso) == 10, "ten characters"\n```'

    def answer(self, body: dict) -> str:
        if body["model"] == "bridge-reviewer":
            return ACCEPT
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "First, the design" in last:
            return self.DESIGN
        folder = evaluation.TASKS / "iso_date"
        module = (folder / ("solution.pipe" if "This is a repair" in last else "naive.pipe")).read_text(encoding="utf-8")
        return f"```pipe\n{module}```"


def test_a_real_data_task_is_repaired_where_its_first_module_fails_and_spec_windows_do_not_hide_the_reviewer(
        tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("PIPE_MODEL", raising=False)
    monkeypatch.delenv("PIPE_REVIEW_MODEL", raising=False)
    endpoint = DateEndpoint()
    try:
        # Specs that spell a context window: the trace names the models without it, and so does the bridge.
        code = evaluation.main([str(tmp_path / "out"), "--only", "iso_date", "--flows", "repair", "--model",
                                "openai/bridge-author:128000", "--review-model", "openai/bridge-reviewer:128000",
                                "--api-base", endpoint.base, "--model-timeout", "60"])
    finally:
        endpoint.close()
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "author requests in DIR/bridge-author/, reviewer requests in DIR/bridge-reviewer/" in printed
    assert set(endpoint.models) == {"bridge-author", "bridge-reviewer"}
    result = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["flows"]["repair"]["iso_date"]
    cases = json.loads((evaluation.TASKS / "iso_date" / "hidden.json").read_text(encoding="utf-8"))
    # Cases 1-2 (ISO) pass the first module; case 3 fails it, is repaired there, and every later case passes with
    # the repair: the two the spec says to refuse end their runs with the module's `fail` (exit 70), unrepaired.
    assert result["real_data_exits"] == [0] * 8 + [70, 70] and result["repairs"] == 1
    assert (result["first_module_passed"], result["hidden_passed"], result["hidden_cases"]) == (2, 10, len(cases))
    # Author: design, module, repair. Reviewer: design, code, the first run's outputs, the repair's code and its
    # first run's outputs, and the two refusals (accepted: the spec says to refuse those dates); none counted as
    # the author's although the specs are not the trace's model names.
    assert (result["calls"]["author_calls"], result["calls"]["reviewer_calls"]) == (3, 7)
    repair_table = printed[printed.index("flow: repair"):]
    assert re.search(r"\niso_date +0 +yes +2/10 +10/10 +1 +3\+7 ", repair_table), repair_table


class NaiveFirstEndpoint(Endpoint):
    """A real-data task's author: naive.pipe first, its solution.pipe as the repair; the design is the first hidden
    case as an example (one the naive module passes)."""

    def __init__(self, task: str) -> None:
        from orgtree_lang.decompose.simulate import pipe_literal

        super().__init__()
        self.folder = evaluation.TASKS / task
        first = json.loads((self.folder / "hidden.json").read_text(encoding="utf-8"))[0]
        block = re.search(r"ambiguous (\w+)\(", (self.folder / "task.pipe").read_text(encoding="utf-8")).group(1)
        call = f"{block}({', '.join(pipe_literal(v) for v in first['inputs'].values())})"
        self.design = f"```pipe\nexamples:\n    {call} -> {pipe_literal(first['expected'])}\n```"

    def answer(self, body: dict) -> str:
        if body["model"] == "bridge-reviewer":
            return ACCEPT
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "First, the design" in last:
            return self.design
        module = "solution.pipe" if "This is a repair" in last else "naive.pipe"
        return f"```pipe\n{(self.folder / module).read_text(encoding='utf-8')}```"


# iso_date is above; csv_row's first module fails an `expect` rather than raising (each such run takes a while).
@pytest.mark.parametrize("task", ["csv_row"])
def test_a_real_data_task_whose_first_module_fails_an_expectation_runs_through_the_repair_flow(
        task, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("PIPE_MODEL", raising=False)
    monkeypatch.delenv("PIPE_REVIEW_MODEL", raising=False)
    endpoint = NaiveFirstEndpoint(task)
    try:
        code = evaluation.main([str(tmp_path / "out"), "--only", task, "--flows", "repair", "--model",
                                "openai/bridge-author", "--review-model", "openai/bridge-reviewer", "--api-base",
                                endpoint.base, "--model-timeout", "60"])
    finally:
        endpoint.close()
    assert code == 0, capsys.readouterr().out
    result = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["flows"]["repair"][task]
    # The naive module's outputs fail the block's `expect` on the first quoted comma (case 3): it is repaired once
    # there, and the repair passes every case (the unterminated quote ends its run with the module's `fail`).
    assert result["repairs"] == 1 and result["hidden_passed"] == result["hidden_cases"]
    assert result["first_module_passed"] == 4 and result["real_data_exits"][-1] == 70
    with sqlite3.connect(tmp_path / "out" / "repair" / task / ".orgtree" / "state.db") as db:
        (reason,) = db.execute("SELECT reason FROM module_versions WHERE version = 2").fetchone()
    assert reason.startswith("expectation: ambiguous block `csv_row`: its outputs do not meet an expectation")
