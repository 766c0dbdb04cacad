"""The Ray executor: remote-safe slow skill calls (and, opted in, whole spawned nodes) run as tasks on a Ray cluster."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import logging
import os
import threading
from typing import Any, Callable

from orgtree_lang.executors.ray_tasks import WAITING_THREADS, ShippedContext, WaitingPool, node_on_worker, run_on_worker
from orgtree_lang.executors.threads import ThreadExecutor
from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError, UsageError
from orgtree_lang.vm.executor import NodeCall, SkillCall

INSTALL_HINT = "install the extra: pip install 'orgtree-lang[ray]' (or pick --executor threads)"
# Ray retries a task whose worker process or node died; the retry carries the same arguments, so the same
# idempotency key, and a skill that honours the key applies its effect once.
TASK_RETRIES = 3
_LOOPBACK = ("127.", "localhost", "::1")


def cluster_lost(address: str | None, err: BaseException) -> PipeRuntimeError:
    """The run cannot go on here: the cluster (or every try of a call on it) is gone."""
    where = f"the Ray cluster at {address}" if address else "the local Ray cluster"
    return PipeRuntimeError(
        f"{where} was lost while it ran a skill call: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}",
        kind="executor", catchable=False,
        hint="the journal has every finished step: `pipe resume RUN_ID` continues the run here (threads), "
             "or with --executor ray:ADDRESS on a cluster that is up")


class RayPending:
    """A call running as a Ray task: `result()` waits for it; `where` is the Ray node id once it is done."""

    def __init__(self, ref, executor: RayExecutor, done: Callable[[], None] | None = None, *,
                 pooled: bool = False) -> None:
        self.ref = ref
        self.pooled = pooled  # a call on a waiting pool (an actor's method): stopped with its pool, not cancelled
        self.where: str | None = None
        self._executor = executor
        self._done = done

    def done(self) -> bool:
        import ray

        ready, _ = ray.wait([self.ref], timeout=0)
        return bool(ready)

    def result(self, timeout: float | None = None) -> Any:
        import ray
        from ray import exceptions

        try:
            outcome, payload, node = ray.get(self.ref, timeout=timeout)
        except exceptions.GetTimeoutError:
            raise concurrent.futures.TimeoutError() from None  # still running: close() cancels it
        except (exceptions.RayError, ConnectionError) as err:
            self._ended()
            raise cluster_lost(self._executor.address, err) from err
        self._ended()
        self.where = f"ray node {node[:8]}"
        if outcome == "ok":
            return payload
        if outcome == "skill":
            raise SkillError(*payload)
        raise payload

    def _ended(self) -> None:
        self._executor.forget(self)
        if self._done is not None:
            self._done()


class RayNode:
    """A remote node running as a Ray task: a thread of the driver takes its step records as they come (and
    hands them to the journal), and runs it again, with those records, when its worker or node dies."""

    def __init__(self, executor: RayExecutor, call: NodeCall) -> None:
        self.where: str | None = None
        self._executor = executor
        self._call = call
        self._given = list(call.given)
        self._result: concurrent.futures.Future = concurrent.futures.Future()
        self._stopped = False
        self._generator = None
        threading.Thread(target=self._follow, name="pipe-ray-node", daemon=True).start()

    def done(self) -> bool:
        return self._result.done()

    def result(self, timeout: float | None = None) -> Any:
        return self._result.result(timeout)  # a timeout raises concurrent.futures.TimeoutError: still running

    def stop(self) -> None:
        """`cancel` (or the run's end): stop the task where it is; its except handlers do not run."""
        import ray

        self._stopped = True
        if self._generator is not None:
            try:
                ray.cancel(self._generator, force=True)
            except Exception:  # ended already, or the cluster is gone: nothing left to stop
                pass

    def _follow(self) -> None:
        import ray
        from ray import exceptions

        call = self._call
        lost = 0
        try:
            while True:
                task = self._executor.node_task().options(num_cpus=call.cpu)
                self._generator = task.remote(call.program, call.pipeline, call.inputs, call.skills,
                                              ShippedContext.of(call.context), call.budget, call.key, self._given)
                if self._stopped:
                    self.stop()
                try:
                    for ref in self._generator:
                        kind, payload, node = ray.get(ref)
                        if kind == "step":
                            self._given.append(payload)
                            if call.report is not None:
                                call.report(payload)
                            continue
                        self.where = f"ray node {node[:8]}"
                        self._result.set_result(payload)
                        return
                except (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.TaskCancelledError) \
                        as err:
                    if self._stopped:
                        self._result.set_exception(PipeRuntimeError(
                            f"{call.pipeline} (a remote node) was cancelled", kind="cancelled",
                            hint="a cancelled node has no result; catch the error where you await it"))
                        return
                    lost += 1
                    if lost > TASK_RETRIES:
                        raise cluster_lost(self._executor.address, err) from err
                    continue  # a new worker runs it again, given the steps the dead one reported
        except (exceptions.RayError, ConnectionError) as err:
            self._result.set_exception(cluster_lost(self._executor.address, err))
        except BaseException as err:  # noqa: BLE001 - whatever stopped the thread is the node's outcome
            self._result.set_exception(err)
        finally:
            self._executor.forget(self)
            if call.done is not None:
                call.done()


class RayExecutor:
    """Ships each call of a `remote` skill to a Ray cluster as a task; runs every other call on driver threads.

    `address` is None (start a private local cluster), "auto" (the cluster `ray start` made on this machine),
    `HOST:PORT` (a cluster's GCS) or `ray://HOST:PORT` (Ray Client). Ray is imported and the cluster reached
    on the first remote call, so a run that makes none costs nothing."""

    name = "ray"

    def __init__(self, address: str | None = None, *, ship_env: tuple[str, ...] = ()) -> None:
        self.address = address
        self.ship_env = ship_env
        self._node_task: Callable | None = None
        self.local = ThreadExecutor()
        self._task: Callable | None = None
        self._connected_here = False
        self._lock = threading.Lock()
        self._running: set[RayPending] = set()
        self._pools: dict[float, Any] = {}  # CPU share -> the WaitingPool actor that runs calls of that share

    @classmethod
    def from_spec(cls, argument: str | None, settings: dict | None = None) -> RayExecutor:
        """`ray` (a private local cluster) or `ray:ADDRESS` (`auto`, `HOST:PORT` or `ray://HOST:PORT`);
        `[executor] ship_env` lists the environment variables (secrets) a user chooses to send to workers."""
        if importlib.util.find_spec("ray") is None:
            raise UsageError("the ray executor needs Ray, which is not installed", hint=INSTALL_HINT)
        ship_env = (settings or {}).get("ship_env", [])
        if not all(isinstance(name, str) for name in ship_env):
            raise ValueError(f"[executor] ship_env must list variable names, got {ship_env!r}")
        return cls(argument or None, ship_env=tuple(ship_env))

    def submit(self, call: Callable[[], Any]):
        if isinstance(call, NodeCall):
            node = RayNode(self, call)
            with self._lock:
                self._running.add(node)
            return node
        if not (isinstance(call, SkillCall) and getattr(call.skill, "remote", False)):
            return self.local.submit(call)
        # CPU-bound skills (code.run) take a whole CPU per call, each call a task. Waiting skills (time.sleep 0.05,
        # http.fetch 0.1) go to a pool actor per share, which reserves that share once and waits on up to
        # WAITING_THREADS calls at a time in one worker process: a task per waiting call had Ray start a worker
        # process for every call waiting at once (16 cold 0.5 s waits took 2.8 s; benchmarks/ray_executor.py).
        cpu = float(getattr(call.skill, "cpu", 1.0))
        shipped = ShippedContext.of(call.context)
        if cpu < 1.0:
            ref = self._pool(cpu).run.remote(call.skill, call.args, call.kwargs, shipped)
        else:
            ref = self._connect().options(num_cpus=cpu).remote(call.skill, call.args, call.kwargs, shipped)
        pending = RayPending(ref, self, call.done, pooled=cpu < 1.0)
        with self._lock:
            self._running.add(pending)
        return pending

    def node_task(self):
        """The Ray task that runs remote nodes: not retried by Ray (RayNode runs it again with its records)."""
        self._connect()
        with self._lock:
            if self._node_task is None:
                import ray

                self._node_task = ray.remote(max_retries=0)(node_on_worker)
            return self._node_task

    def _pool(self, cpu: float):
        """The waiting pool for calls of `cpu` share, started on its first call. Ray restarts its process if it
        dies and runs the calls it held again (each up to TASK_RETRIES times, with the same idempotency key)."""
        self._connect()
        with self._lock:
            if cpu not in self._pools:
                import ray

                pool = ray.remote(WaitingPool).options(num_cpus=cpu, max_concurrency=WAITING_THREADS,
                                                       max_restarts=-1, max_task_retries=TASK_RETRIES)
                self._pools[cpu] = pool.remote()
            return self._pools[cpu]

    def forget(self, pending) -> None:
        with self._lock:
            self._running.discard(pending)

    def _connect(self):
        with self._lock:
            if self._task is not None:
                return self._task
            if self.address is None or self.address.startswith(_LOOPBACK):
                # A cluster on this machine stays on loopback: Ray would otherwise swap 127.0.0.1 for the
                # machine's network address, where a cluster started with --node-ip-address 127.0.0.1 is not.
                os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            quiet_ray_auth_note()

            import ray

            if not ray.is_initialized():
                runtime_env = {"env_vars": {name: os.environ[name] for name in self.ship_env if name in os.environ}}
                try:
                    # No address is a private instance: "local", because None would join the cluster a `ray start`
                    # (or any test's cluster) last recorded in /tmp/ray/ray_current_cluster.
                    ray.init(address=self.address or "local", include_dashboard=False, logging_level=logging.WARNING,
                             log_to_driver=False, runtime_env=runtime_env if runtime_env["env_vars"] else None)
                except Exception as err:  # ConnectionError, TimeoutError, RuntimeError, ValueError: all say "no cluster"
                    where = f"the Ray cluster at {self.address}" if self.address else "a local Ray cluster"
                    raise PipeRuntimeError(
                        f"cannot reach {where}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}",
                        kind="executor", catchable=False,
                        hint="start it (`ray start --head`), check the address in --executor ray:ADDRESS or "
                             "[executor] address, or run with --executor threads") from err
                self._connected_here = True
            self._task = ray.remote(max_retries=TASK_RETRIES, retry_exceptions=False)(run_on_worker)
            return self._task

    def close(self) -> None:
        """Cancel the tasks still running (a run stopped by a budget leaves none behind) and let go of Ray."""
        self.local.close()
        with self._lock:
            running, self._running = list(self._running), set()
            pools, self._pools = list(self._pools.values()), {}
        if self._task is None:
            return
        import ray

        for pool in pools:  # ends the waits it still runs: a thread in an actor cannot be cancelled alone
            try:
                ray.kill(pool, no_restart=True)
            except Exception:  # the cluster may be gone already
                pass
        for pending in running:
            if isinstance(pending, RayNode):
                pending.stop()
                continue
            if pending.pooled:
                continue
            try:
                ray.cancel(pending.ref, force=True)
            except Exception:  # the cluster may be gone already; nothing is left to cancel then
                pass
        if self._connected_here:
            ray.shutdown()
        self._task = self._node_task = None


# Ray 2.5x tells on every ray.init of a new local cluster that it turned token authentication on by default. The
# cluster keeps it on (nothing here opts out); the note is noise on every `--executor ray` run, so it is dropped.
RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
RAY_AUTH_NOTE = "Token authentication is enabled for this Ray cluster"


class _RayAuthNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(RAY_AUTH_NOTE)


def quiet_ray_auth_note() -> None:
    """Drop Ray's note that token authentication is on (once per process; other Ray warnings still show)."""
    found = logging.getLogger(RAY_AUTH_LOGGER)
    if not any(isinstance(f, _RayAuthNote) for f in found.filters):
        found.addFilter(_RayAuthNote())
