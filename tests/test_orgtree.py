"""The org tree and the tree-wide budget: nodes in state.db, `pipe tree`, live progress, tokens, cost and steps."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from decompose_testing import GOOD, NO_CONCERNS, ONE_CONCERN
from hypothesis import given
from hypothesis import strategies as st

from orgtree_lang.cli.main import main
from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.decomposer import Decomposer
from orgtree_lang.models.base import Completion, Usage
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.runlog.recorder import TreeRecorder
from orgtree_lang.runlog.render import render_tree
from orgtree_lang.runlog.store import TreeNode, TreeStore
from orgtree_lang.review.ledger import ConcernLedger
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.state_db import state_db_path
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.budget import Budget
from orgtree_lang.run.factory import plain_machine

REGISTRY = default_registry(plugins=False)

# ---- programs and scripted models ------------------------------------------------------------------------

NESTED = '''use text
use fs

pipeline leaf(s: str) -> str:
    return text.upper(s)

pipeline middle(name: str) -> str:
    a = leaf(name)
    b = text.lower(a)
    c = text.lower(b)
    d = text.lower(c)
    return f"{a}-{d}"

pipeline deeper(n: int) -> int:
    return 10 // n

pipeline fails(n: int) -> int:
    return deeper(n)

pipeline main(who: str = "ada") -> str:
    g = middle(who)
    try:
        fails(0)
    except err:
        print("caught")
    try:
        fs.read("missing.txt")
    except:
        print("no file")
    return g
'''

UNCAUGHT = '''pipeline inner(x: int) -> int:
    fail f"boom {x}"

pipeline outer(x: int) -> int:
    return inner(x + 1)

pipeline main() -> int:
    return outer(1)
'''

FOLDING = '''use text

pipeline main() -> str:
    s = "Ab"
    for i in range(5):
        s = text.lower(s)
    s = text.upper(s)
    s = text.lower(s)
    s = text.lower(s)
    return s
'''

# A block reached once per report: two separate children.
TRIAGE = '''use text

pipeline main(first: str = "it crashed", second: str = "how do I log in?") -> list[str]:
    labels = []
    for report in [first, second]:
        ambiguous classify(report: str) -> label: str:
            """Label the report: bug if it mentions a crash, else question."""
        labels = labels + [label]
    return labels
'''
# About 20,000 tokens: " fine" is one token in every tiktoken encoding.
HUGE_ACCEPT = json.dumps({"concerns": [], "summary": "fine" + " fine" * 20_000})


def scripted_files(folder: Path, author_reply: str = GOOD, reviewer_replies: list[str] | None = None) -> list[str]:
    """Write author.json and reviewer.json; return the --model/--review-model arguments for them."""
    (folder / "author.json").write_text(json.dumps([
        {"match": {"contains": "A reviewer raised"}, "reply": author_reply + "\nc1: resolved: lower-cased"},
        {"reply": author_reply},
    ]))
    (folder / "reviewer.json").write_text(json.dumps([{"replies": reviewer_replies or [NO_CONCERNS]}]))
    return ["--model", f"scripted:{folder / 'author.json'}", "--review-model", f"scripted:{folder / 'reviewer.json'}"]


def pipe(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in this process; (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> tuple[int, dict, str]:
    code, out, err = pipe(capsys, "run", *argv, "--json")
    return code, json.loads(out), err


def tree_nodes(capsys, workspace: Path, run: str | None = None) -> dict[str, TreeNode]:
    code, out, err = pipe(capsys, "tree", *([run] if run else []), "--json", "--workspace", str(workspace))
    assert code == 0, err
    return {n["id"]: TreeNode(**n) for n in json.loads(out)}


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def modules_saved(workspace: Path) -> list[Path]:
    return sorted((workspace / ".orgtree" / "modules").rglob("*.pipe"))


# ---- nodes for pipeline and skill calls ------------------------------------------------------------------

def test_nested_pipeline_calls_are_nodes_with_parents_status_inputs_and_outputs(tmp_path, capsys):
    write(tmp_path, "nested.pipe", NESTED)
    code, envelope, err = run_json(capsys, str(tmp_path / "nested.pipe"))
    assert code == 0, err
    assert envelope["output"] == "ADA-ada"
    run = envelope["run_id"]
    nodes = tree_nodes(capsys, tmp_path)
    pipelines = {i.removeprefix(run + "/"): n for i, n in nodes.items() if n.kind == "pipeline"}
    # main calls middle (1st call) and fails (2nd); middle calls leaf; fails calls deeper.
    assert set(pipelines) == {"main", "main/middle#1", "main/middle#1/leaf#1", "main/fails#2",
                              "main/fails#2/deeper#1"}
    for path, node in pipelines.items():
        parent = path.rpartition("/")[0]
        assert node.parent_id == (f"{run}/{parent}" if parent else None)
        assert node.run_id == run
        assert node.name == path.rsplit("/", 1)[-1].split("#")[0]
        assert node.duration_ms is not None and node.duration_ms >= 0
    assert pipelines["main"].status == "ok" and "ada" in pipelines["main"].inputs
    assert pipelines["main/middle#1"].status == "ok"
    assert pipelines["main/middle#1"].inputs.startswith("name=") and "ada" in pipelines["main/middle#1"].inputs
    assert "ADA-ada" in pipelines["main/middle#1"].output
    assert pipelines["main/middle#1/leaf#1"].caller == "middle"
    assert "ADA" in pipelines["main/middle#1/leaf#1"].output
    # The division by zero unwinds deeper and fails up to main's try: both are errors, main is not.
    for path in ("main/fails#2", "main/fails#2/deeper#1"):
        assert pipelines[path].status == "error"
        assert "zero" in pipelines[path].error
        assert pipelines[path].inputs == "n=0"
    skills = [n for n in nodes.values() if n.kind == "skill"]
    assert Counter((n.name, n.parent_id.removeprefix(run + "/")) for n in skills) == {
        ("text.upper", "main/middle#1/leaf#1"): 1, ("text.lower", "main/middle#1"): 3, ("fs.read", "main"): 1}
    (read,) = [n for n in skills if n.name == "fs.read"]
    assert read.status == "error" and "missing.txt" in read.error
    assert all(n.status == "ok" for n in skills if n.name != "fs.read")


def test_an_uncaught_error_marks_every_unwound_call_as_error(tmp_path, capsys):
    write(tmp_path, "boom.pipe", UNCAUGHT)
    code, envelope, _ = run_json(capsys, str(tmp_path / "boom.pipe"))
    assert code == 70 and envelope["status"] == "error"
    nodes = tree_nodes(capsys, tmp_path)
    run = envelope["run_id"]
    assert set(nodes) == {f"{run}/main", f"{run}/main/outer#1", f"{run}/main/outer#1/inner#1"}
    assert nodes[f"{run}/main/outer#1/inner#1"].inputs == "x=2"
    for node in nodes.values():
        assert (node.status, node.error) == ("error", "boom 2")
        assert node.duration_ms is not None


def test_pipe_tree_folds_consecutive_calls_of_one_skill_and_every_call_shows_each(tmp_path, capsys):
    write(tmp_path, "fold.pipe", FOLDING)
    assert pipe(capsys, "run", str(tmp_path / "fold.pipe"))[0] == 0
    code, out, _ = pipe(capsys, "tree", "--workspace", str(tmp_path))
    assert code == 0
    header, root, *calls = out.splitlines()
    assert header.startswith("run ") and "1 pipeline node" in header and "8 skill nodes" in header
    assert root.startswith("main  pipeline  ok")
    assert [re.sub(r"  skill.*", "", line[3:]) for line in calls] == ["text.lower ×5", "text.upper", "text.lower ×2"]
    assert [line[:3] for line in calls] == ["├─ ", "├─ ", "└─ "]
    code, out, _ = pipe(capsys, "tree", "--every-call", "--workspace", str(tmp_path))
    calls = out.splitlines()[2:]
    assert [line[3:].split("  ")[0] for line in calls] == ["text.lower"] * 5 + ["text.upper"] + ["text.lower"] * 2
    assert all("  skill  ok  " in line for line in calls)
    # Each call shows what it was given and what it gave back: "Ab" lower-cased, then "ab" again ...
    assert 'in: "Ab"  out: "ab"' in calls[0] and 'in: "ab"  out: "AB"' in calls[5]


def test_pipe_tree_depth_cuts_the_tree_and_says_how_much_is_hidden(tmp_path, capsys):
    write(tmp_path, "nested.pipe", NESTED)
    assert pipe(capsys, "run", str(tmp_path / "nested.pipe"))[0] == 0
    code, out, _ = pipe(capsys, "tree", "--depth", "1", "--every-call", "--workspace", str(tmp_path))
    assert code == 0
    lines = out.splitlines()[1:]
    # main, then its three children; middle's four children (leaf and 3 skill calls) and fails's one are hidden.
    assert [line.lstrip("│├└─ ").split("  ")[0] for line in lines] == [
        "main", "middle#1", "… 4 more", "fails#2", "… 1 more", "fs.read"]
    assert "leaf" not in out and "deeper" not in out


def test_pipe_tree_picks_a_run_by_prefix_and_defaults_to_the_latest(tmp_path, capsys):
    write(tmp_path, "nested.pipe", NESTED)
    write(tmp_path, "fold.pipe", FOLDING)
    first = run_json(capsys, str(tmp_path / "nested.pipe"))[1]["run_id"]
    second = run_json(capsys, str(tmp_path / "fold.pipe"), "--workspace", str(tmp_path))[1]["run_id"]
    code, out, _ = pipe(capsys, "tree", "--workspace", str(tmp_path))
    assert code == 0 and out.startswith(f"run {second}:") and "text.lower ×5" in out
    prefix = next(first[:n] for n in range(1, 13) if not second.startswith(first[:n]))
    code, out, _ = pipe(capsys, "tree", prefix, "--workspace", str(tmp_path))
    assert code == 0 and out.startswith(f"run {first}:") and "middle#1" in out
    # A prefix both runs share (possibly the empty one) is ambiguous: both are named.
    common = next(first[:n] for n in range(12, -1, -1) if second.startswith(first[:n]))
    code, out, err = pipe(capsys, "tree", common, "--workspace", str(tmp_path))
    assert code == 2 and out == ""
    assert "2 runs matching" in err and first in err and second in err


def test_pipe_tree_of_an_unknown_run_or_with_no_runs_is_a_clear_usage_error(tmp_path, capsys):
    code, out, err = pipe(capsys, "tree", "--workspace", str(tmp_path))
    assert code == 2 and out == ""
    assert "no runs recorded" in err and str(tmp_path) in err
    write(tmp_path, "fold.pipe", FOLDING)
    run = run_json(capsys, str(tmp_path / "fold.pipe"))[1]["run_id"]
    code, out, err = pipe(capsys, "tree", "zzzz", "--workspace", str(tmp_path))
    assert code == 2 and out == ""
    assert "no run matching `zzzz`" in err and run in err  # the recent runs are offered


def test_the_tree_table_with_no_runs_yet_is_no_runs(tmp_path, capsys):
    TreeStore(state_db_path(tmp_path)).close()  # state.db exists (e.g. the ledger's), with no tree nodes
    code, _, err = pipe(capsys, "tree", "--workspace", str(tmp_path))
    assert code == 2 and "no runs recorded" in err


def test_call_history_lists_calls_of_one_name_newest_first_and_by_run(tmp_path, capsys):
    write(tmp_path, "nested.pipe", NESTED)
    runs = [run_json(capsys, str(tmp_path / "nested.pipe"), "-i", f"who={who}")[1]["run_id"] for who in ("ann", "bo")]
    with TreeStore.for_workspace(tmp_path) as store:
        leaves = store.calls("leaf")
        assert [(n.run_id, n.inputs) for n in leaves] == [(runs[1], 's="bo"'), (runs[0], 's="ann"')]
        (only,) = store.calls("leaf", run_id=runs[0])
        assert "ANN" in only.output
        assert len(store.calls("text.lower")) == 6 and len(store.calls("text.lower", limit=2)) == 2
        assert {n.name for n in store.calls(run_id=runs[1])} == {"main", "middle", "leaf", "fails", "deeper",
                                                                 "text.upper", "text.lower", "fs.read"}
        assert store.run_ids() == [runs[1], runs[0]]
        assert store.node(f"{runs[0]}/main/fails#2").status == "error"
        assert store.node(f"{runs[0]}/nosuch") is None


# ---- the skill-call cap ---------------------------------------------------------------------------------

CAPPED = '''use text
use fs

pipeline shout(s: str) -> str:
    for i in range(3):
        s = text.upper(s)
    return s

pipeline main() -> str:
    s = "x"
    for i in range(5):
        s = text.lower(s)
    s = shout(s)
    try:
        fs.read("nope.txt")
    except:
        pass
    return s
'''


def test_skill_calls_past_the_cap_are_counted_per_caller_and_skill(tmp_path):
    store = TreeStore(tmp_path / "state.db")
    recorder = TreeRecorder(store, max_skill_nodes=3)
    program = compile_source(CAPPED, "capped.pipe", REGISTRY).program
    machine = plain_machine(program, registry=REGISTRY, context=SkillContext(Workspace(tmp_path)), recorder=recorder)
    machine.start(None, {}, run_id="r1")
    assert machine.run().result == "X"
    recorder.finish()
    with TreeStore(tmp_path / "state.db") as reader:
        nodes = {n.id: n for n in reader.run_nodes("r1")}
    skills = [n for n in nodes.values() if n.kind == "skill"]
    # 9 calls: the first 3 (text.lower) one by one; then 2 more text.lower, 3 text.upper and 1 failed fs.read.
    single = [n for n in skills if not n.id.endswith("#more")]
    assert [(n.name, n.parent_id) for n in single] == [("text.lower", "r1/main")] * 3
    assert {n.id: (n.detail, n.status) for n in skills if n.id.endswith("#more")} == {
        "r1/main/text.lower#more": ("2 ok, 0 error", "ok"),
        "r1/main/shout#1/text.upper#more": ("3 ok, 0 error", "ok"),
        "r1/main/fs.read#more": ("0 ok, 1 error", "error"),
    }
    assert nodes["r1/main/shout#1/text.upper#more"].parent_id == "r1/main/shout#1"
    assert nodes["r1/main/text.lower#more"].output.startswith("2 more calls")


def test_a_folded_line_counts_the_calls_an_overflow_node_stands_for(tmp_path):
    store = TreeStore(tmp_path / "state.db")
    recorder = TreeRecorder(store, max_skill_nodes=3)
    program = compile_source(CAPPED, "capped.pipe", REGISTRY).program
    machine = plain_machine(program, registry=REGISTRY, context=SkillContext(Workspace(tmp_path)), recorder=recorder)
    machine.start(None, {}, run_id="r1")
    machine.run()
    recorder.finish()
    with TreeStore(tmp_path / "state.db") as reader:
        lines = render_tree(reader.run_nodes("r1"))
    # main made 5 text.lower calls in a row: 3 recorded one by one, 2 counted in the overflow node.
    assert lines[1].startswith("├─ text.lower ×5  skill  ok  "), lines


# ---- ambiguous blocks: nodes, children, reuse, progress --------------------------------------------------

def test_a_block_reached_twice_gets_two_children_and_the_second_run_reuses_the_module(tmp_path, capsys):
    write(tmp_path, "triage.pipe", TRIAGE)
    models = scripted_files(tmp_path)
    code, envelope, err = run_json(capsys, str(tmp_path / "triage.pipe"), *models)
    assert code == 0, err
    assert envelope["output"] == ["bug", "question"]
    assert envelope["scripted_models"] is True
    # Live progress: one line as each block opens and one as it ends, in order.
    progress = [line for line in err.splitlines() if line.startswith(("▸", "✓", "✗"))]
    assert [line[0] for line in progress] == ["▸", "✓", "▸", "✓"]
    assert all("classify" in line for line in progress)
    assert "tokens" in progress[1] and "tokens" not in progress[3]  # the second one reuses the module

    run = envelope["run_id"]
    nodes = tree_nodes(capsys, tmp_path)
    blocks = sorted((n for n in nodes.values() if n.kind == "ambiguous"), key=lambda n: n.seq)
    assert len(blocks) == 2 and blocks[0].id != blocks[1].id
    for block, report, label in zip(blocks, ("it crashed", "how do I log in?"), ("bug", "question")):
        assert block.parent_id == f"{run}/main" and block.name == "classify" and block.status == "ok"
        assert report in block.inputs and label in block.output
        # The child run's id is the block's node id; its entry pipeline hangs under the block.
        (child,) = [n for n in nodes.values() if n.parent_id == block.id]
        assert (child.kind, child.name, child.run_id, child.status) == ("pipeline", "main", block.id, "ok")
        assert report in child.inputs and label in child.output
        assert {n.name for n in nodes.values() if n.parent_id == child.id} >= {"text.lower", "text.contains"}
    assert blocks[0].tokens > 0 and "reused" not in blocks[0].detail
    assert blocks[1].tokens == 0 and "reused" in blocks[1].detail
    assert envelope["usage"]["tokens"] == sum(n.tokens for n in nodes.values()) == blocks[0].tokens
    assert len(modules_saved(tmp_path)) == 1

    code, out, _ = pipe(capsys, "tree", "--workspace", str(tmp_path))
    assert code == 0 and "2 ambiguous nodes" in out.splitlines()[0]
    assert f"{blocks[0].tokens:,} tokens" in out.splitlines()[1]  # main's line sums its subtree

    # The second run reuses the saved module for both: no tokens anywhere.
    code, again, err = run_json(capsys, str(tmp_path / "triage.pipe"), *models, "-i", "first=a crash!")
    assert code == 0, err
    assert again["output"] == ["bug", "question"] and again["usage"]["tokens"] == 0
    nodes = tree_nodes(capsys, tmp_path, again["run_id"])
    blocks = [n for n in nodes.values() if n.kind == "ambiguous"]
    assert len(blocks) == 2 and all("reused" in b.detail and b.tokens == 0 for b in blocks)
    code, out, _ = pipe(capsys, "tree", again["run_id"], "--workspace", str(tmp_path))
    assert out.count("[reused") == 2 and " tokens" not in out


NESTING = '''use text

pipeline main(s: str = "Hello") -> str:
    ambiguous outer(s: str) -> out: str:
        """Shout s twice."""
    return out
'''
OUTER_MODULE = '''```pipe
use text

pipeline main(s: str) -> str:
    ambiguous inner(s: str) -> loud: str:
        """Upper-case s."""
    return loud + loud
```'''
INNER_MODULE = "```pipe\nuse text\n\npipeline main(s: str) -> str:\n    return text.upper(s)\n```"


def test_a_generated_child_with_its_own_block_nests_a_grandchild_under_it(tmp_path, capsys):
    write(tmp_path, "nesting.pipe", NESTING)
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "step `inner`"}, "reply": INNER_MODULE},
                                                      {"reply": OUTER_MODULE}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    models = ["--model", f"scripted:{tmp_path / 'author.json'}",
              "--review-model", f"scripted:{tmp_path / 'reviewer.json'}"]
    code, envelope, err = run_json(capsys, str(tmp_path / "nesting.pipe"), *models)
    assert code == 0, err
    assert envelope["output"] == "HELLOHELLO"
    nodes = tree_nodes(capsys, tmp_path)
    (outer,) = [n for n in nodes.values() if n.name == "outer"]
    (inner,) = [n for n in nodes.values() if n.name == "inner"]
    # run -> main -> outer block -> its child's main -> inner block -> the grandchild's main -> text.upper
    child = nodes[inner.parent_id]
    assert (child.kind, child.name, child.parent_id, child.run_id) == ("pipeline", "main", outer.id, outer.id)
    (grandchild,) = [n for n in nodes.values() if n.parent_id == inner.id]
    assert grandchild.run_id == inner.id and grandchild.id.startswith(outer.id + "/")
    (upper,) = [n for n in nodes.values() if n.kind == "skill"]
    assert upper.parent_id == grandchild.id and "HELLO" in upper.output
    assert all(n.status == "ok" for n in nodes.values())
    # Each block is charged its own writing; the run's tokens are both.
    assert outer.tokens > 0 and inner.tokens > 0
    assert envelope["usage"]["tokens"] == outer.tokens + inner.tokens
    progress = [line for line in err.splitlines() if line.lstrip().startswith(("▸", "✓"))]
    assert [line.split(" main/")[0] for line in progress] == ["▸", "  ▸", "  ✓", "✓"]  # the inner one indented
    code, out, _ = pipe(capsys, "tree", "--workspace", str(tmp_path))
    assert f"{outer.tokens + inner.tokens:,} tokens" in out.splitlines()[2]  # outer's line: its whole subtree


def test_the_json_envelope_of_a_run_without_models_has_zero_tokens_and_no_scripted_models(tmp_path, capsys):
    write(tmp_path, "fold.pipe", FOLDING)
    code, envelope, _ = run_json(capsys, str(tmp_path / "fold.pipe"))
    assert code == 0 and envelope["output"] == "ab"
    # s = ..., the for loop (1 + 5 bodies), three assignments and the return: 11 statements; 8 skill calls.
    assert envelope["usage"]["steps"] == 11 and envelope["usage"]["skill_calls"] == 8
    assert (envelope["usage"]["tokens"], envelope["usage"]["cost"], envelope["scripted_models"]) == (0, 0, False)


class Metered:
    """A scripted model that records what each call used, and charges `cost` USD per call."""

    def __init__(self, path: Path, role: str, cost: float = 0.0) -> None:
        self.model = ScriptedModel.from_file(path, role=role)
        self.name = self.model.name
        self.cost = cost
        self.used: list[int] = []

    def complete(self, *args, **kwargs) -> Completion:
        done = self.model.complete(*args, **kwargs)
        self.used.append(done.usage.prompt_tokens + done.usage.completion_tokens)
        usage = Usage(done.usage.prompt_tokens, done.usage.completion_tokens, self.cost, done.usage.latency_s)
        return Completion(done.text, usage, done.model, done.conversation_id, done.scripted, done.parsed)


def run_in_process(folder: Path, source: str, inputs: dict, budget: Budget, cost: float = 0.0,
                   reviewer_replies: list[str] | None = None):
    """Run `source` with scripted models and a recorder on folder's state.db; (machine, author, reviewer, error)."""
    scripted_files(folder, reviewer_replies=reviewer_replies)
    author = Metered(folder / "author.json", "author", cost)
    reviewer = Metered(folder / "reviewer.json", "reviewer", cost)
    program = compile_source(source, "parent.pipe", REGISTRY).program
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=REGISTRY, workspace=folder,
                            parent_file="parent.pipe", parent_source=source)
    recorder = TreeRecorder(TreeStore.for_workspace(folder))
    machine = plain_machine(program, registry=REGISTRY, context=SkillContext(Workspace(folder)), resolver=decomposer,
                      budget=budget, recorder=recorder)
    machine.start(None, inputs, run_id="r1")
    error = None
    try:
        machine.run()
    except PipeRuntimeError as err:
        error = err
    recorder.finish()
    return machine, author, reviewer, error


