"""Checkpoint a durable run's whole state at statement boundaries, as an observer of its top-level machine."""

from __future__ import annotations

from orgtree_lang.vm.effects import Effects
from orgtree_lang.vm.observe import RunObserver

# Statements between checks of whether a checkpoint is due (the check reads the clock).
CHECK_EVERY = 256


class Checkpoints(RunObserver):
    """Saves the state when a run begins, when it pauses or stops on a budget, and when the effects log says
    one is due. Only the top-level machine of a tree has it: a generated child's state lives in its parent's."""

    step_interval = CHECK_EVERY

    def __init__(self, effects: Effects) -> None:
        self.effects = effects

    def run_started(self, state, fresh, span) -> None:
        if state.steps == 0:
            self.effects.checkpoint(state)

    def suspending(self, state) -> None:
        self.effects.checkpoint(state)

    def at_statement(self, state, frame) -> None:
        if self.effects.checkpoint_due(state.steps, state.effect_seq):
            self.effects.checkpoint(state)
