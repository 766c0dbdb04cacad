"""Random programs that route messages by topic to handler pipelines print the same under any worker timing,
and their durable runs replay identically with no outside call."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_parallel import HELPERS, REGISTRY, DelayedExecutor, _run

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.errors import PipeRuntimeError

# A desk handles its first message and ends ("once": the next message of its topic starts a new node), or keeps
# taking messages until none comes ("loop").
_DESK = st.tuples(st.sampled_from(["once", "loop"]), st.integers(0, 6), st.integers(0, 80))
_SEND = st.tuples(st.integers(0, 2), st.booleans())  # which desk, and whether main works a little first


def _desk(index: int, style: str, pause: int, spin: int) -> list[str]:
    handle = [f'    r = work(f"d{index}:{{m.body}}", {pause}, {spin})',
              f'    send parent, r, topic="t{index}"']
    if style == "once":
        return [f"pipeline desk{index}(m: Message) -> none:", *handle]
    loop = ["    while true:", "        try:", "            m = receive(timeout=0.05)", "        except e:",
            "            break", *["    " + line for line in handle]]
    return [f"pipeline desk{index}(m: Message) -> none:", *handle, *loop]


@st.composite
def _programs(draw) -> str:
    desks = draw(st.lists(_DESK, min_size=1, max_size=3))
    sends = draw(st.lists(_SEND, min_size=1, max_size=6))
    lines = [f'route "t{i}" -> desk{i}' for i in range(len(desks))]
    for index, (style, pause, spin) in enumerate(desks):
        lines += ["", *_desk(index, style, pause, spin)]
    lines += ["", "pipeline main():"]
    for number, (desk, busy) in enumerate(sends):
        if busy:
            lines.append(f'    work("main{number}", 1, 10)')
        lines.append(f'    send "t{desk % len(desks)}", "m{number}"')
    lines += [f"    for i in range({len(sends)}):", "        r = receive(timeout=5)",
              '        print(f"reply {r.topic} {r.body} from {r.sender}")']
    return HELPERS + "\n" + "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(source=_programs(), seeds=st.lists(st.integers(0, 10_000), min_size=2, max_size=2))
def test_random_routed_programs_print_the_same_under_any_timing(tmp_path_factory, source: str,
                                                                seeds: list[int]) -> None:
    root = tmp_path_factory.mktemp("routed")
    inline = _run(source, root)
    assert sum(line.startswith("reply ") for line in inline) == source.count('    send "t'), (source, inline)
    for seed in seeds:
        assert _run(source, root, DelayedExecutor(seed)) == inline, source


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(source=_programs())
def test_random_routed_programs_replay_identically_with_no_outside_call(tmp_path_factory, source: str) -> None:
    root = tmp_path_factory.mktemp("routed_replay")
    path = root / "routed.pipe"
    path.write_text(source, encoding="utf-8")
    printed: list[str] = []
    options = RunOptions(printer=printed.append, durable=True, durability="process", executor="threads:4")
    try:
        machine = run_program(compile_source(source, "routed.pipe", REGISTRY).program, root, REGISTRY, options,
                              source=source, program_path=path)
        run_id = machine.state.run_id
    except PipeRuntimeError as err:
        run_id = err.state.run_id
    assert printed == _run(source, root), source  # the same lines as an in-memory run with no executor
    report = durable_runs.replay(root, run_id, REGISTRY)
    assert report.identical and report.outside_calls == 0, report.differences
    assert report.output == printed