def test_every_model_call_is_metered_and_charged_to_its_block(tmp_path):
    machine, author, reviewer, error = run_in_process(tmp_path, TRIAGE, {}, Budget(), cost=0.25,
                                                      reviewer_replies=[ONE_CONCERN, NO_CONCERNS])
    assert error is None and machine.state.result == ["bug", "question"]
    # Written once (a draft, then a revision after the concern), reviewed twice, its first run's outputs reviewed
    # (review_outputs = "first", the default), reused the second time.
    assert (len(author.used), len(reviewer.used)) == (2, 3)
    spent = sum(author.used) + sum(reviewer.used)
    assert machine.meter.tokens == machine.state.usage["tokens"] == spent
    assert machine.meter.cost == pytest.approx(5 * 0.25)
    with TreeStore.for_workspace(tmp_path) as store:
        blocks = [n for n in store.run_nodes("r1") if n.kind == "ambiguous"]
    assert [(b.tokens, b.cost) for b in blocks] == [(spent, pytest.approx(1.25)), (0, 0.0)]


def test_max_cost_stops_before_more_is_spent_and_saves_nothing(tmp_path):
    # 0.25 USD a call: the author's draft (0.25) fits under 0.4, the reviewer's call takes it to 0.50.
    machine, author, reviewer, error = run_in_process(tmp_path, TRIAGE, {}, Budget(max_cost=0.4), cost=0.25)
    assert error is not None and error.kind == "budget" and not error.catchable
    assert "cost budget exceeded" in error.message and "reviewing block `classify`" in error.message
    assert "--max-cost" in error.hint
    assert (len(author.used), len(reviewer.used)) == (1, 1)
    assert modules_saved(tmp_path) == []
    with TreeStore.for_workspace(tmp_path) as store:
        statuses = {n.name: n.status for n in store.run_nodes("r1") if n.kind != "skill"}
    assert statuses == {"main": "error", "classify": "error"}


