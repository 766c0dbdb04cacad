"""pad.* and insight.* from .pipe programs, and `pipe pad show` / `pipe insights list`, with scripted reviewers."""

from __future__ import annotations

import json

import pytest
import yaml
from cli_testing import pipe as run_pipe

from orgtree_lang.cli.main import main
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.scratchpad import Scratchpad

pytestmark = pytest.mark.fast

PROGRAM = """\
use pad, insight

pipeline main() -> str:
    pad.note("planner", "split the parser work")
    pad.note("coder", "write the lexer")
    changed = pad.note("planner", "wait for the lexer", before="split the parser work", why="coder took the lexer")
    print(changed["unseen"])
    added = insight.propose("The lexer must keep comments for fmt.", "pipe fmt drops comments today", tags=["fmt"])
    print(added["status"])
    return changed["text"]
"""

ACCEPT = json.dumps({"concerns": [], "summary": "holds"})
REJECT = json.dumps({"concerns": [{"id": "c1", "severity": "blocking", "spec_basis": "1. Accurate",
                                   "evidence": "fmt keeps comments already", "suggested_fix": "drop it"}]})


def write_reviewer(folder, reply, name="reviewer.yaml"):
    path = folder / name
    path.write_text(yaml.safe_dump({"rules": [{"role": "reviewer", "replies": [reply]}]}))
    return path


def pipe(*args):
    return run_pipe(*args)


def test_a_program_writes_plans_and_proposes_an_insight(root):
    (root / "prog.pipe").write_text(PROGRAM)
    reviewer = write_reviewer(root, ACCEPT)
    done = pipe("run", root / "prog.pipe", "--review-model", f"scripted:{reviewer}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        '["[#2 coder] plan: write the lexer"]', "accepted",
        "plan changed. before: split the parser work / why: coder took the lexer / now: wait for the lexer"]
    with InsightPool.for_workspace(root) as pool:
        [insight] = pool.insights()
        [proposal] = pool.proposals()
    assert insight.tags == ["fmt"] and insight.author.startswith("run ")
    assert proposal.reviewer_model == f"scripted:{reviewer}"
    assert proposal.author_conversation.startswith("run:")
    assert proposal.author_conversation not in proposal.reviewer_conversations


def test_pipe_pad_show_lists_the_notes_in_lock_order(root, capsys):
    with Scratchpad.for_workspace(root) as pad:
        pad.note("planner", "split the work")
        pad.note("coder", "take part one", before="wait", why="planner split the work")
    assert main(["pad", "show", "--workspace", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ", 1)[1] for line in lines] == [
        "turn 1  [#1 planner] plan: split the work",
        "turn 2  [#2 coder] plan changed. before: wait / why: planner split the work / now: take part one"]
    assert main(["pad", "show", "--workspace", str(root), "--agent", "coder", "--json"]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["seq"], row["kind"], row["before"]) == (2, "plan_changed", "wait")


def test_pipe_pad_show_on_a_fresh_workspace_says_nothing_is_recorded_and_creates_nothing(root, capsys):
    assert main(["pad", "show", "--workspace", str(root)]) == 0
    assert "nothing recorded yet" in capsys.readouterr().err
    assert not (root / ".orgtree").exists()


def test_pipe_insights_list_shows_active_insights_and_every_proposal(root, tmp_path, capsys):
    from orgtree_lang.models.scripted import ScriptedModel

    accept = ScriptedModel.from_file(write_reviewer(tmp_path, ACCEPT, "a.yaml"), role="reviewer")
    reject = ScriptedModel.from_file(write_reviewer(tmp_path, REJECT, "r.yaml"), role="reviewer")
    with InsightPool.for_workspace(root) as pool:
        pool.add("Comments need a trivia channel.", "fmt test 12 fails", author="coder", tags=["fmt"],
                 reviewer=accept)
        pool.add("fmt drops comments.", "hearsay", author="tester", reviewer=reject)
    assert main(["insights", "list", "--workspace", str(root)]) == 0
    out = capsys.readouterr().out
    assert "insight #1 [fmt]: Comments need a trivia channel." in out and "#2" not in out
    assert main(["insights", "list", "--proposals", "--workspace", str(root)]) == 0
    out = capsys.readouterr().out
    assert "proposal #2 add insight #2 by tester: rejected" in out and "fmt keeps comments already" in out
    assert main(["insights", "list", "--status", "rejected", "--json", "--workspace", str(root)]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["id"], row["status"]) == (2, "rejected")


def test_a_program_without_a_reviewer_is_told_how_to_configure_one(root, monkeypatch):
    monkeypatch.delenv("PIPE_MODEL", raising=False)
    monkeypatch.delenv("PIPE_REVIEW_MODEL", raising=False)
    (root / "prog.pipe").write_text(PROGRAM)
    done = run_pipe("run", "prog.pipe", cwd=root)
    assert done.returncode == 70
    assert "insight.propose: an insight needs an independent reviewer, but no reviewer model is configured" \
        in done.stderr and "--review-model" in done.stderr
    with InsightPool.for_workspace(root) as pool:
        assert pool.proposals() == []


@pytest.mark.parametrize("reply, status, insight_status", [(ACCEPT, "accepted", "removed"),
                                                          (REJECT, "rejected", "active")])
def test_insight_remove_from_a_program_needs_the_reviewer(root, tmp_path, reply, status, insight_status):
    from orgtree_lang.models.scripted import ScriptedModel

    with InsightPool.for_workspace(root) as pool:
        pool.add("Comments need a trivia channel.", "fmt test 12 fails", author="coder",
                 reviewer=ScriptedModel.from_file(write_reviewer(tmp_path, ACCEPT, "a.yaml"), role="reviewer"))
    (root / "drop.pipe").write_text('use insight\n\npipeline main() -> str:\n'
                                    '    done = insight.remove(1, "fmt was rewritten")\n'
                                    '    return done["status"] + " " + done["insight_status"]\n')
    reviewer = write_reviewer(tmp_path, reply, "removal.yaml")
    done = pipe("run", root / "drop.pipe", "--review-model", f"scripted:{reviewer}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{status} {insight_status}"


def test_an_insight_review_counts_against_the_run_token_budget(root):
    (root / "propose.pipe").write_text('use insight\n\npipeline main() -> str:\n'
                                       '    added = insight.propose("Cache compiled programs.", "cold starts are slow")\n'
                                       '    return added["status"]\n')
    reviewer = write_reviewer(root, ACCEPT)
    done = pipe("run", root / "propose.pipe", "--review-model", f"scripted:{reviewer}", "--json")
    assert done.returncode == 0, done.stderr
    spent = json.loads(done.stdout)["usage"]["tokens"]
    assert spent > 0
    stopped = pipe("run", root / "propose.pipe", "--review-model", f"scripted:{reviewer}", "--max-tokens",
                   str(spent - 1))
    assert stopped.returncode == 70
    assert "model tokens budget exceeded" in stopped.stderr and "insight.propose's review" in stopped.stderr
