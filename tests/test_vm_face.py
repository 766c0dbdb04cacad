"""The VM's narrow face: one handler per opcode, observers behind one interface, resolvers that never see the Machine."""

from __future__ import annotations

import dataclasses

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
from orgtree_lang.vm import events
from orgtree_lang.vm.observe import NO_OBSERVER, FanOut, RunObserver, hearing, observe
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

    @hearing(events.PipelineEntered)
    def entered(self, event):
        self.events.append(("entered", event.frame.pipeline))

    @hearing(events.PipelineCalled)
    def called(self, event):
        self.events.append(("called", event.caller.pipeline, event.frame.pipeline))

    @hearing(events.PipelineReturned)
    def returned(self, event):
        self.events.append(("returned", event.frame.pipeline, event.value, event.finished))

    @hearing(events.SkillCalled)
    def skill(self, event):
        self.events.append(("skill", event.name, event.args, event.outcome, event.result))

    @hearing(events.Printed)
    def printed(self, event):
        self.events.append(("printed", event.line))

    @hearing(events.ErrorRaised)
    def error(self, event):
        self.events.append(("error", event.error.message, event.caught))

    @hearing(events.BlockStarted)
    def block(self, event):
        self.events.append(("block", event.spec.name, event.inputs, event.node_id))

    @hearing(events.BlockEnded)
    def block_ended(self, event):
        self.events.append(("block ended", event.outputs, event.error))

    @hearing(events.NodeAnnotated)
    def note(self, event):
        self.events.append(("note", event.node_id, event.detail))

    @hearing(events.RunStopped)
    def stopped(self, event):
        self.events.append(("stopped", event.state.status, event.error))


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
        ("note", node, "thinking"),
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
    assert observe([]) is NO_OBSERVER and observe([None]) is NO_OBSERVER and NO_OBSERVER.hears == frozenset()
    one = Recording()
    assert observe([one]) is one
    quiet, stepping = Recording(), Recording()
    stepping.step_interval = 0
    both = observe([quiet, stepping])
    assert isinstance(both, FanOut) and both.step_interval == 0 and both.hears == quiet.hears
    both.on(events.Printed(None, None, "x"))
    both.on(events.TaskEnded(None, None))  # heard by neither: nobody is called
    assert quiet.events == stepping.events == [("printed", "x")]


def _every_event_kind() -> list[type]:
    return [value for value in vars(events).values()
            if isinstance(value, type) and issubclass(value, events.Event) and value is not events.Event]


def test_every_event_is_a_small_slotted_dataclass_the_fan_out_passes_on_unchanged() -> None:
    kinds = _every_event_kind()
    assert len(kinds) >= 25

    # An observer of every kind, one handler each: a new event needs no change to the fan-out.
    handlers = {f"on_{kind.__name__}": hearing(kind)(lambda self, event: self.heard.append(event)) for kind in kinds}
    everything = type("Everything", (RunObserver,), handlers)
    heard, prints = everything(), _OnlyPrints()
    heard.heard = []
    assert heard.hears == frozenset(kinds)
    fan = observe([heard, prints])
    for kind in kinds:
        fields = dataclasses.fields(kind)
        event = kind(*[None] * len(fields))
        assert not hasattr(event, "__dict__")  # slots: small
        # Not frozen (a frozen one costs about three times as much to build, and a skill call builds one):
        # compared by identity, so no observer can take two events with equal fields for one.
        assert event != kind(*[None] * len(fields))
        fan.on(event)
    assert [type(e) for e in heard.heard] == kinds
    assert [type(e) for e in prints.got] == [events.Printed]  # the fan-out gave it only what it hears


class _OnlyPrints(RunObserver):
    def __init__(self) -> None:
        self.got: list = []

    @hearing(events.Printed)
    def printed(self, event):
        self.got.append(event)