def test_max_tokens_stops_mid_writing_with_a_budget_error_and_no_module(tmp_path, capsys):
    write(tmp_path, "triage.pipe", TRIAGE)
    models = scripted_files(tmp_path)
    # The author's request alone (the block's spec and language notes) is far above 50 tokens.
    code, envelope, err = run_json(capsys, str(tmp_path / "triage.pipe"), *models, "--max-tokens", "50")
    assert code == 70
    assert envelope["error"]["kind"] == "budget"
    message = envelope["error"]["message"]
    assert "tokens budget exceeded" in message and "limit 50" in message and "writing block `classify`" in message
    assert "--max-tokens" in err
    assert envelope["usage"]["tokens"] > 50
    assert modules_saved(tmp_path) == []
    assert "✗" in err  # the progress line says the block failed


def test_max_tokens_stops_mid_review_keeps_the_ledger_and_resume_finishes_with_a_larger_limit(tmp_path, capsys):
    write(tmp_path, "triage.pipe", TRIAGE)
    # Round 1 raises c1, the author revises (about 16,000 tokens so far, with the agents' pad and insight reads in
    # their prompts; 18,000 leaves room for longer temporary paths), round 2's answer alone is about 20,000 tokens.
    models = scripted_files(tmp_path, reviewer_replies=[ONE_CONCERN, HUGE_ACCEPT])
    code, envelope, err = run_json(capsys, str(tmp_path / "triage.pipe"), *models, "--max-tokens", "18000")
    assert code == 70, err
    message = envelope["error"]["message"]
    assert "tokens budget exceeded" in message and "limit 18000" in message
    assert "reviewing block `classify`" in message
    stopped_at = envelope["usage"]["tokens"]
    assert stopped_at > 20_000
    assert modules_saved(tmp_path) == []
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        (subject,) = ledger.subjects("")
        assert [(r["concern_id"], r["status"]) for r in ledger.history(subject)] == [("c1", "resolved")]
    run = envelope["run_id"]
    nodes = tree_nodes(capsys, tmp_path, run)
    (block,) = [n for n in nodes.values() if n.kind == "ambiguous"]
    assert block.status == "error" and block.tokens == stopped_at and "tokens budget" in block.error
    assert nodes[f"{run}/main"].status == "error"
    entry_inputs = nodes[f"{run}/main"].inputs
    assert "it crashed" in entry_inputs

    # A resume with a limit still below what the block needs stops the same way ...
    code, out, err = pipe(capsys, "resume", run, "--workspace", str(tmp_path), "--max-tokens", "18000", *models)
    assert code == 70 and "tokens budget exceeded" in err and modules_saved(tmp_path) == []
    # ... and with room enough it writes the module and finishes.
    code, out, err = pipe(capsys, "resume", run, "--workspace", str(tmp_path), "--max-tokens", "100000", *models,
                          "--json")
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["status"] == "ok" and resumed["output"] == ["bug", "question"]
    assert len(modules_saved(tmp_path)) == 1
    nodes = tree_nodes(capsys, tmp_path, run)
    blocks = sorted((n for n in nodes.values() if n.kind == "ambiguous"), key=lambda n: n.started_at)
    assert [b.status for b in blocks] == ["ok", "ok"] and "reused" in blocks[1].detail
    assert all(n.status == "ok" for n in nodes.values() if n.kind == "pipeline")
    assert nodes[f"{run}/main"].inputs == entry_inputs  # the resumed entry keeps what it was called with
    assert stopped_at <= resumed["usage"]["tokens"] <= 100_000
    assert resumed["usage"]["tokens"] == sum(n.tokens for n in nodes.values())


