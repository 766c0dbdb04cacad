"""The JSONL trace: one event per call (and per step at level `steps`), each with time, run id, frame and place."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_program

pytestmark = pytest.mark.fast

PROGRAM = '''\
use text

pipeline shout(word: str) -> str:
    return text.upper(word)

pipeline main() -> str:
    words = ["a", "b"]
    out = ""
    for w in words:
        out = out + shout(w)
    print(out)
    return out
'''


def run_traced(tmp_path, source=PROGRAM, **options):
    registry = default_registry(plugins=False)
    program = compile_source(source, "t.pipe", registry).program
    trace = tmp_path / "trace.jsonl"
    options.setdefault("trace_level", "steps")
    machine = run_program(program, tmp_path, registry, RunOptions(trace=trace, run_id="run42", **options))
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return machine, events


def test_every_event_has_time_run_and_kind(tmp_path):
    _, events = run_traced(tmp_path)
    assert events, "the trace is empty"
    for event in events:
        assert event["run"] == "run42"
        assert isinstance(event["time"], float)
        assert event["event"]


def test_one_step_event_per_statement_executed(tmp_path):
    machine, events = run_traced(tmp_path)
    steps = [e for e in events if e["event"] == "step"]
    # main: words, out, for, (out = ..) x2, print, return = 7; shout: return x2 = 2
    assert len(steps) == 9 == machine.state.steps
    assert [e["step"] for e in steps] == list(range(1, 10))
    assert steps[0]["at"] == "t.pipe:7" and steps[0]["frame"] == "main"
    assert {e["frame"] for e in steps} == {"main", "shout"}


def test_skill_events_carry_arguments_result_duration_and_outcome(tmp_path):
    _, events = run_traced(tmp_path)
    skills = [e for e in events if e["event"] == "skill"]
    assert [(e["skill"], e["args"], e["result"], e["outcome"]) for e in skills] == [
        ("text.upper", ['"a"'], '"A"', "ok"),
        ("text.upper", ['"b"'], '"B"', "ok"),
    ]
    assert all(e["duration_ms"] >= 0 and e["at"] == "t.pipe:4" for e in skills)


def test_run_start_end_print_and_pipeline_calls_are_traced(tmp_path):
    _, events = run_traced(tmp_path)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run.start" and kinds[-1] == "run.end"
    assert events[-1]["outcome"] == "ok" and events[-1]["result"] == '"AB"'
    assert kinds.count("pipeline.call") == 2 and kinds.count("pipeline.return") == 2
    assert [e["text"] for e in events if e["event"] == "print"] == ["AB"]


def test_failed_skill_and_run_end_record_the_error(tmp_path):
    source = 'use json\n\npipeline main() -> any:\n    return json.parse("{bad")\n'
    try:
        run_traced(tmp_path, source)
    except Exception:
        pass
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    skill = [e for e in events if e["event"] == "skill"][0]
    assert skill["outcome"] == "error" and skill["skill"] == "json.parse"
    assert events[-1]["event"] == "run.end" and events[-1]["outcome"] == "error"
    assert events[-1]["at"] == "t.pipe:4"


def test_default_trace_lives_in_the_workspace_run_folder(tmp_path):
    registry = default_registry(plugins=False)
    program = compile_source('pipeline main() -> int:\n    return 1\n', "d.pipe", registry).program
    machine = run_program(program, tmp_path, registry, RunOptions())
    trace = tmp_path / ".orgtree" / "runs" / machine.state.run_id / "trace.jsonl"
    assert trace.is_file()
    assert json.loads(trace.read_text().splitlines()[-1])["outcome"] == "ok"


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20)


@given(_VALUES, st.integers(4, 120))
def test_a_short_display_is_the_full_display_cut(value, limit):
    from orgtree_lang.runtime.values import display, display_short

    full = display(value, True)
    assert display_short(value, limit) == (full if len(full) <= limit else full[: limit - 3] + "...")


def test_summaries_of_huge_values_render_only_what_they_show():
    import time

    from orgtree_lang.vm.trace import summarize

    huge = {"rows": [list(range(50)) for _ in range(20_000)], "text": "x" * 10_000_000}
    started = time.perf_counter()
    text = summarize(huge, 80)
    assert time.perf_counter() - started < 0.05 and len(text) == 80 and text.startswith('{"rows": [[0, 1, 2')
