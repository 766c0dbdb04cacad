"""The deterministic scheduler: tasks switched at statement boundaries, slow calls delivered in issue order.

What a program observes never depends on thread timing: tasks take turns in a fixed order (round-robin by
task id, QUANTUM statements each), a slow call is numbered when its task asks for it, and when no task can
run the scheduler waits for the earliest-issued call, not whichever finishes first. So a run, its resume
and its replay see the same interleaving, and worker delays cannot change the output."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import UNBOUND, display
from orgtree_lang.vm.blocks import RELOAD
from orgtree_lang.vm.state import Frame
from orgtree_lang.vm.tasks import LIVE, Task

QUANTUM = 64  # statements a task runs before the next ready task gets its turn
WAIT = -2  # returned by an instruction handler: the task waits; the instruction runs again when it is resumed


# ---- tasks --------------------------------------------------------------------------------------------


def current_task(state) -> Task:
    return task_by_id(state, state.current)


def task_by_id(state, task_id: int) -> Task:
    for task in state.tasks:
        if task.id == task_id:
            return task
    raise KeyError(task_id)


def enter_tasks(m) -> Task:
    """The run gets a second task: the frames running until now become task 0."""
    state = m.state
    if not state.tasks:
        state.tasks = [Task(0, state.frames[0].node, state.frames, kind="main")]
        state.current = 0
        state.slice_end = state.steps + QUANTUM
    return current_task(state)


def _leave_tasks(state) -> None:
    """Back to one task: the run costs what a run without tasks costs."""
    if len(state.tasks) == 1 and state.tasks[0].id == 0 and not state.calls:
        state.tasks = []
        state.current = 0


def switch(m, task: Task) -> None:
    state = m.state
    state.current = task.id
    state.frames = task.frames
    state.slice_end = state.steps + QUANTUM


# ---- parallel blocks -------------------------------------------------------------------------------------


def start_parallel(m, frame: Frame, stack: list, arg) -> int:
    """PARALLEL: start a task per branch (up to the limit on the stack); this task waits for them all."""
    limit = _limit(stack.pop())
    _join(m, frame, [list(branch) for branch in arg], limit)
    return RELOAD


def start_parallel_for(m, frame: Frame, stack: list, arg: int) -> int:
    """PARALLEL_FOR: start a task per item (up to the limit), each running the loop body; this task waits
    for them all, then gets the list of their values."""
    limit = _limit(stack.pop())
    items = stack.pop()
    _join(m, frame, [[arg, []]] * len(items), limit, items)
    return RELOAD


def _limit(limit: Any) -> int | None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise PipeRuntimeError(f"parallel(limit=...) needs an int of at least 1, got {display(limit, True)}",
                               kind="type", hint="write e.g. `parallel(limit=4):`")
    return limit


def _join(m, frame: Frame, branches: list, limit: int | None, items: list | None = None) -> None:
    owner = enter_tasks(m)
    frame.calls += 1
    owner.status = "joining"
    owner.join = {"node": f"{frame.node}/parallel#{frame.calls}", "branches": branches, "started": 0,
                  "limit": limit, "members": [], "errors": [], "failed": False}
    if items is not None:
        owner.join["items"] = list(items)
        owner.join["results"] = [None] * len(items)
    _start_branches(m, owner)
    if not branches:  # a parallel loop over nothing is over at once
        owner.status = "ready"


def _start_branches(m, owner: Task) -> None:
    state = m.state
    join = owner.join
    frame = owner.frames[-1]
    branches = join["branches"]
    items = join.get("items")
    while join["started"] < len(branches) and not join["failed"]:
        running = sum(1 for tid in join["members"] if _live(state, tid))
        if join["limit"] is not None and running >= join["limit"]:
            return
        index = join["started"]
        pc = branches[index][0]
        node = f"{join['node']}.{index + 1}"
        stack = [] if items is None else [items[index]]
        branch = Frame(frame.pipeline, pc, stack, list(frame.locals), [], frame.code, node=node)
        what = "branch" if items is None else "iteration"
        task = Task(state.next_task, node, [branch], parent=owner.id,
                    label=f"{what} {index + 1} (line {frame.code.span_at(pc).line})")
        state.next_task += 1
        state.tasks.append(task)
        join["members"].append(task.id)
        join["errors"].append(None)
        join["started"] += 1
        m.observer.task_started(state, task, frame)


def must_pick(state) -> bool:
    """Whether the current task cannot go on: it ended, waits, or its parallel block just finished."""
    for task in state.tasks:
        if task.id == state.current:
            return task.status != "ready" or task.join is not None
    return True


def _live(state, task_id: int) -> bool:
    return any(t.id == task_id and t.status in LIVE for t in state.tasks)


def end_branch(m, frame: Frame, stack: list, arg: int) -> int:
    """END_BRANCH: this branch is finished; what it assigned is copied back into its block's frame, or the
    value it hands over (a parallel loop's iteration) is kept for the loop's list."""
    state = m.state
    task = current_task(state)
    owner = task_by_id(state, task.parent)
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
    task.status = "cancelled" if task.cancelled else "done"
    ended(m, task)
    return RELOAD


def task_failed(m, err: PipeRuntimeError) -> None:
    """An error no try block of the current task caught: the task ends with it (its parallel block, or
    whoever awaits it, sees it). The run's main task failing fails the run."""
    state = m.state
    task = current_task(state)
    if task.kind == "main":
        raise err
    task.status = "cancelled" if err.kind == "cancelled" else "failed"
    task.error = {"message": err.message, "kind": err.kind, "line": err.span.line if err.span else None}
    ended(m, task)


def ended(m, task: Task) -> None:
    state = m.state
    m.observer.task_ended(state, task)
    for other in state.tasks:
        if other.status == "awaiting" and other.waiting == task.id:
            other.status, other.waiting = "ready", None
    if task.kind == "spawn":
        task.frames = []  # kept, ended, until it is awaited
        if task.route is not None:  # no handle reaches a route's node: nothing will await it
            from orgtree_lang.vm.routes import route_node_ended

            state.tasks.remove(task)
            route_node_ended(m, task)
        return
    state.tasks.remove(task)
    owner = task_by_id(state, task.parent)
    join = owner.join
    index = join["members"].index(task.id)
    if task.error is not None:
        join["errors"][index] = dict(task.error, label=task.label, status=task.status)
        if task.status == "failed" and not join["failed"]:
            join["failed"] = True
            for tid in join["members"]:
                other = next((t for t in state.tasks if t.id == tid), None)
                if other is not None and other.status in LIVE:
                    cancel(m, other)
    elif task.status == "cancelled":
        join["errors"][index] = {"message": "cancelled", "kind": "cancelled", "line": None, "label": task.label,
                                 "status": "cancelled"}
    _start_branches(m, owner)
    if not any(_live(state, tid) for tid in join["members"]) and \
            (join["failed"] or join["started"] == len(join["branches"])):
        owner.status = "ready"


def cancel(m, task: Task) -> None:
    """Ask `task` to stop: it sees a `cancelled` error at its next statement boundary (a call in flight
    finishes first, and its result is delivered and journaled as usual). A task awaiting another stops
    waiting; a task joining its parallel block cancels the block's branches too."""
    if task.cancel or task.cancelled:
        return
    task.cancel = True
    m.cancels_pending = True
    m.observer.task_cancelled(m.state, task)
    if task.status == "blocked" and task.kind == "spawn":
        from orgtree_lang.vm.remote import stop_node

        stop_node(m, task)  # a remote node has no statement boundary here to see the cancel at
    if task.status == "awaiting":
        task.status, task.waiting = "ready", None
    if task.status == "receiving":  # it sees the cancel where it waits
        task.status = "ready"
    if task.join is not None:
        for tid in task.join["members"]:
            member = next((t for t in m.state.tasks if t.id == tid), None)
            if member is not None and member.status in LIVE:
                cancel(m, member)


def cancelled_error(task: Task) -> PipeRuntimeError:
    task.cancel = False
    task.cancelled = True
    return PipeRuntimeError(f"{task.label or task.node} was cancelled", kind="cancelled",
                            hint="catch it with try/except to clean up; the task ends after its handler")


def _finish_join(m, owner: Task) -> None:
    """The parallel block of `owner` is over: continue after it, or raise what its branches raised."""
    join = owner.join
    owner.join = None
    _leave_tasks(m.state)
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


# ---- choosing the next task ------------------------------------------------------------------------------


def pick(m) -> bool:
    """Make a ready task current: the next one after the current in task-id order, else deliver the
    earliest-issued call. Raises, in the task concerned, a failed call's error or a parallel block's.
    True when the run is over (its main task returned and nothing else is left running)."""
    state = m.state
    while True:
        task = _next_ready(state)
        if task is not None:
            if task.id != state.current or state.frames is not task.frames:
                switch(m, task)
            if task.join is not None:
                _finish_join(m, task)
            return False
        if state.calls:
            from orgtree_lang.vm.delivery import deliver_next

            deliver_next(m)
            if must_pick(state):  # the delivery ended its task (a remote node): another one goes on
                continue
            return False
        main = next((t for t in state.tasks if t.kind == "main"), None)
        idle = [t for t in state.tasks if t.status in LIVE and not t.cancel] if main is not None else []
        if main is not None and main.status == "done" and idle:
            # Only the nodes of routes are left, each waiting with nothing left to handle: they stop now.
            for task in idle:
                cancel(m, task)
            continue
        if main is not None and main.status == "done":
            # The run's main task returned and every task it left running has ended.
            state.result, state.status = main.result, "done"
            state.tasks, state.frames, state.current = [], main.frames, 0
            return True
        from orgtree_lang.vm.messages import blocked_at, fire_timeout
        from orgtree_lang.vm.outside import take_outside

        if take_outside(m) or fire_timeout(state):
            continue
        raise PipeRuntimeError("every task of the run is waiting and nothing can wake any of them (a deadlock): "
                               + blocked_at(state), kind="deadlock", catchable=False,
                               hint="a node waiting in receive() needs another node that sends to it; "
                                    "give receive a timeout to go on without one")


def _next_ready(state) -> Task | None:
    tasks = state.tasks
    current = state.current
    after = [t for t in tasks if t.id > current and t.status == "ready"]
    if after:
        return after[0]
    before = [t for t in tasks if t.id <= current and t.status == "ready"]
    return before[0] if before else None


def turn_over(m) -> bool:
    """At a statement boundary once the current task's quantum is spent: give the next ready task its
    turn. True when the current task changed."""
    state = m.state
    state.slice_end = state.steps + QUANTUM
    task = _next_ready(state)
    if task is None or task.id == state.current:
        return False
    switch(m, task)
    return True
