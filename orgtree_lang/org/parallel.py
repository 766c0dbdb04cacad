"""Parallel blocks and loops: a task per branch or item, joined by the task that reached the block.

A branch of a `parallel` block runs the block's code in a frame with a copy of the locals of the frame that started
it; when it ends, the variables it assigned are copied back (the checker makes sure no two branches assign the same
one). The task that started them waits (`joining`) until every branch has ended, then goes on, or raises one error
that lists every branch's outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import UNBOUND, display
from orgtree_lang.vm.organization import RELOAD
from orgtree_lang.vm.state import LIVE, Frame, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler


class ParallelBlocks:
    """PARALLEL, PARALLEL_FOR and END_BRANCH, and the join record of the task waiting for its branches."""

    OPCODES = {"PARALLEL": "start", "PARALLEL_FOR": "start_for", "END_BRANCH": "end_branch"}

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def start(self, frame: Frame, stack: list, arg: Any) -> int:
        """PARALLEL: start a task per branch (up to the limit on the stack); this task waits for them all."""
        limit = _limit(stack.pop())
        self._join(frame, [list(branch) for branch in arg], limit)
        return RELOAD

    def start_for(self, frame: Frame, stack: list, arg: int) -> int:
        """PARALLEL_FOR: start a task per item (up to the limit), each running the loop body; this task waits
        for them all, then gets the list of their values."""
        limit = _limit(stack.pop())
        items = stack.pop()
        self._join(frame, [[arg, []]] * len(items), limit, items)
        return RELOAD

    def _join(self, frame: Frame, branches: list, limit: int | None, items: list | None = None) -> None:
        org = self.org
        owner = org.enter_tasks()
        frame.calls += 1
        org.wait(owner, "joining")
        owner.join = {"node": f"{frame.node}/parallel#{frame.calls}", "branches": branches, "started": 0,
                      "limit": limit, "members": [], "errors": [], "failed": False}
        if items is not None:
            owner.join["items"] = list(items)
            owner.join["results"] = [None] * len(items)
        self._start_branches(owner)
        if not branches:  # a parallel loop over nothing is over at once
            org.wake(owner)

    def _start_branches(self, owner: Task) -> None:
        org = self.org
        state = org.state
        join = owner.join
        frame = owner.frames[-1]
        branches = join["branches"]
        items = join.get("items")
        while join["started"] < len(branches) and not join["failed"]:
            running = sum(1 for tid in join["members"] if _live(state.tasks, tid))
            if join["limit"] is not None and running >= join["limit"]:
                return
            index = join["started"]
            pc = branches[index][0]
            node = f"{join['node']}.{index + 1}"
            stack = [] if items is None else [items[index]]
            branch = Frame(frame.pipeline, pc, stack, list(frame.locals), [], frame.code, node=node)
            what = "branch" if items is None else "iteration"
            task = org.new_task(node, [branch], parent=owner.id,
                                label=f"{what} {index + 1} (line {frame.code.span_at(pc).line})")
            join["members"].append(task.id)
            join["errors"].append(None)
            join["started"] += 1
            if events.TaskStarted in org.machine.observer.hears:
                org.machine.observer.on(events.TaskStarted(state=state, task=task, frame=frame))

    def end_branch(self, frame: Frame, stack: list, arg: int) -> int:
        """END_BRANCH: this branch is finished; what it assigned is copied back into its block's frame, or the
        value it hands over (a parallel loop's iteration) is kept for the loop's list."""
        org = self.org
        task = org.current_task()
        owner = org.task_by_id(task.parent)
        join = owner.join
        index = join["members"].index(task.id)
        if arg:
            join["results"][index] = stack.pop()
        slots = join["branches"][index][1]
        target = owner.frames[-1].locals
        for slot in slots:
            value = frame.locals[slot]
            if value is not UNBOUND:
                target[slot] = value
        org.finish(task, "cancelled" if task.cancelled else "done")
        return RELOAD

    def branch_ended(self, task: Task) -> None:
        """A branch ended (and left the run): its outcome goes into its block's join; the next branch starts; the
        block's task may go on once none is left running."""
        org = self.org
        state = org.state
        owner = org.task_by_id(task.parent)
        join = owner.join
        index = join["members"].index(task.id)
        if task.error is not None:
            join["errors"][index] = dict(task.error, label=task.label, status=task.status)
            if task.status == "failed" and not join["failed"]:
                join["failed"] = True
                for tid in join["members"]:
                    other = next((t for t in state.tasks if t.id == tid), None)
                    if other is not None and other.status in LIVE:
                        org.cancel(other)
        elif task.status == "cancelled":
            join["errors"][index] = {"message": "cancelled", "kind": "cancelled", "line": None, "label": task.label,
                                     "status": "cancelled"}
        self._start_branches(owner)
        if not any(_live(state.tasks, tid) for tid in join["members"]) and \
                (join["failed"] or join["started"] == len(join["branches"])):
            org.wake(owner)

    def joined(self, owner: Task) -> None:
        """The parallel block of `owner` is over: continue after it, or raise what its branches raised."""
        join = owner.join
        owner.join = None
        self.org.leave_tasks()
        failures = [e for e in join["errors"] if e is not None and e["status"] == "failed"]
        if not failures:
            if "results" in join:
                owner.frames[-1].stack.append(join["results"])
            return
        cancelled = [e["label"] for e in join["errors"] if e is not None and e["status"] == "cancelled"]
        what = "branch" if "items" not in join else "iteration"
        skipped = [f"{what} {i + 1}" for i in range(join["started"], len(join["branches"]))]
        parts = [f"{e['label']} failed: {e['message']}" for e in failures]
        if cancelled:
            parts.append("cancelled: " + ", ".join(cancelled))
        if skipped:
            parts.append("not started: " + ", ".join(skipped))
        raise PipeRuntimeError(("parallel block: " if "items" not in join else "parallel loop: ") + "; ".join(parts),
                               kind=failures[0]["kind"],
                               hint="catch it with try/except around the parallel block, or inside the branch")


def _limit(limit: Any) -> int | None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise PipeRuntimeError(f"parallel(limit=...) needs an int of at least 1, got {display(limit, True)}",
                               kind="type", hint="write e.g. `parallel(limit=4):`")
    return limit


def _live(tasks: list[Task], task_id: int) -> bool:
    return any(t.id == task_id and t.status in LIVE for t in tasks)
