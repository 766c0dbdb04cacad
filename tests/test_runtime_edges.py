"""VM behaviour that golden programs cannot express: the decomposer hook, extreme values, and known limits."""

from __future__ import annotations

import json

import pytest

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.state import RunState
from pipe_testing import compile_text, registry, run_source

pytestmark = pytest.mark.fast

DEEP = """\
pipeline deep(levels: int) -> any:
    x = []
    for i in range(levels):
        x = [x]
    return x

pipeline main() -> any:
    value = deep(3000)
    print(len(value))
    return value
"""


def test_a_deeply_nested_result_does_not_break_the_trace(tmp_path):
    # Summaries of values for the trace used to raise RecursionError out of Machine.run.
    outcome = run_source(DEEP, tmp_path)
    assert outcome.error is None
    assert outcome.output == ["1"]
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    ends = [e for e in events if e["event"] == "run.end"]
    # The summary renders only the part it shows, so even this value gets one: its first 200 characters.
    assert ends and ends[0]["outcome"] == "ok"
    assert ends[0]["result"] == "[" * 197 + "..."


def test_printing_a_deeply_nested_value_is_a_runtime_error(tmp_path):
    outcome = run_source(DEEP.replace("print(len(value))", "print(value)"), tmp_path)
    assert outcome.error is not None and "nested too deeply" in outcome.error.message


@pytest.mark.xfail(strict=True, raises=RecursionError,
                   reason="known limit: run state is encoded recursively, so values nested deeper than Python's "
                          "recursion limit (~1000) cannot be checkpointed")
def test_run_state_holding_a_deeply_nested_value_round_trips():
    program = compile_text(DEEP).program
    machine = plain_machine(program, registry=registry())
    machine.start()
    state = machine.run(pause_after=3002)  # inside `deep`, with the value about 3000 levels deep
    assert state.status == "paused"
    assert RunState.loads(state.dumps()) == state


# ---- the decomposer hook ---------------------------------------------------------------------

TRIAGE = """\
use text

pipeline main(report: str) -> str:
    words = text.split(report)
    ambiguous classify(report: str, first: str = words[0]) -> (label: str, score: int):
        \"\"\"Label the report and score how sure the label is.\"\"\"
    return f"{label}:{score}"
"""


def _run_with(decomposer, report="crash on start"):
    program = compile_text(TRIAGE).program
    machine = plain_machine(program, registry=registry(), resolver=decomposer)
    machine.start(inputs={"report": report})
    machine.run()
    return machine.state.result


def test_the_decomposer_gets_the_spec_and_inputs_and_its_outputs_are_bound_by_name():
    seen = {}

    def decomposer(block):
        seen.update(spec=block.spec, inputs=block.inputs)
        return {"score": 7, "label": "bug"}

    assert _run_with(decomposer) == "bug:7"
    spec = seen["spec"]
    assert spec.name == "classify" and spec.pipeline == "main"
    assert spec.doc == "Label the report and score how sure the label is."
    assert [name for name, _ in spec.inputs] == ["report", "first"]
    assert [(name, str(t)) for name, t in spec.outputs] == [("label", "str"), ("score", "int")]
    assert spec.uses == ("text",)
    assert seen["inputs"] == {"report": "crash on start", "first": "crash"}


def test_a_decomposer_output_of_the_wrong_type_is_a_runtime_error():
    with pytest.raises(PipeRuntimeError, match="output `score` of ambiguous block classify expected int"):
        _run_with(lambda block: {"label": "bug", "score": "high"})


def test_a_missing_decomposer_output_is_a_runtime_error():
    with pytest.raises(PipeRuntimeError, match="gave no output `label`"):
        _run_with(lambda block: {"score": 1})
