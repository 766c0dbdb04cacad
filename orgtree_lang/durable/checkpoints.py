"""Checkpoint a durable run's whole state at statement boundaries, as an observer of its top-level machine."""

from __future__ import annotations

import time
from typing import Callable

from orgtree_lang.vm.effects import Effects
from orgtree_lang.vm import events
from orgtree_lang.vm.observe import RunObserver, hearing

# Statements between checks of whether a checkpoint is due (the check reads the clock).
CHECK_EVERY = 256
# How often a running run's figures (steps, seconds, printed lines) are written for the views when no checkpoint
# is (a loop that prints but calls nothing journaled): `pipe serve` and `pipe runs` show them live.
PROGRESS_SECONDS = 1.0


class Checkpoints(RunObserver):
    """Saves the state when a run begins, when it pauses or stops on a budget, and when the effects log says
    one is due. Only the top-level machine of a tree has it: a generated child's state lives in its parent's.

    `before` runs right before each checkpoint is saved: the org tree recorder's flush, so that the nodes on disk
    are never behind the checkpoint a resume starts from (a node that ended before it is not run again)."""

    step_interval = CHECK_EVERY

    def __init__(self, effects: Effects, before: Callable[[], None] | None = None) -> None:
        self.effects = effects
        self.before = before
        self._saved: tuple[int, int] | None = None  # (steps, journaled steps) of the last checkpoint saved
        self._shown = (0, time.monotonic())  # (steps, monotonic time) of the figures last written for the views

    @hearing(events.RunStarted)
    def run_started(self, event: events.RunStarted) -> None:
        state = event.state
        if state.steps == 0:
            self._save(state)

    @hearing(events.Suspending)
    def suspending(self, event: events.Suspending) -> None:
        state = event.state
        self._save(state)

    @hearing(events.AtStatement)
    def at_statement(self, event: events.AtStatement) -> None:
        state = event.state
        if self.effects.checkpoint_due(state.steps, state.effect_seq):
            self._save(state)
        elif state.steps != self._shown[0] and time.monotonic() - self._shown[1] >= PROGRESS_SECONDS:
            self.effects.record_progress(state)
            self._shown = (state.steps, time.monotonic())

    @hearing(events.WaitingLong)
    def waiting_long(self, event: events.WaitingLong) -> None:
        state, whole = event.state, event.whole
        # A long wait comes before the next statement boundary: record what was done since the last checkpoint
        # now (once: nothing changes while the call is out), or a crash meanwhile would show less, and a finished
        # node as interrupted. A whole state is a checkpoint a resume goes on from; a call inside its instruction
        # leaves the run's figures for the views, and the org tree written.
        if (state.steps, state.effect_seq) == self._saved:
            return
        if whole:
            self._save(state)
            return
        if self.before is not None and not self.effects.catching_up and self.effects.mode != "replay":
            self.before()
        self.effects.record_progress(state)
        self._saved = (state.steps, state.effect_seq)

    def _save(self, state) -> None:
        if self.before is not None and not self.effects.catching_up and self.effects.mode != "replay":
            self.before()
        self.effects.checkpoint(state)
        self._saved = (state.steps, state.effect_seq)
        self._shown = (state.steps, time.monotonic())
