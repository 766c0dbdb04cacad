"""A repair on real data in a durable run: killed (SIGKILL) while the repair is under way and resumed, no model
call is asked twice and no effect happens twice; a replay makes no outside call."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cli_testing import pipe as run_pipe
from decompose_testing import NO_CONCERNS
from durable_testing import KILL_AT_MODEL_ENV, MODEL_LOG_ENV, TIMEOUT, cli_command, cli_env, only_run_id
from orgtree_lang.decompose.versions import ModuleVersions
from test_decompose_repair import FIRST, FIXED, REPAIR

PROGRAM = '''use text, fs

pipeline main(items: list[str]) -> list[int]:
    amounts = []
    for item in items:
        ambiguous cents(item: str) -> amount: int:
            """The amount in cents of a price written with a dot, like "3.50"; a price may have no cents part."""
        fs.append("amounts.txt", str(amount) + "\\n")
        amounts = amounts + [amount]
    return amounts
'''
ITEMS = json.dumps(["3.50", "1.25", "12", "4.00"])
# Where the process dies, right after a model answered and before the journal has the answer: the code review of
# the repaired module (the block's second code review; nothing saved yet), and the review of the outputs of the
# repaired module's first run (saved as version 2 by then: the resumed block must start again from version 1).
KILL_POINTS = {"in its review": "Review round 1 of prog.pipe:cents:", "after its save": "Output review of"}


def project(tmp_path: Path) -> list[str]:
    (tmp_path / "prog.pipe").write_text(PROGRAM)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nreview_sample = 0\n")
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": REPAIR}, "reply": FIXED},
                                                      {"reply": FIRST}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    return ["--model", "scripted:author.json", "--review-model", "scripted:reviewer.json"]


def cli(tmp_path: Path, log: Path, *args: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = {**cli_env(), MODEL_LOG_ENV: str(log)}
    if kill_at is not None:
        env[KILL_AT_MODEL_ENV] = kill_at
    return subprocess.run(cli_command(*args), cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT * 3)


def model_calls(log: Path) -> list[str]:
    """The `<role> <hash of the messages>` of each model call really made."""
    return [" ".join(line.split()[:2]) for line in log.read_text().splitlines()] if log.is_file() else []


@pytest.mark.parametrize("where", sorted(KILL_POINTS))
def test_a_repair_killed_midway_resumes_without_asking_a_model_twice_or_doing_an_effect_twice(tmp_path, where):
    models = project(tmp_path)
    log = tmp_path / "models.log"
    killed = cli(tmp_path, log, "run", "prog.pipe", "-i", f"items={ITEMS}", *models, kill_at=f"{KILL_POINTS[where]}:2")
    assert killed.returncode == -9, killed.stderr
    before = model_calls(log)
    assert any(line.startswith("author") for line in before)
    # Stopped inside the repair: the first two amounts were appended, the repaired module's review was in flight.
    assert (tmp_path / "amounts.txt").read_text() == "350\n125\n"
    run_id = only_run_id(tmp_path)
    resumed = cli(tmp_path, log, "resume", run_id, *models)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1]) == [350, 125, 1200, 400]
    after = model_calls(log)[len(before):]
    # Only the call in flight at the kill is asked again; every answer the journal had is taken from it.
    assert set(after) & set(before) == {before[-1]}
    assert len(set(after)) == len(after)
    assert (tmp_path / "amounts.txt").read_text() == "350\n125\n1200\n400\n"
    with ModuleVersions(tmp_path) as versions:
        assert [v.version for v in versions.history(tmp_path / ".orgtree" / "modules" / "prog" / "cents.pipe")] == \
            [1, 2]


def test_a_repaired_run_replays_with_no_outside_call(tmp_path):
    models = project(tmp_path)
    env = {"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None}
    first = run_pipe("run", "prog.pipe", "-i", f"items={ITEMS}", "--json", *models, cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["output"] == [350, 125, 1200, 400]
    os.remove(tmp_path / "author.json")  # a replay needs no model: none is there to ask
    replayed = run_pipe("replay", json.loads(first.stdout)["run_id"], cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr


def test_when_repairs_run_out_the_run_waits_for_a_person_and_resumes_with_their_guidance(tmp_path):
    (tmp_path / "prog.pipe").write_text(PROGRAM)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nreview_sample = 0\nmax_run_repairs = 0\n")
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "no dot means whole"}, "reply": FIXED},
                                                      {"reply": FIRST}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    models = ["--model", "scripted:author.json", "--review-model", "scripted:reviewer.json"]
    env = {"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None}
    waiting = run_pipe("run", "prog.pipe", "-i", f"items={ITEMS}", *models, cwd=tmp_path, env=env)
    assert waiting.returncode == 75, waiting.stderr
    inbox = run_pipe("inbox", cwd=tmp_path, env=env)
    assert "still fails on real data after 0 repair(s)" in inbox.stdout and "retry: GUIDANCE" in inbox.stdout
    run_id = only_run_id(tmp_path)
    assert run_pipe("reply", run_id, "retry: no dot means whole dollars", cwd=tmp_path, env=env).returncode == 0
    done = run_pipe("resume", run_id, *models, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [350, 125, 1200, 400]
    assert (tmp_path / "amounts.txt").read_text() == "350\n125\n1200\n400\n"
