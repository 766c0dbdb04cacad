"""`for i in range(...)` runs over the numbers without building the list: the loop state a checkpoint stores is a
range (constant size however long the loop), a run stopped inside the loop resumes at the same number, and the
loop form has the built list's meaning (bounds, negative steps, empty ranges, a zero step's error)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.compile.disassemble import disassemble
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_file
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import decode, encode
from orgtree_lang.vm.budget import Budget

LOOP = '''\
pipeline main(n: int) -> int:
    total = 0
    for i in range(n):
        total = total + i
    return total
'''


def _checkpoint_sizes(workspace: Path, run_id: str) -> list[int]:
    db = sqlite3.connect(f"file:{workspace / '.orgtree' / 'runs' / run_id / 'journal.db'}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT length(state) FROM checkpoints ORDER BY id")]
    finally:
        db.close()


def test_a_for_range_loop_compiles_to_a_range_iterator_not_a_built_list(registry) -> None:
    program = compile_source(LOOP, "loop.pipe", registry).program
    listing = disassemble(program)
    assert "GET_RANGE_ITER" in listing and "CALL_BUILTIN" not in listing


def test_a_range_bound_to_a_name_is_still_a_list(registry) -> None:
    source = 'pipeline main() -> list[int]:\n    xs = range(3)\n    for x in xs:\n        print(x)\n    return xs\n'
    listing = disassemble(compile_source(source, "p.pipe", registry).program)
    assert "CALL_BUILTIN" in listing and "GET_ITER" in listing and "GET_RANGE_ITER" not in listing


def test_checkpoints_of_a_long_range_loop_stay_small_and_a_stop_inside_it_resumes_there(tmp_path: Path) -> None:
    program = tmp_path / "loop.pipe"
    program.write_text(LOOP, encoding="utf-8")
    registry = default_registry(plugins=False)
    n = 200_000
    options = RunOptions(inputs={"n": n}, durable=True, registry=registry, workspace=tmp_path, run_id="loop",
                         use_cache=False, budget=Budget(max_steps=120_000), printer=lambda line: None)
    with pytest.raises(PipeRuntimeError) as stopped:
        run_file(program, options)
    assert stopped.value.kind == "budget"
    sizes = _checkpoint_sizes(tmp_path, "loop")
    # The start, two at 50,000 steps each, the budget stop: none holds the 200,000 numbers (over 1 MB as JSON),
    # inline or spilled to the workspace's blobs.
    blobs = sum(p.stat().st_size for p in (tmp_path / ".orgtree").rglob("*") if p.is_file() and "blobs" in p.parts)
    assert len(sizes) >= 3 and max(sizes) < 20_000 and blobs < 100_000, (sizes, blobs)
    machine = durable_runs.resume(tmp_path, "loop", registry, RunOptions(budget=Budget(max_steps=10_000_000)))
    assert machine.state.result == n * (n - 1) // 2


@pytest.mark.parametrize("bounds", ["7", "2, 9", "10, 0, -3", "5, 5", "-4, 4, 3", "0, -1"])
def test_a_for_range_loop_visits_the_numbers_the_list_holds(tmp_path: Path, bounds: str) -> None:
    source = (f"pipeline main() -> list[int]:\n    seen = []\n    for i in range({bounds}):\n"
              f"        seen = seen + [i]\n    return seen\n")
    program = tmp_path / "p.pipe"
    program.write_text(source, encoding="utf-8")
    machine = run_file(program, RunOptions(registry=default_registry(plugins=False), workspace=tmp_path))
    assert machine.state.result == list(range(*(int(b) for b in bounds.split(","))))


def test_a_zero_step_in_a_for_range_loop_is_the_same_error_as_in_range(tmp_path: Path) -> None:
    messages = []
    for name, body in (("loop", "    for i in range(1, 5, 0):\n        print(i)\n"),
                       ("list", "    xs = range(1, 5, 0)\n")):
        program = tmp_path / f"{name}.pipe"
        program.write_text(f"pipeline main() -> int:\n{body}    return 0\n", encoding="utf-8")
        with pytest.raises(PipeRuntimeError) as failed:
            run_file(program, RunOptions(registry=default_registry(plugins=False), workspace=tmp_path))
        messages.append((failed.value.message, failed.value.kind))
    assert messages[0] == messages[1] and "must not be zero" in messages[0][0]


def test_a_range_in_run_state_encodes_and_decodes_to_the_same_range() -> None:
    for value in (range(3), range(10, -5, -2), range(2 ** 20000, 2 ** 20000 + 3)):
        assert decode(encode(value)) == value
    assert decode(encode({"$range": [1, 2, 3]})) == {"$range": [1, 2, 3]}  # a program's dict stays a dict
