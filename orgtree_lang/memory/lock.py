"""PadLock: one lock file held by one thread of one process at a time, with turns counted and dead holders recovered."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.memory.statedb import StateError

# Threads of one process share one threading.Lock per lock file: flock alone would let two threads of the same
# process in at once when they share a file descriptor, and waiting on a threading.Lock costs no polling.
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


def _forget_thread_locks() -> None:
    # A forked child inherits copies of locks some other thread may hold; those threads do not exist in it.
    global _THREAD_LOCKS_GUARD
    _THREAD_LOCKS.clear()
    _THREAD_LOCKS_GUARD = threading.Lock()


os.register_at_fork(after_in_child=_forget_thread_locks)


def _thread_lock(path: Path) -> threading.Lock:
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(str(path), threading.Lock())


class PadLockTimeout(StateError):
    """The lock was not free within the time allowed; the message names its holder."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) the lock: the turn number, the process, the agent, and since when."""

    turn: int
    pid: int | None
    host: str
    agent: str
    since: float

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since)) if self.since else "?"
        return f"process {self.pid} on {self.host} (agent {self.agent or '?'}, turn {self.turn}, since {when})"


@dataclass(frozen=True)
class Recovery:
    """A lock taken over from a holder that died while holding it (its process no longer runs)."""

    dead: Holder

    def message(self) -> str:
        return (f"scratchpad lock recovered: {self.dead.describe()} died while holding it; "
                "whatever it was writing in that turn was not committed")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it just is not ours
    return True


def _read_holder(fd: int) -> Holder:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 4096):
        raw += chunk
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError):
        data = {}  # a lock file torn by a crash mid-write: its turn count restarts from what the database holds
    return Holder(turn=int(data.get("turn", 0)), pid=data.get("pid"), host=str(data.get("host", "")),
                  agent=str(data.get("agent", "")), since=float(data.get("since", 0.0)))


def _write_holder(fd: int, holder: Holder) -> None:
    text = json.dumps({"turn": holder.turn, "pid": holder.pid, "host": holder.host, "agent": holder.agent,
                       "since": holder.since}).encode("utf-8")
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, text)


class PadLock:
    """An exclusive lock on `path` across threads and processes (a threading.Lock, then fcntl.flock on the file).

    The file records the holder (pid, host, agent, since) and a turn counter that grows by one per acquisition,
    so the order in which holders got the lock can be checked afterwards. A clean release clears the pid. The
    kernel drops a flock when its process dies, so a new holder that finds a pid still recorded knows that
    process died holding the lock: `acquire` returns a `Recovery` saying so (and calls `on_recover`).
    """

    def __init__(self, path: Path | str, *, on_recover: Callable[[Recovery], None] | None = None) -> None:
        self.path = Path(path)
        self.on_recover = on_recover
        self._fd: int | None = None
        self._thread_lock = _thread_lock(Path(os.path.realpath(self.path)))
        self.holder: Holder | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, agent: str = "", timeout: float | None = None, *, floor: int = 0) -> Recovery | None:
        """Wait for the lock (at most `timeout` seconds; None waits for ever), take it, and start a new turn.

        The new turn is one more than the larger of the file's last turn and `floor` (the caller's own record of
        turns, so a deleted lock file does not make turn numbers repeat).

        Returns a Recovery when the previous holder died holding the lock, else None. PadLockTimeout names
        the holder when the wait runs out."""
        if self._fd is not None:
            raise RuntimeError(f"this PadLock on {self.path} is already held; release it before acquiring again")
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=-1 if timeout is None else max(timeout, 0)):
            raise PadLockTimeout(f"the scratchpad lock {self.path} stayed busy for {timeout:g} s "
                                 "(another thread of this process holds it)")
        try:
            fd = self._lock_file(deadline, timeout)
        except BaseException:
            self._thread_lock.release()
            raise
        try:
            previous = _read_holder(fd)
            recovery = Recovery(previous) if previous.pid is not None else None
            self.holder = Holder(turn=max(previous.turn, floor) + 1, pid=os.getpid(), host=socket.gethostname(),
                                 agent=agent, since=time.time())
            _write_holder(fd, self.holder)
        except BaseException:  # e.g. a full disk: give the lock back rather than keep it for ever
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._thread_lock.release()
            raise
        self._fd = fd
        if recovery is not None and self.on_recover is not None:
            self.on_recover(recovery)
        return recovery

    def _lock_file(self, deadline: float | None, timeout: float | None) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if deadline is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
                return fd
            pause = 0.0005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise PadLockTimeout(self._busy_message(fd, timeout)) from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)
        except BaseException:
            os.close(fd)
            raise

    def _busy_message(self, fd: int, timeout: float | None) -> str:
        holder = _read_holder(fd)
        text = f"the scratchpad lock {self.path} stayed busy for {timeout:g} s; it is held by {holder.describe()}"
        if holder.pid is not None and holder.host == socket.gethostname() and not _alive(holder.pid):
            text += (f"; process {holder.pid} no longer runs, so a child it started still holds the lock "
                     "file open: stop that child")
        return text

    def release(self) -> None:
        """End the turn: clear the holder's pid (a clean release) and let the next waiter in."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self.holder is not None:
                _write_holder(fd, Holder(self.holder.turn, None, self.holder.host, self.holder.agent, time.time()))
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
            self._thread_lock.release()

    def last_holder(self) -> Holder:
        """What the lock file records now, without taking the lock."""
        if not self.path.exists():
            return Holder(0, None, "", "", 0.0)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return _read_holder(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> PadLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