def test_tokens_spent_before_a_budget_stop_count_once_after_resume(tmp_path, capsys):
    write(tmp_path, "triage.pipe", TRIAGE)
    # Output review off: with it, the module's first run asks the reviewer once more after the stop, and this test is
    # about the answers asked before it.
    write(tmp_path, "orgtree.toml", '[decompose]\nreview_outputs = "off"\n')
    models = scripted_files(tmp_path, reviewer_replies=[ONE_CONCERN, HUGE_ACCEPT])
    code, stopped, _ = run_json(capsys, str(tmp_path / "triage.pipe"), *models, "--max-tokens", "18000")
    assert code == 70
    spent = stopped["usage"]["tokens"]
    # The answers of the stopped attempt are journaled: resume takes them from the journal and counts their
    # tokens again (they were spent), so a limit below what was spent stops again...
    code, out, _ = pipe(capsys, "resume", stopped["run_id"], "--workspace", str(tmp_path), "--max-tokens",
                        str(spent - 1), *models, "--json")
    assert code == 70, out
    # ... and a limit above it finishes without asking for those answers again: nothing is counted twice.
    code, out, _ = pipe(capsys, "resume", stopped["run_id"], "--workspace", str(tmp_path), "--max-tokens",
                        str(spent + 5000), *models, "--json")
    assert code == 0, out
    finished = json.loads(out)
    assert finished["usage"]["tokens"] == spent  # every answer it needed was asked for before the stop


