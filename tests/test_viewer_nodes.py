"""The node panel of `pipe serve` matches trace events by the node they name, never by a time window: two
branches of one `parallel:` block calling the same pipeline at the same moment each show only their own events."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")
pytest.importorskip("uvicorn", reason="`pipe serve` needs the [viewer] extra (pip install 'orgtree-lang[viewer]')")

from cli_testing import pipe  # noqa: E402
from viewer_testing import NO_MODEL, Server, run_id_of  # noqa: E402

# Both branches call `work` and nap in it at once: their nodes' times overlap, so only the node names them apart.
BRANCHES = '''\
use text, time

pipeline work(word: str) -> str:
    """Nap, say which word, shout it."""
    time.sleep(0.3)
    print(f"working on {word}")
    return text.upper(word)

pipeline main() -> list[str]:
    """Work on two words at once."""
    parallel:
        a = work("left")
        b = work("right")
    return [a, b]
'''


@pytest.fixture(scope="module")
def branches(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("branches")
    (workspace / "branches.pipe").write_text(BRANCHES)
    done = pipe("run", "branches.pipe", cwd=workspace, env=NO_MODEL)
    assert done.returncode == 0, done.stderr
    return workspace, run_id_of(workspace, "branches.pipe")


def _panel(server, run_id: str, node: str) -> str:
    response = server.http.get(f"{server.url}runs/{run_id}/node", params={"id": f"{run_id}/{node}"})
    assert response.status_code == 200, response.text
    return response.text


def _tree(workspace, run_id: str) -> dict[str, dict]:
    listed = pipe("tree", run_id, "--workspace", workspace, "--json")
    assert listed.returncode == 0, listed.stderr
    return {node["id"]: node for node in json.loads(listed.stdout)}


def test_concurrent_calls_of_one_pipeline_overlap_in_time(branches):
    workspace, run_id = branches
    nodes = _tree(workspace, run_id)
    left, right = (nodes[f"{run_id}/main/parallel#1.{n}/work#1"] for n in (1, 2))
    # The premise of the tests below: a time window could not tell these two calls apart.
    assert left["started_at"] < right["started_at"] + right["duration_ms"] / 1000
    assert right["started_at"] < left["started_at"] + left["duration_ms"] / 1000


def test_each_branch_call_shows_only_its_own_prints_and_skill_calls(branches):
    workspace, run_id = branches
    with Server(workspace) as server:
        left = _panel(server, run_id, "main/parallel#1.1/work#1")
        right = _panel(server, run_id, "main/parallel#1.2/work#1")
    assert "text=working on left" in left and "working on right" not in left
    assert "text=working on right" in right and "working on left" not in right
    assert "result=&quot;LEFT&quot;" in left and "RIGHT" not in left  # its return, not the other branch's
    assert left.count("<td>pipeline.call</td>") == right.count("<td>pipeline.call</td>") == 1  # the call of it
    assert "branches.pipe:12" in left and "branches.pipe:13" in right


def test_a_skill_node_shows_its_own_call_not_the_same_skill_of_the_other_branch(branches):
    workspace, run_id = branches
    nodes = _tree(workspace, run_id)
    uppers = sorted(node_id for node_id in nodes if "/text.upper#" in node_id)
    assert len(uppers) == 2
    with Server(workspace) as server:
        panels = [_panel(server, run_id, node_id[len(run_id) + 1:]) for node_id in uppers]
    for node_id, panel in zip(uppers, panels):
        word = "left" if "parallel#1.1" in node_id else "right"
        other = "right" if word == "left" else "left"
        events = panel.split("<h3>Trace events</h3>", 1)[1]
        assert len(re.findall(r"<td>skill</td>", events)) == 1, events
        assert word in events and other not in events.lower()


def test_every_trace_event_names_a_node_of_the_org_tree(branches):
    workspace, run_id = branches
    nodes = _tree(workspace, run_id)
    trace = workspace / ".orgtree" / "runs" / run_id / "trace.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    named = {event["node"] for event in events if event["event"] != "run.end"}
    assert named <= set(nodes), named - set(nodes)
    assert {e["node"] for e in events if e["event"] == "print"} == \
        {f"{run_id}/main/parallel#1.1/work#1", f"{run_id}/main/parallel#1.2/work#1"}
