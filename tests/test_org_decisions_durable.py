"""A block node's decisions are journaled steps (issue 24 items 2, 6): `pipe run` killed with -9 while the agent of a
block's node is deciding, then `pipe resume`, asks no model twice and delivers the answer once; `pipe replay` asks no
model at all; `pipe tree` shows the decision as a node of its own with what it spent, and `pipe messages` the edges."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from chat_server import ChatServer, is_review
from cli_testing import pipe
from decompose_testing import NO_CONCERNS
from durable_testing import cli_command, cli_env

from orgtree_lang.durable.runs import list_runs

PROGRAM = '''use fs

pipeline main(text: str) -> str:
    ambiguous shout(text: str) -> loud: str:
        """Say the text loudly, in the case the reader wants."""
    return loud
'''
MODULE = '''```pipe
use fs

pipeline main(text: str) -> str:
    fs.append("effects.log", "asked\\n")
    send parent, "upper or title case?", topic="question"
    m = receive(timeout=1)
    fs.append("effects.log", "answered " + m.body + "\\n")
    return m.body + ": " + text
```'''
ANSWER = json.dumps({"kind": "answer", "note": "the reader wants capitals", "answer": "UPPER"})


class ModelServer:
    """An OpenAI-compatible endpoint on 127.0.0.1: writes MODULE, accepts every review, and answers the block node's
    decision with ANSWER, holding the first decision request until `release` is set. Counts requests per role."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.chat = ChatServer(self.answer)
        self.base = self.chat.base

    def answer(self, body: dict) -> str:
        asked = body["messages"][-1]["content"]
        if is_review(body):
            role, answer = "reviewer", NO_CONCERNS
        elif "A message reached the node" in asked:  # a block's node, or a node that reads none
            role, answer = "decider", ANSWER
        else:
            role, answer = "author", MODULE
        with self.lock:
            self.counts[role] += 1
            first = role == "decider" and self.counts[role] == 1
        if first:
            self.release.wait(60)
        return answer

    def close(self) -> None:
        self.release.set()
        self.chat.close()


def test_kill_9_while_a_block_node_decides_then_resume_repeats_no_model_call_and_no_effect(tmp_path: Path) -> None:
    (tmp_path / "prog.pipe").write_text(PROGRAM, encoding="utf-8")
    server = ModelServer()
    models = ["--model", "openai/bench-model", "--api-base", server.base]
    env = dict(cli_env(), OPENAI_API_KEY="unused-by-the-local-server")
    log = tmp_path / "effects.log"
    try:
        process = subprocess.Popen(cli_command("run", "prog.pipe", "-i", "text=hi", *models), cwd=tmp_path,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300  # litellm's first call takes long on a busy machine
        while server.counts["decider"] < 1 and process.poll() is None:
            assert time.monotonic() < deadline, "the block's node was never asked to decide"
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        process.kill()
        process.communicate()
        before = dict(server.counts)
        assert before["author"] >= 1 and before["reviewer"] >= 1
        server.release.set()
        run_id = list_runs(tmp_path)[-1].run_id
        resumed = pipe("resume", run_id, *models, cwd=tmp_path, env=env)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip().splitlines()[-1] == "UPPER: hi"
        # The module was not written or reviewed again; only the decision in flight was asked again. (The outputs of
        # the module's first run are reviewed once the child ends: after the resume, for the first time.)
        assert server.counts == Counter({**before, "decider": 2, "reviewer": before["reviewer"] + 1})
        assert log.read_text().splitlines() == ["asked", "answered UPPER"]
        asked = sum(server.counts.values())
        replayed = pipe("replay", run_id, cwd=tmp_path, env=env)
        assert replayed.returncode == 0, replayed.stderr
        assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr
        assert sum(server.counts.values()) == asked
        assert log.read_text().splitlines() == ["asked", "answered UPPER"]

        tree = pipe("tree", run_id, cwd=tmp_path, env=env)
        assert tree.returncode == 0, tree.stderr
        (decided,) = [line for line in tree.stdout.splitlines() if "decision#1" in line]
        assert "  decision  ok" in decided and "15 tokens" in decided and "out: answer: UPPER" in decided
        assert any("→ main/shout@" in line and "upper or title case?" in line for line in tree.stdout.splitlines())
        shown = pipe("messages", run_id, "--json", cwd=tmp_path, env=env)
        assert shown.returncode == 0, shown.stderr
        edges = [(m["sender"], m["to"], m["topic"]) for m in json.loads(shown.stdout)]
        block = edges[0][1]
        assert edges == [(f"{block}/main", block, "question"), (block, f"{block}/main", "answer")]
    finally:
        server.close()


SUPERVISED = '''use fs

pipeline worker(n: int) -> str:
    """Counts up to n and reports."""
    fs.append("effects.log", "asked\\n")
    send parent, "should I count in twos?", topic="question"
    m = receive(timeout=1)
    fs.append("effects.log", "answered " + m.body + "\\n")
    return "worker got: " + m.body

pipeline main() -> str:
    w = spawn worker(3)
    return await w
'''


def test_kill_9_while_a_node_that_reads_no_messages_decides_then_resume_and_replay(tmp_path: Path) -> None:
    (tmp_path / "sup.pipe").write_text(SUPERVISED, encoding="utf-8")
    server = ModelServer()
    models = ["--model", "openai/bench-model", "--api-base", server.base]
    env = dict(cli_env(), OPENAI_API_KEY="unused-by-the-local-server")
    log = tmp_path / "effects.log"
    try:
        process = subprocess.Popen(cli_command("run", "sup.pipe", *models), cwd=tmp_path, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while server.counts["decider"] < 1 and process.poll() is None:
            assert time.monotonic() < deadline, "main's agent was never asked to decide"
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        process.kill()
        process.communicate()
        server.release.set()
        run_id = list_runs(tmp_path)[-1].run_id
        resumed = pipe("resume", run_id, *models, cwd=tmp_path, env=env)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip().splitlines()[-1] == "worker got: UPPER"
        assert server.counts == Counter({"decider": 2})  # the decision in flight, asked again; nothing else
        assert log.read_text().splitlines() == ["asked", "answered UPPER"]
        replayed = pipe("replay", run_id, cwd=tmp_path, env=env)
        assert replayed.returncode == 0, replayed.stderr
        assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr
        assert server.counts == Counter({"decider": 2})
        assert log.read_text().splitlines() == ["asked", "answered UPPER"]
    finally:
        server.close()
