"""The escalation API (docs/org.md): runtime code asks the human node, inside a run (BlockContext.approve /
ask_human, as the decomposer does) and outside any run (Inbox.ask, as a bug review's removal decision)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testing import pipe as run_pipe

from orgtree_lang.durable.people import reply
from orgtree_lang.run import runs
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runlog.inbox import AwaitingHuman, Inbox
from orgtree_lang.runtime.errors import PipeRuntimeError
from pipe_testing import compile_text, registry

SOURCE = '''\
pipeline main(report: str = "it crashes on save") -> str:
    print("triaging")
    ambiguous classify(report: str) -> label: str:
        """Label the report as bug, feature or question."""
    print(f"label: {label}")
    return label
'''


class Escalating:
    """A resolver that drafts an answer with one (journaled) model call, then asks a person to approve it."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.asked: list[str] = []

    def __call__(self, block) -> dict:
        step = block.effect_step("model", "author", [block.spec.name, block.inputs["report"]], {})
        draft = block.effects.perform(step, self._model) if block.effects is not None else self._model("")
        question = f"Label {block.inputs['report']!r} as {draft}?"
        self.asked.append(question)
        if block.approve(question):
            return {"label": draft}
        return {"label": block.ask_human(f"Which label for {block.inputs['report']!r}?")}

    def _model(self, key: str) -> str:
        self.model_calls += 1
        return "bug"


def start(root: Path, resolver):
    program = root / "triage.pipe"
    program.write_text(SOURCE)
    printed: list[str] = []
    options = RunOptions(durable=True, decomposer=resolver, printer=printed.append, workspace=root)
    machine = run_program(compile_text(SOURCE, str(program), registry()).program, root, registry(), options,
                          source=SOURCE, program_path=program)
    return machine, printed


def resume(root: Path, run_id: str, resolver):
    printed: list[str] = []
    machine = runs.resume(root, run_id, registry(), RunOptions(decomposer=resolver, printer=printed.append))
    return machine, printed


def test_a_resolver_waits_for_approval_and_gets_it_on_resume_without_asking_its_model_again(root: Path) -> None:
    resolver = Escalating()
    machine, printed = start(root, resolver)
    state = machine.state
    assert state.status == "waiting"
    assert printed == ["triaging"]
    assert resolver.model_calls == 1
    with Inbox.for_workspace(root) as inbox:
        [question] = inbox.open_questions(state.run_id)
    assert (question.kind, question.question) == ("approve", "Label 'it crashes on save' as bug?")
    assert question.node.startswith("main/classify@")

    assert reply(root, state.run_id, None, "yes").value is True
    machine, printed = resume(root, state.run_id, resolver)
    assert machine.state.status == "done" and machine.state.result == "bug"
    assert printed == ["label: bug"]  # the lines of the first attempt are not shown again
    assert machine.state.output == ["triaging", "label: bug"]
    assert resolver.model_calls == 1  # the draft came from the journal

    report = runs.replay(root, state.run_id, registry())
    assert report.identical, report.differences
    assert report.outside_calls == 0


def test_a_no_leads_to_a_second_question_and_its_answer_is_the_label(root: Path) -> None:
    resolver = Escalating()
    machine, _ = start(root, resolver)
    run_id = machine.state.run_id
    reply(root, run_id, None, "no")
    machine, _ = resume(root, run_id, resolver)
    assert machine.state.status == "waiting"
    assert machine.state.waiting[0]["text"] == "Which label for 'it crashes on save'?"
    reply(root, run_id, None, "feature")
    machine, printed = resume(root, run_id, resolver)
    assert machine.state.result == "feature" and printed == ["label: feature"]
    assert resolver.model_calls == 1


def test_escalating_without_a_journal_is_an_error(root: Path) -> None:
    program = compile_text(SOURCE, "triage.pipe", registry()).program
    with pytest.raises(PipeRuntimeError, match="approve.*needs a journaled run"):
        run_program(program, root, registry(), RunOptions(durable=False, decomposer=Escalating(),
                                                          printer=lambda line: None))


# ---- outside a run ------------------------------------------------------------------------------------------


def test_runtime_code_outside_a_run_waits_in_the_inbox_until_a_reply(root: Path) -> None:
    key, question = "skills.bugs/3/remove", "Remove skill text.frobnicate (2 failed calls as evidence)?"
    with Inbox.for_workspace(root) as inbox:
        with pytest.raises(AwaitingHuman) as waiting:
            inbox.ask(key, question, kind="approve", about="bug report #3")
        assert waiting.value.exit_code == 75
        ref = waiting.value.question.ref
        assert f"pipe reply {ref} TEXT" in waiting.value.hint
        with pytest.raises(AwaitingHuman) as again:
            inbox.ask(key, question, kind="approve", about="bug report #3")
        assert again.value.question.ref == ref  # asked twice, one question

    listed = json.loads(run_pipe("inbox", "--json", cwd=root).stdout)
    assert [(q["id"], q["run"], q["node"], q["question"]) for q in listed] == [(ref, None, "bug report #3", question)]
    refused = run_pipe("reply", ref, "perhaps", cwd=root)
    assert refused.returncode == 2 and "yes, no, true or false" in refused.stderr
    answered = run_pipe("reply", ref, "no", cwd=root)
    assert answered.returncode == 0, answered.stderr

    with Inbox.for_workspace(root) as inbox:
        assert inbox.ask(key, question, kind="approve") is False
        assert inbox.open_questions() == []
        with pytest.raises(AwaitingHuman) as fresh:
            inbox.ask("skills.bugs/4/remove", "Remove skill text.other?", kind="approve")
        assert fresh.value.question.ref != ref  # another key is another question


CHILD = '''\
pipeline main(report: str) -> str:
    if approve(f"Is {report} a bug?"):
        return "bug"
    return "question"
'''


class WritesAChildThatAsks:
    """A resolver whose generated module asks the person itself (a generated child may ask too)."""

    def __call__(self, block) -> dict:
        program = compile_text(CHILD, "child.pipe", registry()).program
        return {"label": block.run_child(program, None)}


def test_a_generated_child_that_asks_makes_the_whole_run_wait(root: Path) -> None:
    machine, printed = start(root, WritesAChildThatAsks())
    run_id = machine.state.run_id
    assert machine.state.status == "waiting" and printed == ["triaging"]
    with Inbox.for_workspace(root) as inbox:
        [question] = inbox.open_questions(run_id)
    assert question.question == "Is it crashes on save a bug?"
    assert question.node.startswith("main/classify@") and question.node.endswith("/main")
    reply(root, run_id, None, "no")
    machine, printed = resume(root, run_id, WritesAChildThatAsks())
    assert machine.state.result == "question" and printed == ["label: question"]
    report = runs.replay(root, run_id, registry())
    assert report.identical and report.outside_calls == 0
