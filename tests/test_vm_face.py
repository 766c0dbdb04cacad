"""The VM's narrow face: one handler per opcode, observers behind one interface, resolvers that never see the Machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.compile.opcodes import OPCODES
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.blocks import BlockContext
from orgtree_lang.vm.instructions import HANDLERS
from orgtree_lang.vm.machine import INLINE, Machine
from orgtree_lang.vm.observe import NO_OBSERVER, FanOut, RunObserver, observe
from orgtree_lang.vm.services import Services

pytestmark = pytest.mark.fast

REGISTRY = default_registry(plugins=False)

PROGRAM = '''\
use text

pipeline shout(word: str) -> str:
    return text.upper(word)

pipeline main() -> str:
    loud = shout("hey")
    print(loud)
    try:
        fail "boom"
    except err:
        print(err.message)
    ambiguous pick(loud: str) -> (choice: str):
        """Pick one."""
    return choice
'''


def test_every_opcode_runs_in_exactly_one_place() -> None:
    table = {op.name for op in OPCODES}
    handled = set(HANDLERS)
    assert not INLINE & handled, f"both inlined and handled: {sorted(INLINE & handled)}"
    assert INLINE | handled == table, (f"no behaviour: {sorted(table - INLINE - handled)}; "
                                       f"not in the table: {sorted((INLINE | handled) - table)}")


class Recording(RunObserver):
    """Writes down the events it hears, by name."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def pipeline_entered(self, state, frame, parent_node):
        self.events.append(("entered", frame.pipeline))

    def pipeline_called(self, state, caller, frame):
        self.events.append(("called", caller.pipeline, frame.pipeline))

    def pipeline_returned(self, state, frame, value, finished):
        self.events.append(("returned", frame.pipeline, value, finished))

    def skill_called(self, state, frame, name, args, kwargs, outcome, result, failure, started, spend, where=None):
        self.events.append(("skill", name, args, outcome, result))

    def printed(self, state, frame, line):
        self.events.append(("printed", line))

    def error_raised(self, state, error, caught):
        self.events.append(("error", error.message, caught))

    def block_started(self, state, frame, spec, inputs, node_id):
        self.events.append(("block", spec.name, inputs, node_id))

    def block_ended(self, node_id, outputs, error):
        self.events.append(("block ended", outputs, error))

    def annotate(self, node_id, **fields):
        self.events.append(("note", node_id, fields))

    def run_stopped(self, state, error):
        self.events.append(("stopped", state.status, error))


def _run(tmp_path: Path, resolver, *observers) -> Machine:
    program = compile_source(PROGRAM, "face.pipe", REGISTRY).program
    machine = Machine(program, Services(registry=REGISTRY, context=SkillContext(Workspace(tmp_path)),
                                        resolver=resolver, observers=observers))
    machine.start(run_id="r")
    machine.run()
    return machine


def test_observers_hear_calls_skills_prints_errors_and_blocks_in_order(tmp_path: Path) -> None:
    def resolver(block):
        block.note("thinking")
        return {"choice": block.inputs["loud"].lower()}

    first, second = Recording(), Recording()
    machine = _run(tmp_path, resolver, first, second)
    assert machine.state.result == "hey"
    node = first.events[7][3]
    assert node.startswith("r/main/pick@") and node.rsplit("@", 1)[1].isdigit()
    assert first.events == second.events == [
        ("entered", "main"),
        ("called", "main", "shout"),
        ("skill", "text.upper", ["hey"], "ok", "HEY"),
        ("returned", "shout", "HEY", False),
        ("printed", "HEY"),
        ("error", "boom", True),
        ("printed", "boom"),
        ("block", "pick", {"loud": "HEY"}, node),
        ("note", node, {"detail": "thinking"}),
        ("block ended", {"choice": "hey"}, None),
        ("returned", "main", "hey", True),
        ("stopped", "done", None),
    ]


def test_a_resolver_gets_a_block_context_and_never_the_machine(tmp_path: Path) -> None:
    seen = []

    def resolver(block):
        seen.append(block)
        return {"choice": "x"}

    machine = _run(tmp_path, resolver)
    (block,) = seen
    assert isinstance(block, BlockContext) and not isinstance(block, Machine)
    assert block.spec.name == "pick" and block.inputs == {"loud": "HEY"}
    assert block.budget is machine.budget and block.effects is None
    fields = set(vars(block))
    assert fields == {"spec", "inputs", "node", "budget", "records", "spend", "effects", "context", "observer",
                      "journal_node", "numbering", "statement", "children", "seconds_used", "steps_used", "answered",
                      "executor", "concurrent", "printed", "reads_messages", "desk", "upward"}
    assert not any(value is machine for value in vars(block).values()), "a field holds the machine itself"
    # Its steps go under its node in the journal, stamped with the statement at which the run reached it.
    assert block.journal_node == block.node.removeprefix("r/")
    assert block.statement == int(block.node.rsplit("@", 1)[1])
    assert block.numbering is machine.state and not block.concurrent and block.printed is None
    # One tree: its pipeline reads no messages, no node is set for it yet (the resolver sets one), nothing goes up.
    assert not block.reads_messages and block.desk is None and block.upward == []


def test_no_observers_is_the_no_op_one_and_several_fan_out() -> None:
    assert observe([]) is NO_OBSERVER and observe([None]) is NO_OBSERVER
    one = Recording()
    assert observe([one]) is one
    quiet, stepping = Recording(), Recording()
    stepping.step_interval = 0
    both = observe([quiet, stepping])
    assert isinstance(both, FanOut) and both.step_interval == 0
    both.printed(None, None, "x")
    assert quiet.events == stepping.events == [("printed", "x")]


def test_the_fan_out_forwards_every_event_of_the_interface() -> None:
    events = [name for name, value in vars(RunObserver).items() if callable(value) and not name.startswith("_")]
    missing = [name for name in events if name not in vars(FanOut)]
    assert not missing, f"FanOut does not forward: {missing}"