# ---- steps of generated children count against the parent's budget --------------------------------------

SUMMING = '''pipeline main(n: int) -> int:
    ambiguous sum_to(n: int) -> total: int:
        """Add the whole numbers from 1 to n."""
    extra = 0
    for i in range(8):
        extra += i
    return total + extra
'''
SUMMING_ALONE = SUMMING.replace('''    ambiguous sum_to(n: int) -> total: int:
        """Add the whole numbers from 1 to n."""''', "    total = n")
SUM_MODULE = '''```pipe
pipeline main(n: int) -> int:
    total = 0
    i = 1
    while i <= n:
        total += i
        i += 1
    return total
```'''


def test_steps_of_a_generated_child_count_against_the_parents_step_limit(tmp_path, capsys):
    write(tmp_path, "summing.pipe", SUMMING)
    write(tmp_path, "alone.pipe", SUMMING_ALONE)
    models = scripted_files(tmp_path, author_reply=SUM_MODULE)
    code, full, err = run_json(capsys, str(tmp_path / "summing.pipe"), "-i", "n=12", *models)
    assert code == 0, err
    assert full["output"] == sum(range(13)) + sum(range(8))
    (module,) = modules_saved(tmp_path)
    # The same program with the block replaced by one statement, and the child on its own.
    code, alone, _ = run_json(capsys, str(tmp_path / "alone.pipe"), "-i", "n=12")
    code, child, _ = run_json(capsys, str(module), "-i", "n=12", "--workspace", str(tmp_path / "child"))
    parent_steps, child_steps = alone["usage"]["steps"], child["usage"]["steps"]
    assert full["usage"]["steps"] == parent_steps + child_steps

    # A limit each of them fits under alone, but not the two together: the tree stops.
    limit = max(parent_steps, child_steps) + 2
    assert parent_steps + child_steps > limit
    assert run_json(capsys, str(tmp_path / "alone.pipe"), "-i", "n=12", "--max-steps", str(limit))[0] == 0
    code, stopped, err = run_json(capsys, str(tmp_path / "summing.pipe"), "-i", "n=12", *models,
                                  "--max-steps", str(limit))
    assert code == 70, err
    assert stopped["error"]["kind"] == "budget" and f"steps budget exceeded: limit {limit} steps" in err
    assert stopped["usage"]["steps"] == limit


