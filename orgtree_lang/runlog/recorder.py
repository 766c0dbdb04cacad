"""A run's org tree as it happens: nodes opened and closed by the VM, written to state.db in batches behind it."""

from __future__ import annotations

import time
from collections.abc import Callable

from orgtree_lang.runlog.store import OPEN, TreeNode, TreeStore, row_of
from orgtree_lang.vm.trace import summarize

FLUSH_EVERY = 2000  # changed nodes held before they are written
FLUSH_SECONDS = 1.0  # ... or this long since the last write, so `pipe tree` can follow a running run
MAX_SKILL_NODES = 100_000  # skill calls recorded one by one per run; later ones are counted per caller and name
MAX_PIPELINE_NODES = 100_000  # pipeline calls recorded one by one per run; later ones (and all they call) are
                              # counted in one node under the run's entry pipeline


def inputs_text(params, values: list) -> str:
    """How a pipeline call's node shows its parameters' values."""
    if len(params) == 1:
        return f"{params[0].name}={summarize(values[0], 80)}"
    return ", ".join([f"{p.name}={summarize(v, 80)}" for p, v in zip(params, values)])


class TreeRecorder:
    """Collects nodes for one run tree (the run and its generated children) and writes them to a TreeStore.

    Changed nodes are written behind the run, in one transaction per batch: every FLUSH_EVERY changes, at a
    statement boundary FLUSH_SECONDS after the last write (`tick`), when the run stops, and at the end. A
    call that finished before its batch was written is kept only as its row and stored grouped with the other
    finished calls of its caller (runlog/store.py): SQLite's cost per row, not Python's, was most of the org
    tree's. (A writer thread was measured too: SQLite gives up Python's lock for every row it inserts, and
    taking it back from a busy VM cost more than the insert.)

    `listener(event, node)` is called with "open" and "close" for pipeline, branch and ambiguous nodes (not for
    skill calls, which are many), "note" when a node's detail changes and "state" when an open node starts or
    stops waiting (`mark`): `pipe run` uses it to show the tree's progress."""

    def __init__(self, store: TreeStore | None, *, listener: Callable[[str, TreeNode], None] | None = None,
                 clock: Callable[[], float] = time.time, max_skill_nodes: int = MAX_SKILL_NODES,
                 max_pipeline_nodes: int = MAX_PIPELINE_NODES) -> None:
        self.store = store
        self.listener = listener
        self.clock = clock
        self.max_skill_nodes = max_skill_nodes
        self.max_pipeline_nodes = max_pipeline_nodes
        self._pipeline_nodes: dict[str, int] = {}  # per run id
        self._entries: dict[str, str] = {}  # run id -> its entry pipeline's node id
        # Open pipeline calls past the limit (id -> run id, caller): neither they nor what they call are kept.
        self._unrecorded: dict[str, tuple[str, str]] = {}
        self.nodes: dict[str, TreeNode] = {}  # the pipeline and ambiguous nodes seen by this process, by id
        self._dirty: dict[str, TreeNode] = {}
        self._rows: list[tuple] = []  # finished calls, as rows: they are never changed again
        self._running_written: set[str] = set()  # calls written while running: their rows are updated in place
        self._overflow: dict[str, list[int]] = {}  # "#more" node id -> [ok, error] calls it counts
        self._opened: list[TreeNode] = []  # pipeline calls opened since the last write
        # Pipeline calls opened by `open_call` and not yet needed as nodes: node id -> (seq, run id, parent id,
        # name, caller, params, values, started_at); and those of them that returned: (node id, that, value,
        # ended_at). A node is made (`_promote`) only when something asks for it or it is still open at a write;
        # the rest become rows at the write, their inputs and outputs summarized then.
        self._fresh: dict[str, tuple] = {}
        self._returned: list[tuple] = []
        self._seq = 0
        self._skill_nodes: dict[str, int] = {}  # per run id
        self._last_flush = clock()
        self._touches = 0

    # ---- recording ---------------------------------------------------------------------

    def open(self, node_id: str, run_id: str, parent_id: str | None, name: str, kind: str, *, caller: str = "",
             inputs: str = "") -> TreeNode:
        """Start node `node_id` (a resumed run opening it again starts it afresh); None past the per-run limit of
        pipeline calls, or under a call that was not recorded."""
        if kind == "pipeline":
            self._entries.setdefault(run_id, node_id)
            count = self._pipeline_nodes.get(run_id, 0) + 1
            self._pipeline_nodes[run_id] = count
            if count > self.max_pipeline_nodes or parent_id in self._unrecorded:
                self._unrecorded[node_id] = (run_id, caller)  # counted when it ends, with its status
                return None
        self._seq += 1
        node = TreeNode(node_id, run_id, parent_id, self._seq, name, kind, caller, "running", inputs, "", None,
                        self.clock(), None)
        if kind in ("pipeline", "branch") and parent_id is not None:
            # Kept, not yet marked changed: a call that ends before the next write is written once, finished.
            self.nodes[node_id] = node
            self._opened.append(node)
        else:
            self._touch(node)
        if self.listener is not None and kind != "skill":
            self.listener("open", node)
        return node

    def open_call(self, node_id: str, run_id: str, parent_id: str, name: str, caller: str, params,
                  values: list) -> None:
        """Start the node of a pipeline call by `caller` (as `open` does), its inputs `params` bound to `values`
        (values that will not change): the hot path, which makes no node until one is needed."""
        if self.listener is not None:  # it is told of every pipeline node: made now
            self.open(node_id, run_id, parent_id, name, "pipeline", caller=caller, inputs=inputs_text(params, values))
            return
        self._entries.setdefault(run_id, node_id)
        count = self._pipeline_nodes.get(run_id, 0) + 1
        self._pipeline_nodes[run_id] = count
        if count > self.max_pipeline_nodes or parent_id in self._unrecorded:
            self._unrecorded[node_id] = (run_id, caller)
            return
        self._seq += 1
        self._fresh[node_id] = (self._seq, run_id, parent_id, name, caller, params, values, self.clock())

    def return_call(self, node_id: str, value) -> None:
        """The pipeline call `node_id` returned `value` (a value that will not change): closed "ok"."""
        fresh = self._fresh.pop(node_id, None)
        if fresh is None:
            self.close(node_id, "ok", output=summarize(value))
            return
        returned = self._returned
        returned.append((node_id, fresh, value, self.clock()))
        if len(returned) >= FLUSH_EVERY or (len(returned) & 63 == 0
                                            and self.clock() - self._last_flush >= FLUSH_SECONDS):
            self.flush()

    def _promote(self, node_id: str) -> TreeNode | None:
        """The node of a call `open_call` started and nobody asked for yet, made now (None if there is none)."""
        fresh = self._fresh.pop(node_id, None)
        if fresh is None:
            return None
        seq, run_id, parent_id, name, caller, params, values, started_at = fresh
        node = TreeNode(node_id, run_id, parent_id, seq, name, "pipeline", caller, "running",
                        inputs_text(params, values), "", None, started_at, None)
        self.nodes[node_id] = node
        self._opened.append(node)
        return node

    def _promote_all(self) -> None:
        for node_id in list(self._fresh):
            self._promote(node_id)

    def _returned_rows(self) -> list[tuple]:
        rows = [(node_id, run_id, parent_id, seq, name, "pipeline", caller, "ok", inputs_text(params, values),
                 summarize(value), None, started_at, round((ended_at - started_at) * 1000, 3), 0, 0.0, "")
                for node_id, (seq, run_id, parent_id, name, caller, params, values, started_at), value, ended_at
                in self._returned]
        self._returned = []
        return rows

    def recorded(self, node_id: str) -> TreeNode | None:
        """Node `node_id` as this process has it, else as the store has it (a resumed run's), else None."""
        if node_id in self._fresh:
            return self._promote(node_id)
        if node_id in self.nodes:
            return self.nodes[node_id]
        return self.store.node(node_id) if self.store is not None else None

    def mark(self, node_id: str, status: str) -> None:
        """An open node starts or stops waiting: `status` is one of store.OPEN (running, waiting, receiving)."""
        node = self.nodes.get(node_id) or self._promote(node_id)
        if node is None or node.status not in OPEN or node.status == status:
            return
        node.status = status
        self._touch(node)
        if self.listener is not None:
            self.listener("state", node)

    def open_nodes(self) -> list[str]:
        """The ids of the nodes open in this process (running, waiting or receiving), in the order they opened."""
        self._promote_all()
        return [node.id for node in sorted(self.nodes.values(), key=lambda n: n.seq) if node.status in OPEN]

    def close(self, node_id: str, status: str, *, output: str = "", error: str | None = None) -> TreeNode | None:
        """Finish node `node_id` as "ok", "error" or "cancelled"; None if it was never opened here."""
        if node_id in self._unrecorded:
            run_id, caller = self._unrecorded.pop(node_id)
            self._count_overflow(run_id, self._entries[run_id], "(pipeline calls)", caller, status, "pipeline")
            return None
        node = self.nodes.get(node_id) or self._promote(node_id)
        if node is None or node.status not in OPEN:
            return node
        node.status, node.output, node.error = status, output, error
        node.duration_ms = round((self.clock() - node.started_at) * 1000, 3)
        if node.kind in ("ambiguous", "decision"):  # kept: annotate and listeners use it (a decision its tokens)
            self._touch(node)
        else:
            del self.nodes[node_id]
            if node_id in self._running_written or node.parent_id is None:
                self._running_written.discard(node_id)
                self._touch(node, keep=False)
            else:
                # Never written while it ran: it goes with the finished calls, grouped (runlog/store.py).
                self._finished(row_of(node))
        if self.listener is not None and node.kind != "skill":
            self.listener("close", node)
        return node

    def annotate(self, node_id: str, *, tokens: int = 0, cost: float = 0.0, detail: str | None = None) -> None:
        """Add model spending to a node, or set its detail (e.g. "reused", the module's path)."""
        node = self.nodes.get(node_id) or self._promote(node_id)
        if node is None:
            return
        node.tokens += tokens
        node.cost += cost
        if detail is not None:
            node.detail = detail
        self._touch(node)
        if self.listener is not None and detail is not None:
            self.listener("note", node)

    def skill_call(self, node_id: str, run_id: str, parent_id: str, name: str, caller: str, inputs: str,
                   started_at: float, duration_ms: float, status: str, output: str, error: str | None,
                   tokens: int = 0, cost: float = 0.0, detail: str | None = None) -> None:
        """Record one finished skill call (past the per-run limit, only a count under its caller); `detail` says
        where it ran when not in this process."""
        if parent_id in self._unrecorded:  # inside a pipeline call past the limit: counted with those calls
            self._count_overflow(run_id, self._entries[run_id], name, caller, status)
            return
        count = self._skill_nodes.get(run_id, 0) + 1
        self._skill_nodes[run_id] = count
        if count > self.max_skill_nodes:
            self._count_overflow(run_id, parent_id, name, caller, status)
            return
        self._seq += 1
        # Skill calls are kept as rows only until written: a long run makes many of them.
        self._finished((node_id, run_id, parent_id, self._seq, name, "skill", caller, status, inputs, output, error,
                        started_at, duration_ms, tokens, cost, detail or ""))

    def _finished(self, row: tuple) -> None:
        rows = self._rows
        rows.append(row)
        if len(rows) >= FLUSH_EVERY or (len(rows) & 63 == 0 and self.clock() - self._last_flush >= FLUSH_SECONDS):
            self.flush()

    def _count_overflow(self, run_id: str, parent_id: str, name: str, caller: str, status: str,
                        kind: str = "skill") -> None:
        node_id = f"{parent_id}/{name}#more"
        counts = self._overflow.get(node_id)
        if counts is None:
            self._seq += 1
            self.nodes[node_id] = TreeNode(node_id, run_id, parent_id, self._seq, name, kind, caller, "ok", "", "",
                                           None, self.clock(), None)
            counts = self._overflow[node_id] = [0, 0]
        counts[status != "ok"] += 1
        node = self.nodes[node_id]
        if status != "ok":
            node.status = "error"
        self._touch(node)  # its detail and output are written from the counts when it is written

    def _touch(self, node: TreeNode, keep: bool = True) -> None:
        if keep:
            self.nodes[node.id] = node
        self._dirty[node.id] = node
        self._touches += 1
        if len(self._dirty) >= FLUSH_EVERY or (self._touches % 64 == 0
                                               and self.clock() - self._last_flush >= FLUSH_SECONDS):
            self.flush()

    # ---- writing -------------------------------------------------------------------------

    def tick(self) -> None:
        """Between statements: write what changed if FLUSH_SECONDS have passed since the last write."""
        if ((self._dirty or self._rows or self._opened or self._fresh or self._returned)
                and self.clock() - self._last_flush >= FLUSH_SECONDS):
            self.flush()

    def flush(self) -> None:
        """Write every node changed since the last flush."""
        self._last_flush = self.clock()
        self._promote_all()
        for node in self._opened:  # those still open are written as such (`pipe tree` shows them)
            if node.status in OPEN and node.id not in self._dirty:
                self._dirty[node.id] = node
        self._opened = []
        rows = []
        for node in self._dirty.values():
            counts = self._overflow.get(node.id)
            if counts is not None:
                ok, error = counts
                node.detail = f"{ok} ok, {error} error"
                node.output = f"{ok + error} more call{'s' if ok + error != 1 else ''}, not recorded one by one"
            rows.append(row_of(node))
            if node.status in OPEN and node.kind != "ambiguous":
                self._running_written.add(node.id)
        self._dirty.clear()
        finished, self._rows = self._rows, []
        if self._returned:
            finished += self._returned_rows()
        if self.store is not None:
            self.store.write_rows(rows, finished)

    def close_open(self, status: str = "error", error: str | None = None) -> None:
        """At the end of a run: finish every node still running (the run failed or was stopped there)."""
        self._promote_all()
        for node in list(self.nodes.values()):
            if node.status in OPEN:
                self.close(node.id, status, error=error)
        self.flush()

    def finish(self) -> None:
        """Write what is left and close the store."""
        self.flush()
        if self.store is not None:
            self.store.close()
            self.store = None


def recorder_for(workspace_root, listener: Callable[[str, TreeNode], None] | None = None) -> TreeRecorder:
    """A recorder writing to the workspace's state.db."""
    return TreeRecorder(TreeStore.for_workspace(workspace_root), listener=listener)
