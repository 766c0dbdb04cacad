"""What runs on a Ray worker: the context shipped with a call, the task bodies of a skill call and of a remote
node, and the threaded pool actor that runs waiting calls many at once in one worker process."""

from __future__ import annotations

import pickle
import threading
from dataclasses import dataclass

from orgtree_lang.runtime.config import ConfigSnapshot
from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError
from orgtree_lang.vm.executor import NodeCall

# Threads of a waiting pool: as many calls as the driver's own thread pool (executors/threads.py) waits on at once.
WAITING_THREADS = 32


@dataclass(frozen=True)
class ShippedContext:
    """What a worker gets of a call's SkillContext: paths, settings text and names, never a handle or a secret.

    The workspace is its path only (a worker reads files there only if it sees the same folder: shared storage
    on a real cluster); the settings are orgtree.toml's text as read when the run started; models and the
    spend meter stay on the driver (which is why model skills are not remote)."""

    workspace_root: str
    writable_sources: bool
    generated: bool
    run_id: str
    idempotency_key: str | None
    config: ConfigSnapshot | None

    @classmethod
    def of(cls, context) -> ShippedContext | None:
        if context is None:
            return None
        workspace = context.workspace
        return cls(str(workspace.root), workspace.writable_sources, workspace.generated, context.run_id,
                   context.idempotency_key, context.config)

    def context(self):
        from orgtree_lang.runtime.skills import SkillContext
        from orgtree_lang.runtime.workspace import Workspace

        workspace = Workspace(self.workspace_root, writable_sources=self.writable_sources, generated=self.generated)
        return SkillContext(workspace, run_id=self.run_id, idempotency_key=self.idempotency_key, config=self.config)


def run_on_worker(skill, args: list, kwargs: dict, shipped: ShippedContext | None) -> tuple:
    """The task body on a Ray worker: `(outcome, payload, node id)`, outcome "ok", "skill" or "raise".

    Errors come back as data, not as Ray task errors: a SkillError's hint would not survive pickling, and the
    driver must tell a failure of the skill (journaled like any) from a failure of the cluster."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    try:
        return "ok", skill.invoke(args, kwargs, shipped.context() if shipped is not None else None), node
    except (SkillError, PipeRuntimeError) as err:
        return "skill", (err.message, err.hint), node
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            return "skill", (f"{type(exc).__name__}: {exc}", None), node
        return "raise", exc, node


def node_on_worker(program: str, pipeline: str, inputs: dict, skills: list, shipped: ShippedContext | None,
                   budget, key: str | None, given: list):
    """The task body of a remote node on a Ray worker, a generator: `("step", record, node)` for each step the
    node ends (the driver journals it before the node needs it again), then `("end", envelope, node)`."""
    import queue

    import ray

    from orgtree_lang.executors.remote_nodes import run_node

    node = ray.get_runtime_context().get_node_id()
    records: queue.Queue = queue.Queue()
    call = NodeCall(program, pipeline, inputs, skills, None, budget, key, given, report=records.put)
    ended: list = []

    def run() -> None:
        try:
            ended.append(("end", run_node(call, shipped.context() if shipped is not None else None)))
        except Exception as exc:  # a crash of the node's machine itself: the node fails with it
            ended.append(("end", {"value": None, "output": [], "steps": 0, "calls": [], "error": {
                "message": f"{type(exc).__name__}: {exc}", "kind": "executor", "line": None, "budget": None}}))
        records.put(None)

    machine = threading.Thread(target=run, name="pipe-node", daemon=True)
    machine.start()
    while (record := records.get()) is not None:
        yield "step", record, node
    machine.join()
    yield ended[0][0], ended[0][1], node


class WaitingPool:
    """A Ray actor (made remote by the driver, with `max_concurrency=WAITING_THREADS`) whose threads run calls of
    skills that declare under one CPU (`time.sleep`, `http.fetch`): one worker process serves every waiting call of
    that share, where a task per call would make Ray start a worker process for each call waiting at once."""

    def run(self, skill, args: list, kwargs: dict, shipped: ShippedContext | None) -> tuple:
        return run_on_worker(skill, args, kwargs, shipped)
