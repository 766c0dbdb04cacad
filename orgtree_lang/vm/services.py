"""Everything a Machine uses besides its program, in one object: skills, budget, resolver, effects, observers, org."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from orgtree_lang.vm.budget import Budget, TreeMeter
from orgtree_lang.vm.observe import RunObserver

if TYPE_CHECKING:
    from orgtree_lang.vm.blocks import BlockContext, BlockResolver
    from orgtree_lang.vm.effects import Effects
    from orgtree_lang.vm.executor import Executor
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.organization import OrgFactory, TreeLock
    from orgtree_lang.vm.state import RunState


class Numbering(Protocol):
    """What numbers a run tree's journal steps: the top-level run's RunState, or the range of one ambiguous block
    resolved concurrently (org.block_calls.StepCounter); `effect_seq` is the last number given."""

    effect_seq: int


class ChildBuilder(Protocol):
    """Builds the machine that runs a generated module for an ambiguous block (run.factory implements it)."""

    def __call__(self, parent: Machine, block: BlockContext, program, resolver: BlockResolver | None,
                 budget: Budget, context: Any = None) -> Machine: ...


@dataclass(frozen=True)
class TreePlace:
    """Where a generated child sits in its run tree: the block it runs for, the tree's shared meter (a block's
    own, vm.budget.BlockMeter, while it is resolved concurrently), the steps and skill calls of the paused
    machines above it, the top-level run's state (which numbers the journal, unless `counter` does), and the
    tree's run lock."""

    parent_node: str
    meter: TreeMeter
    ancestors: tuple[int, int]
    root_state: RunState
    counter: Numbering | None = None  # numbers the child's journal steps (None: `root_state` does)
    run_lock: TreeLock | None = None  # the run tree's (org.runlock.RunLock), None in a tree without an organization
    # The node of the block the child runs for, as the child's `send parent` reaches it (org.block_node.BlockNode;
    # vm.blocks.BlockContext.desk). None: the child's messages to it go to the block's pipeline's mailbox.
    desk: Any = None


@dataclass
class Services:
    """What one machine may use. Defaults give a plain in-memory run: no skills, no resolver, nothing observed."""

    registry: Any = None  # looks skills up by name: .get(name) -> Skill | None
    context: Any = None  # runtime.skills.SkillContext handed to skills
    budget: Budget = field(default_factory=Budget)
    resolver: BlockResolver | None = None  # resolves ambiguous blocks (the decomposer)
    printer: Callable[[str], None] | None = None
    clock: Callable[[], float] = time.monotonic
    effects: Effects | None = None  # a durable run's journal door; None runs every step directly
    observers: tuple[RunObserver, ...] = ()
    children: ChildBuilder | None = None  # how the resolver's generated modules get their machines
    place: TreePlace | None = None  # set for a generated child; None for a top-level run
    executor: Executor | None = None  # where slow skill calls run; None runs them on the VM's thread
    # Builds the machine's organization (org.scheduler.Scheduler): tasks, messages, people. None: a machine whose
    # program uses none of them; its first org opcode is an error that says so (vm/organization.py).
    org: OrgFactory | None = None
    # Spawned nodes that can run anywhere run whole on the executor, as one journaled step each (org/remote.py);
    # `[executor] remote_nodes` of orgtree.toml, read the same way by a run, its resume and its replay.
    remote_nodes: bool = False
    routes: dict[str, str] = field(default_factory=dict)  # orgtree.toml's [org] routes: topic -> pipeline
    # Posts a note to the human node (`send "human", value`): (note, key) -> None; the run factory puts it in the
    # workspace's inbox, once per key. None: the note stays in the run's message log only.
    notify: Callable[[dict[str, Any], str], None] | None = None
    # A durable run's queued messages from outside (`pipe send`; durable.inbound.Inbound): .wait(seconds) -> the
    # oldest not taken or None, .done(id) once it is journaled. None: nothing can come from outside.
    inbound: Any = None
    # The organization's agents outside any block (decompose.run_agents.RunAgents: `.pick_route`), for a `send` to
    # a topic no route declares; None when no model is configured (run-time agents are off).
    agents: Any = None