def test_a_child_that_alone_runs_past_the_step_limit_stops_inside_the_child(tmp_path, capsys):
    write(tmp_path, "summing.pipe", SUMMING)
    models = scripted_files(tmp_path, author_reply=SUM_MODULE)
    # n=100 makes the child loop ~300 statements; the parent alone runs ~20.
    code, stopped, err = run_json(capsys, str(tmp_path / "summing.pipe"), "-i", "n=100", *models,
                                  "--max-steps", "100")
    assert code == 70
    assert "steps budget exceeded: limit 100 steps" in stopped["error"]["message"]
    nodes = tree_nodes(capsys, tmp_path)
    (block,) = [n for n in nodes.values() if n.kind == "ambiguous"]
    (child,) = [n for n in nodes.values() if n.parent_id == block.id]
    assert block.status == child.status == "error"


# ---- render_tree never loses a node ---------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "fetch", "rank", "text.lower", "fs.read"])


@st.composite
def node_lists(draw) -> list[TreeNode]:
    """Nodes of one run as the recorder writes them: ids are paths, skill calls are leaves."""
    nodes: list[TreeNode] = []
    pending = [("r", None, 0)]  # (id, parent id, depth)
    seq = 0
    while pending and len(nodes) < 40:
        node_id, parent, depth = pending.pop(0)
        if parent is None:
            kind, name = "pipeline", "main"
        else:
            kind = draw(st.sampled_from(["pipeline", "skill", "skill", "ambiguous"]))
            name = draw(_NAMES)
        seq += 1
        node_id = f"{parent}/{name}#{seq}" if parent else f"{node_id}/main"
        status = draw(st.sampled_from(["ok", "error", "running"]))
        nodes.append(TreeNode(node_id, "r", parent, seq, name, kind, "", status, draw(st.sampled_from(["", "x=1"])),
                              "", "bad" if status == "error" else None, float(seq),
                              draw(st.none() | st.floats(0, 5000)), draw(st.integers(0, 99)), 0.0,
                              draw(st.sampled_from(["", "reused"]))))
        if kind != "skill" and depth < 4:
            pending += [(None, node_id, depth + 1)] * draw(st.integers(0, 5))
    return nodes


