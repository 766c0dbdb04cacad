"""Run state between steps is plain data: a run paused after every step, dumped to JSON, loaded back and
continued on a brand-new Machine ends exactly like a run that was never interrupted.

The programs are every examples/*.pipe and every golden program that compiles, including those that end
in a runtime error (their final error and frames must match too).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.values import RecordValue, UNBOUND, decode, encode
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.state import Frame, RunState
from pipe_testing import (
    EXAMPLES_DIR, compile_text, example_files, golden_files, golden_id, read_expectations, registry,
)

# A run this long step by step would make the suite slow; no program here comes near it.
MAX_STEPS = 20_000


def _programs() -> list[tuple[str, Path]]:
    found = [(f"examples/{p.stem}", p) for p in example_files()]
    found += [(f"golden/{golden_id(p)}", p) for p in golden_files()
              if read_expectations(p.read_text(encoding="utf-8")).compiles]
    return found


PROGRAMS = _programs()


@dataclass
class Outcome:
    """How a run ended, with what is independent of timing and run ids."""

    status: str
    output: list[str]
    printed: list[str]
    result: object
    error: tuple | None
    frames: list[dict]
    steps: int
    skill_calls: int


def _workspace(tmp: Path, path: Path) -> Path:
    """A fresh workspace at `tmp` (the same path for both runs, since error messages may name it);
    examples that read files get a copy of the files they read."""
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if path.parent == EXAMPLES_DIR and (EXAMPLES_DIR / "notes").is_dir():
        shutil.copytree(EXAMPLES_DIR / "notes", tmp / "notes")
    return tmp


def _machine(program, reg, root: Path, printed: list[str]) -> Machine:
    return plain_machine(program, registry=reg, context=SkillContext(Workspace(root), run_id="roundtrip"),
                   printer=printed.append)


def _outcome(machine: Machine, printed: list[str], error: PipeRuntimeError | None) -> Outcome:
    state = machine.state
    err = None if error is None else (error.message, error.kind, str(error.span))
    return Outcome(state.status, list(state.output), printed, state.result, err,
                   [f.to_json() for f in state.frames], state.steps, state.skill_calls)


def run_uninterrupted(program, reg, root: Path) -> Outcome:
    printed: list[str] = []
    machine = _machine(program, reg, root, printed)
    machine.start(run_id="whole")
    error = None
    try:
        machine.run()
    except PipeRuntimeError as err:
        error = err
    return _outcome(machine, printed, error)


def run_step_by_step(program, reg, root: Path) -> tuple[Outcome, int]:
    """Pause after every step; round-trip the state through JSON; continue on a new Machine each time."""
    printed: list[str] = []
    machine = _machine(program, reg, root, printed)
    machine.start(run_id="stepwise")
    pauses, error = 0, None
    while True:
        try:
            state = machine.run(pause_after=1)
        except PipeRuntimeError as err:
            error = err
            break
        if state.status == "done":
            break
        assert state.status == "paused"
        pauses += 1
        assert pauses < MAX_STEPS, "program too long for a step-by-step test"
        text = state.dumps()
        loaded = RunState.loads(text)
        assert loaded.dumps() == text
        assert loaded == state
        machine = _machine(program, reg, root, printed)
        machine.attach(loaded)
    return _outcome(machine, printed, error), pauses


@pytest.mark.parametrize("name,path", PROGRAMS, ids=[name for name, _ in PROGRAMS])
def test_paused_and_resumed_run_matches_uninterrupted_run(name: str, path: Path, tmp_path: Path):
    reg = registry()
    program = compile_text(path.read_text(encoding="utf-8"), name + ".pipe", reg).program
    whole = run_uninterrupted(program, reg, _workspace(tmp_path / "ws", path))
    stepwise, pauses = run_step_by_step(program, reg, _workspace(tmp_path / "ws", path))
    assert stepwise == whole
    # Every statement is a step and the run paused before each one but the first.
    assert pauses == whole.steps - 1
    if whole.status == "done":
        assert whole.error is None
    else:
        assert whole.status == "failed" and whole.error is not None


def test_the_set_of_programs_is_large():
    assert len(PROGRAMS) >= 100
    assert any(name.startswith("examples/") for name, _ in PROGRAMS) or not example_files()


# ---- the encoding itself -------------------------------------------------

SPECIAL_VALUES = [
    None, True, False, 0, -5, 2**80, 10**5000, -(10**5000) + 1, 1.5, float("inf"), float("-inf"), "", "text with \"quotes\"\n",
    [], [1, [2, [3]]], {}, {"a": 1, "b": [True, None]},
    {"$record": "not a record"}, {"$dict": 1}, {"$float": "inf"}, {"$unbound": 0}, {"$int": "ff"},
    {"$x": {"$y": 1}},
    RecordValue("Point", {"x": 1, "y": {"$record": [1, 2]}}),
    [RecordValue("Empty", {})],
]


@pytest.mark.parametrize("value", SPECIAL_VALUES, ids=lambda v: f"{type(v).__name__}-{len(repr(v)) if not isinstance(v, int) else v.bit_length()}")
def test_encode_decode_round_trips_values_that_look_like_markers(value):
    import json

    data = json.loads(json.dumps(encode(value)))
    back = decode(data)
    assert back == value
    assert type(back) is type(value)
    assert encode(back) == encode(value)


def test_nan_round_trips_as_nan():
    import json
    import math

    back = decode(json.loads(json.dumps(encode(float("nan")))))
    assert isinstance(back, float) and math.isnan(back)


def test_unbound_round_trips_as_the_same_marker():
    assert decode(encode(UNBOUND)) is UNBOUND


def test_bool_and_int_stay_distinct_through_json():
    frame = Frame("main", 3, [True, 1, 1.0], [False, 0, 0.0])
    back = Frame.from_json(frame.to_json())
    assert [type(v) for v in back.stack] == [bool, int, float]
    assert [type(v) for v in back.locals] == [bool, int, float]


def test_state_with_an_unknown_format_is_refused():
    state = RunState("r", "h", "main")
    data = state.to_json()
    data["format"] = 999
    with pytest.raises(ValueError, match="format"):
        RunState.from_json(data)


def test_dict_key_order_survives_the_json_round_trip():
    # Dicts keep insertion order in .pipe (print and `for` show it), so the state must keep it too.
    state = RunState("r", "h", "main", [Frame("main", 0, [{"b": 1, "a": 2}], [{"z": {"y": 1, "x": 2}}])])
    back = RunState.loads(state.dumps())
    assert list(back.frames[0].stack[0]) == ["b", "a"]
    assert list(back.frames[0].locals[0]["z"]) == ["y", "x"]


def test_states_differing_only_in_dict_order_are_not_equal():
    one = RunState("r", "h", "main", [Frame("main", 0, [], [{"b": 1, "a": 2}])])
    two = RunState("r", "h", "main", [Frame("main", 0, [], [{"a": 2, "b": 1}])])
    assert one != two
    assert one.frames[0] != two.frames[0]
