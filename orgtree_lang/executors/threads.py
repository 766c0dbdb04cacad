"""The local executor: slow skill calls run on a pool of threads in the `pipe run` process."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from orgtree_lang.vm.executor import NodeCall

DEFAULT_WORKERS = 32  # slow calls mostly wait on the network or a timer, so many may wait at once


class ThreadExecutor:
    """Runs each submitted call on one of `workers` threads, started on first use."""

    name = "threads"

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        if workers < 1:
            raise ValueError(f"an executor needs at least 1 worker, got {workers}")
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_spec(cls, argument: str | None, settings: dict | None = None) -> ThreadExecutor:
        """`threads` or `threads:N` (N worker threads); orgtree.toml's `[executor]` settings add nothing."""
        if not argument:
            return cls()
        try:
            workers = int(argument)
        except ValueError:
            raise ValueError(f"`threads:{argument}`: the number of workers must be an int, like threads:8") from None
        return cls(workers)

    def submit(self, call: Callable[[], Any]) -> Future:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="pipe-worker")
        if isinstance(call, NodeCall):
            return _node_thread(call)
        return self._pool.submit(call)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _node_thread(call: NodeCall) -> Future:
    """A remote node run in this process (org/remote.py) gets a thread of its own, not one of the pool's: a node
    may run until it is cancelled, and the calls issued after it must not wait behind it for a free worker."""
    import threading

    from orgtree_lang.executors.remote_nodes import run_node

    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(run_node(call))
        except BaseException as exc:  # noqa: BLE001 - whatever ended the node's machine is its outcome
            future.set_exception(exc)

    threading.Thread(target=run, name="pipe-node", daemon=True).start()
    return future
