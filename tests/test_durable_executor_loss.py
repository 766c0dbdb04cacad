"""A call whose executor was lost (a Ray cluster gone) is not a failure of the step: resume runs it again."""

from __future__ import annotations

import pytest

from orgtree_lang.durable.effects import EffectLog
from orgtree_lang.durable.journal import Journal
from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm.effects import EffectStep

SPAN = Span("prog.pipe", 3, 5, 3, 20)


def step(seq: int, name: str) -> EffectStep:
    return EffectStep(seq, "skill", name, "main", SPAN, [seq], {})


def journal_with_a_failed_step_and_a_later_one(run_dir, error: Exception) -> None:
    """Step 1 (one branch) fails with `error`; step 2 (another branch, in flight meanwhile) succeeds."""
    log = EffectLog(Journal.create(run_dir, {"program": "prog.pipe"}), "run1")
    for s in (step(1, "code.run"), step(2, "http.fetch")):
        assert log.begin(s)[0] is False
    log.end(step(1, "code.run"), None, error)
    log.end(step(2, "http.fetch"), "page", None)
    log.sync()
    log.journal.close()


def resumed(run_dir) -> EffectLog:
    return EffectLog(Journal.open(run_dir), "run1", "resume")


def test_a_call_lost_with_its_cluster_runs_again_on_resume(tmp_path):
    lost = PipeRuntimeError("the local Ray cluster was lost while it ran a skill call", kind="executor",
                            catchable=False)
    journal_with_a_failed_step_and_a_later_one(tmp_path / "run", lost)
    log = resumed(tmp_path / "run")
    again, key = log.begin(step(1, "code.run"))
    assert again is False and key.startswith("run1:")  # executed again, under its idempotency key
    assert log.begin(step(2, "http.fetch")) == (True, "page")


def test_a_step_that_really_failed_is_reused_on_resume(tmp_path):
    journal_with_a_failed_step_and_a_later_one(tmp_path / "run", SkillError("no such file: notes.txt"))
    with pytest.raises(SkillError, match="no such file: notes.txt"):
        resumed(tmp_path / "run").begin(step(1, "code.run"))
