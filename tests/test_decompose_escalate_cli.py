"""Escalation to the human node from `pipe run`: the run waits for a person's ruling, and resumes with it."""

from __future__ import annotations

import json
from pathlib import Path

from cli_testing import pipe as run_pipe
from decompose_testing import GOOD, NO_CONCERNS, ONE_CONCERN

PROGRAM = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


def test_a_disagreement_waits_for_a_person_and_the_resumed_run_takes_the_ruling(tmp_path):
    (tmp_path / "triage.pipe").write_text(PROGRAM)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nmax_review_rounds = 1\n")
    (tmp_path / "author.json").write_text(json.dumps([{"reply": GOOD}]))
    # The first run of the new module has its outputs reviewed too (docs/decomposer.md, "Output review").
    (tmp_path / "reviewer.json").write_text(json.dumps([{"match": {"contains": "Output review of"},
                                                         "reply": NO_CONCERNS}, {"reply": ONE_CONCERN}]))
    models = ["--model", "scripted:author.json", "--review-model", "scripted:reviewer.json"]
    waiting = pipe("run", "triage.pipe", "-i", "report=It crashed", *models, cwd=tmp_path)
    assert waiting.returncode == 75, waiting.stderr
    inbox = pipe("inbox", cwd=tmp_path)
    assert "`Crash` in capitals is missed" in inbox.stdout
    (run,) = [r["id"] for r in json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)]
    assert pipe("reply", run, "c1: dismiss: our reports are lower-case", cwd=tmp_path).returncode == 0
    done = pipe("resume", run, *models, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("bug")
    (module,) = (tmp_path / ".orgtree" / "modules" / "triage").glob("classify.pipe")
    assert "# orgtree: escalated = the human node dismissed 1, upheld 0" in module.read_text()


def test_ask_human_false_fails_the_block_instead(tmp_path):
    (tmp_path / "triage.pipe").write_text(PROGRAM)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nmax_review_rounds = 1\nask_human = false\n")
    (tmp_path / "author.json").write_text(json.dumps([{"reply": GOOD}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": ONE_CONCERN}]))
    failed = pipe("run", "triage.pipe", "-i", "report=x", "--model", "scripted:author.json", "--review-model",
                  "scripted:reviewer.json", cwd=tmp_path)
    assert failed.returncode == 70 and "not accepted after 1 round(s)" in failed.stderr
