"""The org tree's hot path: calls' events heard as fields, call groups stored by column, nodes made when needed."""

from __future__ import annotations

import json
import sqlite3

from orgtree_lang.runlog.recorder import TreeRecorder
from orgtree_lang.runlog.store import TreeNode, TreeStore
from orgtree_lang.vm import events
from orgtree_lang.vm.observe import FanOut, RunObserver, hearing


def _call(i: int, **changes) -> TreeNode:
    node = TreeNode(f"r1/main/f#{i}", "r1", "r1/main", i, "f", "pipeline", "main", "ok", f"x={i}", str(i * 2),
                    None, 1000.0 + i / 7, 0.125 * i)
    for name, value in changes.items():
        setattr(node, name, value)
    return node


def _stored_calls(path) -> list:
    db = sqlite3.connect(path)
    try:
        return [json.loads(row[0]) for row in db.execute("SELECT calls FROM tree_calls ORDER BY rowid")]
    finally:
        db.close()


def test_a_group_whose_calls_differ_in_every_field_reads_back_each_call_exactly(tmp_path):
    calls = [_call(1), _call(2, status="error", output="", error="f: boom", tokens=12, cost=0.25, detail="ray"),
             _call(3, started_at=1e9 + 0.1, duration_ms=3.3333)]
    with TreeStore(tmp_path / "state.db") as store:
        store.write_rows([], [(c.id, c.run_id, c.parent_id, c.seq, c.name, c.kind, c.caller, c.status, c.inputs,
                               c.output, c.error, c.started_at, c.duration_ms, c.tokens, c.cost, c.detail)
                              for c in calls])
        assert store.run_nodes("r1") == sorted(calls, key=lambda n: (n.started_at, n.seq))
        assert store.count("f", "pipeline", "error") == 1 and store.node("r1/main/f#2").error == "f: boom"


def test_a_column_every_call_shares_is_stored_once_and_read_back_for_each(tmp_path):
    calls = [_call(i) for i in range(1, 201)]
    with TreeStore(tmp_path / "state.db") as store:
        store.write_rows([], [tuple(getattr(c, f) for f in TreeNode.__slots__) for c in calls])
        assert store.run_nodes("r1") == calls
    (group,) = _stored_calls(tmp_path / "state.db")
    assert group["status"] == "ok" and group["error"] is None and group["tokens"] == 0 and group["n"] == 200
    assert isinstance(group["started_at"], dict)  # the floats as one array, not 200 numbers in text


def test_a_group_written_as_a_list_of_calls_is_still_read(tmp_path):
    with TreeStore(tmp_path / "state.db") as store:
        store.db.execute("INSERT INTO tree_calls (run_id, parent_id, name, kind, caller, first_started, "
                         "last_started, ok, errors, calls) VALUES ('r1', 'r1/main', 'f', 'pipeline', 'main', 5, 5, "
                         "1, 0, ?)", (json.dumps([["r1/main/f#1", 4, "ok", "x=1", "2", None, 5.0, 0.5, 0, 0.0, ""]]),))
        (node,) = store.run_nodes("r1")
    assert (node.id, node.seq, node.inputs, node.output, node.started_at, node.duration_ms) == \
        ("r1/main/f#1", 4, "x=1", "2", 5.0, 0.5)


class _Calls(RunObserver):
    def __init__(self) -> None:
        self.heard: list = []

    @hearing(events.PipelineCalled, unpacked=True)
    def called(self, state, caller, frame) -> None:
        self.heard.append((state, caller, frame))


class _Events(RunObserver):
    def __init__(self) -> None:
        self.heard: list = []

    @hearing(events.PipelineCalled)
    def called(self, event) -> None:
        self.heard.append((event.state, event.caller, event.frame))


def test_an_unpacked_handler_hears_the_fields_whether_sent_as_fields_or_as_an_event():
    observer = _Calls()
    observer.receiver(events.PipelineCalled)("s", "c", "f")
    observer.on(events.PipelineCalled(state="s2", caller="c2", frame="f2"))
    assert observer.heard == [("s", "c", "f"), ("s2", "c2", "f2")]
    assert observer.receiver(events.PipelineReturned) is None  # not heard: the machine sends nothing


def test_fields_sent_to_several_observers_reach_each_as_it_hears_them():
    fields, whole = _Calls(), _Events()
    FanOut([fields, whole, RunObserver()]).receiver(events.PipelineCalled)("s", "c", "f")
    assert fields.heard == whole.heard == [("s", "c", "f")]


class _Param:
    def __init__(self, name: str) -> None:
        self.name = name


def test_a_pipeline_call_open_at_a_write_is_stored_running_and_then_finished_once(tmp_path):
    recorder = TreeRecorder(TreeStore(tmp_path / "state.db"))
    recorder.open("r1/main", "r1", None, "main", "pipeline")
    recorder.open_call("r1/main/f#1", "r1", "r1/main", "f", "main", [_Param("x"), _Param("y")], [3, "a"])
    recorder.open_call("r1/main/g#2", "r1", "r1/main", "g", "main", [], [])
    recorder.return_call("r1/main/g#2", [1, 2])
    recorder.flush()
    with TreeStore(tmp_path / "state.db") as store:
        now = {n.id: (n.status, n.inputs, n.output) for n in store.run_nodes("r1")}
    assert now == {"r1/main": ("running", "", ""), "r1/main/f#1": ("running", 'x=3, y="a"', ""),
                   "r1/main/g#2": ("ok", "", "[1, 2]")}
    recorder.annotate("r1/main/f#1", tokens=7)
    recorder.return_call("r1/main/f#1", 9)
    recorder.close("r1/main", "ok")
    recorder.finish()
    with TreeStore(tmp_path / "state.db") as store:
        after = {n.id: (n.status, n.output, n.tokens) for n in store.run_nodes("r1")}
    assert after == {"r1/main": ("ok", "", 0), "r1/main/f#1": ("ok", "9", 7), "r1/main/g#2": ("ok", "[1, 2]", 0)}
