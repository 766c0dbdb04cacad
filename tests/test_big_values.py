"""Big values stored once: run inputs, results, step results and checkpoints keep blob references, not copies."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from durable_testing import journal_meta, only_run_id, pipe
from orgtree_lang.runtime.blobs import BlobStore, Spiller, is_reference
from orgtree_lang.runtime.values import decode, encode

PROGRAM = '''\
use fs

pipeline main(report: str) -> str:
    page = fs.read("page.txt")
    fs.append("log.txt", "x\\n")
    flag = fs.read("go.txt")
    return report + page + flag
'''


def big_text(size: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["crash", "on", "start", "editor", "window", "ü", "\\n", '"quoted"', "tab\t"]
    return " ".join(rng.choice(words) for _ in range(size // 5))[:size]


def blob_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / ".orgtree" / "blobs").rglob("*") if p.is_file())


def test_spilled_data_resolves_to_exactly_what_went_in(tmp_path):
    spiller = Spiller(BlobStore(tmp_path), threshold=1000)
    data = encode({"text": "y" * 1500, "small": "ok", "rows": [["a" * 10] * 100, 3, 4.5, None, True],
                   "user": {"$blob": "a program's own dict whose key looks like a tag"},
                   "nested": {"deep": ["z" * 65, {"$float": "inf"}]}})
    spilled = spiller.spill(data)
    assert is_reference(spilled["text"]) and spilled["small"] == "ok"
    assert is_reference(spilled["rows"][0]) and spilled["rows"][1:] == [3, 4.5, None, True]  # the big list only
    assert spilled["user"] == {"$dict": {"$blob": "a program's own dict whose key looks like a tag"}}
    text = json.dumps(spilled)
    assert "y" * 121 not in text and text.count("aaaaaaaaaa") < 12 and len(text) < 1200  # previews only
    assert spiller.resolve(json.loads(text)) == data
    assert decode(spiller.resolve(json.loads(text)))["user"] == {"$blob": "a program's own dict whose key looks "
                                                                          "like a tag"}


def test_a_value_spilled_again_is_stored_once(tmp_path):
    spiller = Spiller(BlobStore(tmp_path), threshold=1000)
    value = "v" * 10_000
    first = spiller.spill({"a": value})
    second = Spiller(BlobStore(tmp_path), threshold=1000).spill({"b": value, "c": value})
    assert first["a"] == second["b"] == second["c"]
    assert first["a"]["$blob"]["preview"] == value[:120] and first["a"]["$blob"]["bytes"] == 10_000
    assert [p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()] == [10_000]


def test_values_up_to_the_threshold_stay_inline(tmp_path):
    spiller = Spiller(BlobStore(tmp_path), threshold=100)
    assert spiller.spill("x" * 100) == "x" * 100 and spiller.spill(["y"] * 10) == ["y"] * 10
    assert not list(tmp_path.iterdir())
    assert is_reference(spiller.spill("x" * 101)) and is_reference(spiller.spill(["y"] * 30))


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "prog.pipe").write_text(PROGRAM)
    return root


def run(root: Path, *args: str):
    return pipe(*args, "--workspace", str(root), cwd=root)


def test_a_big_input_and_step_result_are_stored_once_and_come_back_exactly_on_resume(workspace):
    report, page = big_text(300_000, 1), big_text(200_000, 2)
    (workspace / "inputs.json").write_text(json.dumps({"report": report}))
    (workspace / "page.txt").write_text(page)
    first = run(workspace, "run", "prog.pipe", "--inputs", "inputs.json")
    assert first.returncode == 70 and "no file `go.txt`" in first.stderr
    run_id = only_run_id(workspace)
    run_dir = workspace / ".orgtree" / "runs" / run_id

    # The journal holds references with a preview; the blobs hold each value once.
    meta = journal_meta(run_dir)
    assert meta["inputs"]["report"]["$blob"]["preview"] == report[:120]
    assert (run_dir / "journal.db").stat().st_size < 100_000
    contents = sorted(p.read_bytes() for p in blob_files(workspace))
    assert contents == sorted([report.encode(), page.encode()])

    # The page changes on disk: a resume that read it again would return the new text, not the journaled one.
    (workspace / "page.txt").write_text("changed")
    (workspace / "go.txt").write_text("!")
    resumed = run(workspace, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    shown = json.loads(run(workspace, "show", run_id, "--json").stdout)
    assert shown["inputs"]["report"] == report
    assert shown["result"] == report + page + "!"
    assert len(blob_files(workspace)) == 3  # the result is new; the input and the page were not stored again
    checkpoints = sqlite3.connect(run_dir / "journal.db").execute("SELECT state FROM checkpoints").fetchall()
    assert checkpoints and all(len(row[0]) < 5_000 for row in checkpoints)  # the report local is a reference

    replayed = run(workspace, "replay", run_id, "--quiet")
    assert replayed.returncode == 0 and "identical" in replayed.stderr, replayed.stderr
    forked = run(workspace, "fork", run_id, "--at", "2", "--json")  # the page comes from the journal
    assert forked.returncode == 0, forked.stderr
    assert json.loads(forked.stdout)["output"] == report + page + "!"


def test_the_threshold_is_set_in_orgtree_toml(workspace):
    (workspace / "orgtree.toml").write_text("[blobs]\ninline_bytes = 1000000\n")
    report = big_text(300_000, 3)
    (workspace / "inputs.json").write_text(json.dumps({"report": report}))
    (workspace / "page.txt").write_text("p")
    (workspace / "go.txt").write_text("g")
    done = run(workspace, "run", "prog.pipe", "--inputs", "inputs.json")
    assert done.returncode == 0, done.stderr
    assert not blob_files(workspace)
    assert journal_meta(workspace / ".orgtree" / "runs" / only_run_id(workspace))["inputs"]["report"] == report
