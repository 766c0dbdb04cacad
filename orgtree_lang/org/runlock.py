"""The run lock: whichever thread holds it is the only one touching a run tree's state; waits for the outside let go.

A run's VM thread holds it while it runs. An ambiguous block resolved concurrently (org/block_calls.py) runs its
decomposer on a thread of its own that holds it too, except while it waits on the outside world (a model's answer):
so the block's model calls overlap with each other and with the run, while journal, org tree, trace and meters
are only ever touched by one thread at a time, as in a run with one thread."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


class RunClosed(BaseException):
    """The run this lock served has ended: a block thread still working for it stops (not an error of the run)."""


class RunLock:
    """A reentrant lock that knows its owner, so that a wait can let go of it however deep it was taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._closed = False
        self._first_yield: dict[int, threading.Event] = {}  # thread -> set when it first lets go (or ends)

    def acquire(self) -> None:
        me = threading.get_ident()
        if self._owner == me:
            self._depth += 1
            return
        self._lock.acquire()
        self._owner, self._depth = me, 1
        self._refuse_if_closed()

    def release(self) -> None:
        if self._owner != threading.get_ident():
            return  # let go already: RunClosed was raised on the way back in
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()

    @contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    @contextmanager
    def released(self) -> Iterator[None]:
        """Let go while waiting on the outside (a model, a worker, another block), if this thread holds it."""
        me = threading.get_ident()
        if self._owner != me:
            yield
            return
        depth = self._depth
        self._owner, self._depth = None, 0
        first = self._first_yield.pop(me, None)
        self._lock.release()
        if first is not None:
            first.set()
        try:
            yield
        finally:
            self._lock.acquire()
            self._owner, self._depth = me, depth
            self._refuse_if_closed()

    def on_first_yield(self, event: threading.Event) -> None:
        """Set `event` the first time the calling thread lets go of the lock (the VM waits for that at a block's
        start, so that blocks start in the order the run reached them)."""
        self._first_yield[threading.get_ident()] = event

    def close(self) -> None:
        """The run is over: a thread that takes the lock from now on gets RunClosed."""
        self._closed = True

    def _refuse_if_closed(self) -> None:
        if self._closed:
            self._owner, self._depth = None, 0
            self._lock.release()
            raise RunClosed()