def _rendered(lines: list[str]) -> tuple[Counter, Counter]:
    """(label, kind) of the non-skill lines, and skill name -> calls from the skill lines (folded or not)."""
    others, skills = Counter(), Counter()
    for line in lines:
        label, kind = line.lstrip("│├└─ ").split("  ")[:2]
        if kind == "skill":
            name, _, times = label.partition(" ×")
            skills[name] += int(times or 1)
        else:
            others[(label, kind)] += 1
    return others, skills


@given(node_lists(), st.booleans())
def test_render_tree_never_loses_a_node(nodes, every_call):
    others, skills = _rendered(render_tree(nodes, every_skill_call=every_call))
    assert others == Counter((n.id.rsplit("/", 1)[-1] if n.parent_id else n.name, n.kind)
                             for n in nodes if n.kind != "skill")
    assert skills == Counter(n.name for n in nodes if n.kind == "skill")


def test_no_tree_runs_record_no_nodes(tmp_path, capsys):
    program = write(tmp_path, "p.pipe", "use text\n\npipeline main() -> str:\n    return text.upper(\"a\")\n")
    code, recorded, _ = run_json(capsys, str(program))
    code2, unrecorded, _ = run_json(capsys, str(program), "--no-tree")
    assert (code, code2) == (0, 0) and recorded["output"] == unrecorded["output"] == "A"
    with TreeStore.for_workspace(tmp_path) as store:
        assert store.run_ids() == [recorded["run_id"]]
        assert store.run_nodes(unrecorded["run_id"]) == []


