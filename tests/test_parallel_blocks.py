"""Ambiguous blocks in parallel branches are decomposed concurrently: their model calls overlap, yet the journal,
the output and the modules saved are those of a run that resolved them one at a time (org/block_calls.py)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from chat_server import ChatServer, is_review
from cli_testing import pipe
from decompose_testing import NO_CONCERNS
from durable_testing import cli_command, cli_env

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.decomposer import DecomposeSettings, Decomposer
from orgtree_lang.durable.journal import Journal
from orgtree_lang.durable.runs import find_run, list_runs
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.models.base import Completion, ModelError, Usage, parse_structured
from orgtree_lang.runlog.store import TreeStore
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

REGISTRY = default_registry(plugins=False)


def module_for(word: str) -> str:
    return f'```pipe\npipeline main(text: str) -> str:\n    print("{word} sees " + text)\n    return "{word}:" + text\n```'


class SlowModel:
    """A model that answers from a table of (text in the request -> answer) and logs when each call starts and
    ends, in one list shared by author and reviewer. With `together=N`, each call first waits until N calls are
    in it at once (a barrier): calls made one at a time never get there, and fail instead of answering."""

    def __init__(self, name: str, answers: dict[str, str], log: list, together: int = 0) -> None:
        self.name, self.answers, self.log = f"scripted:{name}", answers, log
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(together, timeout=60) if together else None

    def complete(self, messages, schema=None, conversation_id=None) -> Completion:
        text = messages[-1].content
        key = next((k for k in self.answers if k in text), None)
        with self.lock:
            self.log.append(("start", self.name, key))
        if self.barrier is not None:
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                raise ModelError(f"{self.name}: the calls did not overlap", "server") from None
        time.sleep(0.01)
        with self.lock:
            self.log.append(("end", self.name, key))
        answer = self.answers[key] if key is not None else NO_CONCERNS
        completion = Completion(answer, Usage(10, 5, 0.0, 0.01), self.name, conversation_id)
        if schema is not None:
            completion.parsed = parse_structured(answer, schema, self.name)
        return completion


BLOCKS = """\
pipeline main(text: str) -> str:
    parallel:
        ambiguous first(text: str) -> a: str:
            \"\"\"Label the text as seen by the first reader.\"\"\"
        ambiguous second(text: str) -> b: str:
            \"\"\"Label the text as seen by the second reader.\"\"\"
        ambiguous third(text: str) -> c: str:
            \"\"\"Label the text as seen by the third reader.\"\"\"
    return a + " " + b + " " + c
"""
WORDS = {"first": "one", "second": "two", "third": "three"}
# These tests count the calls of writing the modules; the review of their first run's outputs is tested on its own
# (tests/test_decompose_repair.py).
WRITING_ONLY = DecomposeSettings(review_outputs="off")


def run(folder: Path, source: str, log: list, executor: str | None = "threads:4", together: int = 0):
    """Run `source` durably with the slow models; (machine, printed lines)."""
    path = folder / "par.pipe"
    path.write_text(source, encoding="utf-8")
    author = SlowModel("author", {f"`{block}`": module_for(word) for block, word in WORDS.items()}, log, together)
    reviewer = SlowModel("reviewer", {}, log, together)
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=REGISTRY, workspace=folder,
                            parent_file="par.pipe", parent_source=source, settings=WRITING_ONLY)
    printed: list[str] = []
    options = RunOptions(printer=printed.append, durable=True, durability="process", executor=executor,
                         decomposer=decomposer, inputs={"text": "hi"})
    machine = run_program(compile_source(source, "par.pipe", REGISTRY).program, folder, REGISTRY, options,
                          source=source, program_path=path)
    return machine, printed


def test_the_model_calls_of_blocks_in_parallel_branches_overlap(tmp_path: Path) -> None:
    log: list = []
    machine, printed = run(tmp_path, BLOCKS, log, together=3)  # no call answers until all three are in
    assert machine.state.result == "one:hi two:hi three:hi"
    authors = [entry for entry in log if entry[1] == "scripted:author"]
    assert [event for event, _, _ in authors[:3]] == ["start"] * 3
    assert {key for _, _, key in authors[:3]} == {"`first`", "`second`", "`third`"}
    reviews = [event for event, name, _ in log if name == "scripted:reviewer"]
    assert reviews[:3] == ["start"] * 3 and len(reviews) == 6
    # The children's printed lines come in the order of the branches, as in a run that resolves them in turn.
    assert printed == ["one sees hi", "two sees hi", "three sees hi"]


def test_a_machine_without_an_executor_resolves_the_blocks_in_turn_with_the_same_result(tmp_path: Path) -> None:
    log: list = []
    author = SlowModel("author", {f"`{block}`": module_for(word) for block, word in WORDS.items()}, log)
    reviewer = SlowModel("reviewer", {}, log)
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=REGISTRY, workspace=tmp_path,
                            parent_file="par.pipe", parent_source=BLOCKS, settings=WRITING_ONLY)
    printed: list[str] = []
    machine = plain_machine(compile_source(BLOCKS, "par.pipe", REGISTRY).program, registry=REGISTRY,
                            context=SkillContext(Workspace(tmp_path)), resolver=decomposer, printer=printed.append)
    machine.start(None, {"text": "hi"})
    assert machine.run().result == "one:hi two:hi three:hi"
    assert [event for event, _, _ in log] == ["start", "end"] * 6  # one call at a time
    assert printed == ["one sees hi", "two sees hi", "three sees hi"]


def test_the_journal_numbers_each_blocks_steps_in_a_range_of_its_own_and_replay_calls_no_model(
        tmp_path: Path) -> None:
    machine, printed = run(tmp_path, BLOCKS, [])
    run_id = machine.state.run_id
    journal = Journal.open(find_run(tmp_path, run_id))
    try:
        steps = journal.steps()
    finally:
        journal.close()
    blocks = sorted((record.seq, record.name) for record in steps.values() if record.kind == "ambiguous")
    assert [name for _, name in blocks] == ["first", "second", "third"]
    for (seq, name), (after, _) in zip(blocks, blocks[1:] + [(None, None)]):
        inner = sorted(s for s, record in steps.items() if seq < s and (after is None or s < after)
                       and record.kind != "ambiguous")
        # Its own steps (scratchpad, model answers, its child's effects) follow it with no gap, whatever the others did.
        assert inner == list(range(seq + 1, seq + 1 + len(inner)))
        assert [steps[s].kind for s in inner].count("model") == 2  # the author's module and the review
        assert all(f"/{name}@" in steps[s].node for s in inner)
        recorded = json.loads(steps[seq].result)
        assert recorded["effects:"] == len(inner)
    report = durable_runs.replay(tmp_path, run_id, REGISTRY)
    assert report.identical and report.outside_calls == 0, report.differences
    assert report.output == machine.state.output


def test_one_spec_in_every_iteration_is_written_and_saved_once(tmp_path: Path) -> None:
    source = """\
