"""The machine's narrow face to the organization: the Org protocol it calls, and a machine built without one."""

from __future__ import annotations

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.compile.opcodes import BY_NAME
from orgtree_lang.org.scheduler import Scheduler
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.vm.instructions import HANDLERS
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.organization import ORG_OPCODES, NoOrg, Org
from orgtree_lang.vm.services import Services

REGISTRY = default_registry(plugins=False)

# One program per kind of org opcode: (source, the line of its first org opcode, what the error names).
WITHOUT_ORG = {
    "parallel block": ('''\
pipeline main() -> int:
    print("before")
    parallel:
        a = 1
        b = 2
    return a + b
''', 3, "a `parallel:` block"),
    "parallel loop": ('''\
pipeline main() -> list[int]:
    print("before")
    ys = for x in [1, 2] parallel:
        x * 2
    return ys
''', 3, "a parallel `for` loop"),
    "spawn": ('''\
pipeline work() -> int:
    return 1

pipeline main() -> int:
    print("before")
    h = spawn work()
    return await h
''', 6, "`spawn`"),
    "receive": ('''\
pipeline main() -> str:
    print("before")
    m = receive(timeout=1)
    return m.body
''', 3, "`receive()`"),
    "a note to a person": ('''\
pipeline main() -> int:
    print("before")
    send "human", "done"
    return 1
''', 3, "`send`"),
    "a question to a person": ('''\
pipeline main() -> str:
    print("before")
    return ask("human", "Which region?")
''', 3, 'a question to a person (`ask("human", ...)`, `approve(...)`)'),
    "on message": ('''\
pipeline main() -> int:
    print("before")
    on message m:
        print(m.body)
    return 1
''', 3, "`on message`"),
}


def _machine(source: str, **services) -> Machine:
    program = compile_source(source, "face.pipe", REGISTRY).program
    lines: list[str] = []
    machine = Machine(program, Services(registry=REGISTRY, printer=lines.append, **services))
    machine.lines = lines
    return machine


@pytest.mark.parametrize("kind", sorted(WITHOUT_ORG))
def test_a_machine_without_an_org_fails_at_its_first_org_opcode_saying_what_is_missing(kind: str) -> None:
    source, line, words = WITHOUT_ORG[kind]
    machine = _machine(source)
    machine.start()
    with pytest.raises(PipeRuntimeError) as raised:
        machine.run()
    err = raised.value
    assert err.kind == "org" and not err.catchable
    assert err.message.startswith(f"{words} needs the organization's runtime")
    assert "built without one" in err.message and "Services(org=" in err.hint
    assert err.span.line == line and err.span.file == "face.pipe"
    assert machine.lines == ["before"]  # everything before it ran
    assert machine.state.status == "failed"


def test_a_try_block_does_not_catch_a_missing_org() -> None:
    machine = _machine('''\
pipeline main() -> str:
    try:
        h = spawn main()
    except err:
        return "caught"
    return "spawned"
''')
    machine.start()
    with pytest.raises(PipeRuntimeError, match="`spawn` needs the organization's runtime"):
        machine.run()


@pytest.mark.parametrize("kind", sorted(WITHOUT_ORG))
def test_the_same_programs_run_with_the_scheduler(kind: str) -> None:
    source, _, _ = WITHOUT_ORG[kind]
    machine = _machine(source, org=Scheduler)
    machine.start()
    try:
        machine.run()
    except PipeRuntimeError as err:  # a receive with nobody to send, a question with no journal: the org's answer
        assert err.kind in ("timeout", "human"), err.message
    assert machine.lines[0] == "before"


class Listening:
    """The real Scheduler, writing down which of its members the machine reaches for."""

    def __init__(self, machine: Machine) -> None:
        self.scheduler = Scheduler(machine)
        self.lock = self.scheduler.lock
        self.asked: list[str] = []

    def __getattr__(self, name: str):
        self.asked.append(name)
        return getattr(self.scheduler, name)


def test_a_run_with_no_org_opcode_never_calls_its_org() -> None:
    machine = _machine('''\
use text

pipeline shout(word: str) -> str:
    return text.upper(word)

pipeline main() -> int:
    total = 0
    for i in range(200):
        total += len(shout("x"))
    try:
        fail "boom"
    except err:
        total += 1
    return total
''', org=Listening)
    machine.start()
    assert machine.run().result == 201
    assert machine.org.asked == []


def test_a_run_with_tasks_goes_through_its_org() -> None:
    machine = _machine(WITHOUT_ORG["parallel block"][0], org=Listening)
    machine.start()
    assert machine.run().result == 3
    assert {"execute", "pick", "interrupt_due"} <= set(machine.org.asked)


def test_the_scheduler_and_the_absent_org_have_every_member_of_the_protocol() -> None:
    members = {name for name in vars(Org) if not name.startswith("_")} | set(Org.__annotations__)
    assert {"pick", "turn_over", "issue_call", "task_returned", "task_failed", "interrupt_due", "execute"} <= members
    machine = _machine(WITHOUT_ORG["parallel block"][0], org=Scheduler)
    for org in (machine.org, NoOrg()):
        missing = sorted(name for name in members if not hasattr(org, name))
        assert missing == [], f"{type(org).__name__} lacks {missing}"


def test_every_org_opcode_has_its_row_a_delegate_and_a_scheduler_entry() -> None:
    assert set(ORG_OPCODES) <= set(BY_NAME), "an org opcode that compile/opcodes.py does not have"
    machine = _machine(WITHOUT_ORG["parallel block"][0], org=Scheduler)
    assert set(machine.org.opcodes) == set(ORG_OPCODES)
    assert all(HANDLERS[name].__qualname__.startswith("_delegate.") for name in ORG_OPCODES)
    assert not any(HANDLERS[name].__qualname__.startswith("_delegate.") for name in set(HANDLERS) - set(ORG_OPCODES))