def test_pipeline_calls_past_the_limit_are_counted_under_the_entry_with_no_orphans(tmp_path):
    source = '''use text

pipeline fib(n: int) -> int:
    if n < 2:
        if n < 0:
            fail "negative"
        return len(text.upper("a")) * n
    return fib(n - 1) + fib(n - 2)

pipeline main() -> int:
    try:
        fib(-1)
    except err:
        pass
    return fib(10)
'''
    registry = default_registry(plugins=False)
    program = compile_source(source, "fib.pipe", registry).program
    store = TreeStore(tmp_path / "state.db")
    recorder = TreeRecorder(store, max_pipeline_nodes=20)
    machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(tmp_path)), recorder=recorder)
    machine.start("main", {}, run_id="r")
    assert machine.run().result == 55
    recorder.finish()
    nodes = TreeStore(tmp_path / "state.db").run_nodes("r")
    ids = {n.id for n in nodes}
    assert all(n.parent_id is None or n.parent_id in ids for n in nodes)
    # fib(10) makes 177 calls, fib(-1) one more, plus main: 179 pipeline calls; 20 are nodes, the rest counted.
    recorded = [n for n in nodes if n.kind == "pipeline" and not n.id.endswith("#more")]
    (overflow,) = [n for n in nodes if n.id == "r/main/(pipeline calls)#more"]
    ok, errors = (int(part.split()[0]) for part in overflow.detail.split(", "))
    assert len(recorded) == 20 and ok + errors == 179 - 20
    failed = [n for n in recorded if n.status == "error"]
    assert len(failed) + errors == 1  # fib(-1) failed, recorded or counted