pipeline main(text: str) -> str:
    labels = for word in ["x", "y", "z"] parallel:
        ambiguous first(text: str) -> a: str:
            \"\"\"Label the text as seen by the first reader.\"\"\"
        a
    return text + " " + labels[0] + labels[1] + labels[2]
"""
    log: list = []
    machine, printed = run(tmp_path, source, log)
    assert machine.state.result == "hi one:hione:hione:hi"
    assert [entry for entry in log if entry[1] == "scripted:author"] == [("start", "scripted:author", "`first`"),
                                                                        ("end", "scripted:author", "`first`")]
    assert len(list((tmp_path / ".orgtree" / "modules").rglob("*.pipe"))) == 1
    with TreeStore.for_workspace(tmp_path) as store:
        details = sorted(node.detail.split(" ")[0] for node in store.run_nodes(machine.state.run_id)
                         if node.kind == "ambiguous")
    assert details == ["reused", "reused", "written"]


# ---- kill -9 in the middle of concurrent decompositions ---------------------------------------------------------


class BlockModelServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that writes the modules of BLOCKS and accepts every review.

    It counts requests per (role, block) and holds the author request of block `held` until `release` is set."""

    def __init__(self, held: str | None = None) -> None:
        self.counts: Counter = Counter()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.held = held
        self.chat = ChatServer(self.answer)
        self.base = self.chat.base

    def answer(self, body: dict) -> str:
        asked = body["messages"][-1]["content"]  # the spec is quoted there: "Write a module for the step `x`"
        block = next((b for b in WORDS if f"step `{b}`" in asked), "?")
        role = "reviewer" if is_review(body) else "author"
        with self.lock:
            self.counts[role, block] += 1
        if role == "author" and block == self.held:
            self.release.wait(60)
        return NO_CONCERNS if role == "reviewer" else module_for(WORDS.get(block, "?"))

    def close(self) -> None:
        self.release.set()
        self.chat.close()


def _journaled_blocks(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in (folder / ".orgtree" / "runs").glob("*/journal.db"):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            found |= {row[0] for row in db.execute("SELECT name FROM steps WHERE kind = 'ambiguous' AND ok = 1")}
        except sqlite3.OperationalError:
            pass
        finally:
            db.close()
    return found


def test_a_resume_after_kill_9_redoes_no_finished_decomposition_and_replay_calls_no_model(tmp_path: Path) -> None:
    (tmp_path / "par.pipe").write_text(BLOCKS, encoding="utf-8")
    server = BlockModelServer(held="third")
    models = ["--model", "openai/bench-model", "--api-base", server.base]
    env = dict(cli_env(), OPENAI_API_KEY="unused-by-the-local-server")
    try:
        process = subprocess.Popen(cli_command("run", "par.pipe", "-i", "text=hi", *models), cwd=tmp_path,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300  # litellm's first call takes long on a busy machine
        while _journaled_blocks(tmp_path) != {"first", "second"} and process.poll() is None:
            assert time.monotonic() < deadline, "the first two blocks were never journaled"
            time.sleep(0.05)
        assert server.counts["author", "third"] == 1  # in flight, held by the server
        process.kill()
        process.communicate()
        server.release.set()
        run_id = list_runs(tmp_path)[-1].run_id
        resumed = pipe("resume", run_id, *models, cwd=tmp_path, env=env)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip().splitlines()[-1] == "one:hi two:hi three:hi"
        # The finished decompositions were not asked again; the one in flight was. (Each block's reviewer read the
        # module, then the outputs of its first run.)
        assert server.counts == Counter({("author", "first"): 1, ("reviewer", "first"): 2,
                                         ("author", "second"): 1, ("reviewer", "second"): 2,
                                         ("author", "third"): 2, ("reviewer", "third"): 2})
        asked = sum(server.counts.values())
        replayed = pipe("replay", run_id, cwd=tmp_path, env=env)
        assert replayed.returncode == 0, replayed.stderr
        assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr
        assert sum(server.counts.values()) == asked
        assert len(list((tmp_path / ".orgtree" / "modules").rglob("*.pipe"))) == 3
    finally:
        server.close()
