"""Summaries by agents: with a model configured the context tree's summaries are the model's, written side by side,
cached by text and model, metered and journaled; offline, or with `[memory] summarizer = "extractive"`, they are not."""

from __future__ import annotations

import json
import re
import threading

import pytest
from cli_testing import pipe
from pipe_testing import run_source

from orgtree_lang.durable.journal import Journal
from orgtree_lang.memory import Memory, ModelSummarizer
from orgtree_lang.memory.summarize import SUMMARY_SYSTEM, ThreadedCalls
from orgtree_lang.models.base import Completion, Model, ModelError, Usage
from orgtree_lang.models.roles import RunModels
from orgtree_lang.vm.budget import Budget

pytestmark = pytest.mark.fast

LOG = "\n".join(f"line {i}: worker {i % 9} served request {i * 7}" + (f" and failed with E{i}" if i % 97 == 5 else "")
                for i in range(1500))


class FactKeeper(Model):
    """A summarizing model for tests: it answers a summary request with what the text covers and its error codes,
    and anything else with a fixed word. `gate` (a Barrier) holds each of the first calls until that many are in
    flight."""

    def __init__(self, name="facts", gate: threading.Barrier | None = None, fail_on: str | None = None) -> None:
        self.name, self.gate, self.fail_on = name, gate, fail_on
        self.asked: list[str] = []
        self.lock = threading.Lock()

    def _complete(self, messages, *, schema, conversation_id):
        text = messages[-1].content
        with self.lock:
            self.asked.append(text)
            first = len(self.asked) <= (self.gate.parties if self.gate is not None else 0)
        if first:
            self.gate.wait()
        if self.fail_on is not None and self.fail_on in text:
            raise ModelError(f"{self.name} is down", "server")
        if messages[0].content != SUMMARY_SYSTEM:
            return Completion("ok", Usage(10, 1), self.name)
        body = text.split("<text>", 1)[1]
        lines = re.findall(r"line (\d+):", body)
        errors = sorted(set(re.findall(r"E\d+", body)), key=lambda e: int(e[1:]))
        answer = f"Covers: log lines {lines[0]}-{lines[-1]}." if lines else "Covers: summaries."
        return Completion(answer + (f" Errors: {', '.join(errors)}." if errors else ""), Usage(len(body) // 4, 12),
                          self.name)


def test_the_models_summaries_keep_the_facts_and_expand_still_reaches_the_original():
    model = FactKeeper()
    with Memory(None, index=False) as memory:
        doc = memory.add(LOG, name="worker.log")
        view = memory.fit([doc], "gpt-4o", context_window=4000, summarizer=ModelSummarizer(model))
        assert view.levels >= 1 and view.summarized == len(model.asked)
        for code in ("E5", "E102", "E1169"):
            assert code in view.text
        # Down from any summary to the original bytes.
        node = view.nodes[0]
        while not isinstance(below := memory.expand(node), str):
            node = below[0]
        assert LOG.encode()[node.start:node.end].decode() == below


def test_a_round_of_summaries_is_written_side_by_side():
    model = FactKeeper(gate=threading.Barrier(3, timeout=20))
    with Memory(None, index=False) as memory:
        # Every call waits until three are in flight: a batch written one at a time would never get past the first.
        memory.fit([LOG], "gpt-4o", context_window=2000,
                   summarizer=ModelSummarizer(model, calls=ThreadedCalls(workers=3)))
    assert len(model.asked) >= 3


def test_summaries_are_cached_by_text_and_model():
    first, other = FactKeeper("facts-a"), FactKeeper("facts-b")
    with Memory(None, index=False) as memory:
        memory.fit([LOG], "gpt-4o", context_window=4000, summarizer=ModelSummarizer(first))
        asked = len(first.asked)
        again = memory.fit([LOG], "gpt-4o", context_window=4000, summarizer=ModelSummarizer(first))
        assert again.summarized == 0 and len(first.asked) == asked
        memory.fit([LOG], "gpt-4o", context_window=4000, summarizer=ModelSummarizer(other))
        assert len(other.asked) == asked  # another model writes its own


def test_a_failed_request_loses_none_of_the_summaries_that_came():
    broken = FactKeeper("facts", fail_on="line 700:")
    with Memory(None, index=False) as memory:
        with pytest.raises(ModelError, match="is down"):
            memory.fit([LOG], "gpt-4o", context_window=4000, summarizer=ModelSummarizer(broken))
        fixed = FactKeeper("facts")
        memory.fit([LOG], "gpt-4o", context_window=4000, summarizer=ModelSummarizer(fixed))
    # Only the request that failed (and the rounds above it) is asked again.
    assert 1 <= len([t for t in fixed.asked if "line " in t]) < len(broken.asked)


PROGRAM = '''use ctx

pipeline main(doc: int) -> str:
    return ctx.fit([doc], "gpt-4o:4000", 0.25)
'''


def fit_in_a_run(root, **options):
    """Run PROGRAM on the log, added beforehand (keyword-only, so the test loads no embedding model)."""
    root.mkdir(exist_ok=True)
    with Memory(root, vectors=False) as memory:
        doc = memory.add(LOG, name="worker.log").id
    return run_source(PROGRAM, root, inputs={"doc": doc}, **options)


def test_ctx_fit_in_a_run_uses_the_runs_model_and_charges_the_run(tmp_path):
    model = FactKeeper()
    ran = fit_in_a_run(tmp_path, models=RunModels(None, author=model), budget=Budget(max_tokens=10_000_000))
    assert ran.error is None and "Covers: log lines" in ran.result and "E1169" in ran.result
    assert model.asked and ran.machine.meter.tokens >= sum(len(t) // 4 for t in model.asked) // 2


def test_ctx_fit_stops_at_the_runs_token_budget(tmp_path):
    ran = fit_in_a_run(tmp_path, models=RunModels(None, author=FactKeeper()), budget=Budget(max_tokens=500))
    assert ran.error is not None and "model tokens budget exceeded" in ran.error.message


def test_ctx_fit_stays_extractive_without_a_model_or_when_told(tmp_path):
    offline = fit_in_a_run(tmp_path / "a")
    assert offline.error is None and "Covers:" not in offline.result
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "orgtree.toml").write_text('[memory]\nsummarizer = "extractive"\n')
    model = FactKeeper()
    told = fit_in_a_run(tmp_path / "b", models=RunModels(None, author=model))
    assert told.error is None and "Covers:" not in told.result and model.asked == []


def test_a_bad_summarizer_setting_says_what_is_allowed(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[memory]\nsummarizer = "abstractive"\n')
    ran = fit_in_a_run(tmp_path, models=RunModels(None, author=FactKeeper()))
    assert "[memory] summarizer must be one of model, extractive, got 'abstractive'" in ran.error.message


BLOCK = '''use text

pipeline main(log: str) -> str:
    ambiguous first_error(log: str) -> code: str:
        """The first error code (E and digits) in the log."""
    return code
'''
FINDER = '''```pipe
use text

pipeline main(log: str) -> str:
    found = text.regex_findall("E[0-9]+", log)
    return found[0]
```'''


def test_a_big_inputs_summaries_are_journaled_so_replay_asks_no_model(tmp_path):
    (tmp_path / "errors.pipe").write_text(BLOCK)
    (tmp_path / "log.txt").write_text(LOG * 3)
    (tmp_path / "author.json").write_text(json.dumps([
        {"match": {"contains": "Covers: ..."}, "reply": "Covers: a worker log. Errors: E5, E102."},
        {"reply": FINDER}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": json.dumps({"concerns": [], "summary": "ok"})}]))
    (tmp_path / "inputs.json").write_text(json.dumps({"log": LOG * 3}))
    env = {"PIPE_NO_PLUGINS": "1"}
    first = pipe("run", "errors.pipe", "--inputs", "inputs.json", "--json", "--model", "scripted:author.json",
                 "--review-model", "scripted:reviewer.json", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    journal = Journal.open(tmp_path / ".orgtree" / "runs" / run_id)
    try:
        steps = [s for s in journal.steps().values() if s.name.startswith("summaries by")]
    finally:
        journal.close()
    assert steps and all(s.kind == "model" and s.ok for s in steps)
    replayed = pipe("replay", run_id, cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr
