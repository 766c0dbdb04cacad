"""Bytes values: stored once as blobs (never inline in journal rows or checkpoints), exact on resume and replay."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from pathlib import Path

import pytest

from durable_testing import only_run_id, pipe
from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.runtime.blobs import BlobStore, Spiller
from orgtree_lang.runtime.values import decode, display, encode, strict_equal

# A file whose bytes are not UTF-8 and are easy to spot in any text they leak into.
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) + b"MARKER-OF-THE-IMAGE-DATA" * 40
PROGRAM = '''\
use fs

pipeline main() -> str:
    logo = fs.read_bytes("logo.png")
    fs.write_bytes("out/one.png", logo)
    fs.write_bytes("out/two.png", logo)
    go = fs.read("go.txt")
    fs.write_bytes("out/three.png", logo)
    return f"{logo.media_type} {logo.size} {go}"
'''


def blob_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / ".orgtree" / "blobs").rglob("*") if p.is_file())


def test_a_bytes_value_encodes_and_decodes_to_an_equal_value():
    value = BytesValue(IMAGE, "image/png")
    back = decode(json.loads(json.dumps(encode({"image": value, "list": [value]}))))
    assert strict_equal(back["image"], value) and back["list"][0].data == IMAGE
    assert back["image"].media_type == "image/png" and back["image"].sha256 == value.sha256
    assert not strict_equal(value, BytesValue(IMAGE, "image/jpeg"))  # the media type is part of the value
    assert display(value) == f"<bytes image/png {len(IMAGE):,} B sha256:{value.sha256[:12]}…>"


def test_the_spiller_keeps_a_reference_and_stores_the_raw_bytes_once(tmp_path):
    spiller = Spiller(BlobStore(tmp_path), threshold=100_000)  # far above the value's size: bytes spill anyway
    value = BytesValue(IMAGE, "image/png")
    data = encode({"a": value, "b": [value, BytesValue(IMAGE, "image/png")]})
    text = spiller.spill_text(json.dumps(data))
    assert "MARKER" not in text and base64.b64encode(IMAGE[:30]).decode()[:20] not in text
    assert json.loads(text)["a"] == {"$bytes": {"media_type": "image/png", "sha256": value.sha256,
                                                "size": len(IMAGE)}}
    assert [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()] == [IMAGE]
    assert decode(json.loads(spiller.resolve_text(text))) == decode(data)


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "prog.pipe").write_text(PROGRAM)
    (root / "logo.png").write_bytes(IMAGE)
    return root


def run(root: Path, *args: str):
    return pipe(*args, "--workspace", str(root), cwd=root)


def test_a_bytes_value_in_many_steps_is_stored_once_and_comes_back_exactly_on_resume(workspace):
    first = run(workspace, "run", "prog.pipe")
    assert first.returncode == 70 and "no file `go.txt`" in first.stderr
    run_id = only_run_id(workspace)
    journal = sqlite3.connect(workspace / ".orgtree" / "runs" / run_id / "journal.db")
    rows = [row[0] or "" for row in journal.execute("SELECT result FROM steps")]
    rows += [row[0] for row in journal.execute("SELECT state FROM checkpoints")]
    rows += [row[0] or "" for row in journal.execute("SELECT inputs FROM steps")]
    assert len(rows) >= 5 and not any("base64" in row for row in rows), rows
    assert [p.read_bytes() for p in blob_files(workspace)] == [IMAGE]

    # The file changes on disk: a resume that read it again would write the new bytes.
    (workspace / "logo.png").write_bytes(b"changed")
    (workspace / "go.txt").write_text("go")
    resumed = run(workspace, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == f"image/png {len(IMAGE)} go"
    assert [(workspace / "out" / f"{n}.png").read_bytes() for n in ("one", "two", "three")] == [IMAGE] * 3
    assert [p.read_bytes() for p in blob_files(workspace)] == [IMAGE]

    replayed = run(workspace, "replay", run_id, "--quiet")
    assert replayed.returncode == 0 and "identical" in replayed.stderr, replayed.stderr


def test_pipe_show_prints_a_bytes_result_by_media_type_size_and_hash(workspace):
    (workspace / "show.pipe").write_text('use fs\n\npipeline main() -> bytes:\n    return fs.read_bytes("logo.png")\n')
    done = run(workspace, "run", "show.pipe", "--json")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["output"]
    assert base64.b64decode(output["base64"]) == IMAGE and output["media_type"] == "image/png"
    shown = run(workspace, "show", json.loads(done.stdout)["run_id"], "--save-artifacts", "saved")
    digest = BytesValue(IMAGE).sha256
    assert f"result: <bytes image/png {len(IMAGE):,} B sha256:{digest[:12]}…>" in shown.stdout
    assert (workspace / "saved" / f"{digest[:12]}.png").read_bytes() == IMAGE
    assert f"saved saved/{digest[:12]}.png" in shown.stderr


def test_pipe_show_prints_a_bytes_input_by_its_description_not_its_data(workspace):
    (workspace / "size.pipe").write_text("pipeline main(picture: bytes) -> int:\n    return picture.size\n")
    done = run(workspace, "run", "size.pipe", "-i", "picture=logo.png", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["output"] == len(IMAGE), done.stderr
    shown = run(workspace, "show", json.loads(done.stdout)["run_id"])
    assert f"inputs: picture=<bytes image/png {len(IMAGE):,} B sha256:" in shown.stdout
    assert "base64" not in shown.stdout and "MARKER" not in shown.stdout


def test_read_bytes_refuses_a_file_over_the_limit_and_says_which_setting_raises_it(workspace):
    (workspace / "orgtree.toml").write_text("[fs]\nmax_bytes = 100\n")
    (workspace / "big.pipe").write_text('use fs\n\npipeline main() -> int:\n    return fs.read_bytes("logo.png").size\n')
    refused = run(workspace, "run", "big.pipe")
    assert refused.returncode == 70
    assert "larger than the 100 bytes" in refused.stderr and "[fs] max_bytes" in refused.stderr


def test_read_bytes_refuses_a_named_pipe_without_waiting_for_a_writer(workspace):
    os.mkfifo(workspace / "pipe.png")
    (workspace / "fifo.pipe").write_text('use fs\n\npipeline main() -> int:\n    return fs.read_bytes("pipe.png").size\n')
    refused = run(workspace, "run", "fifo.pipe")
    assert refused.returncode == 70 and "is not a regular file" in refused.stderr, refused.stderr


def test_a_bytes_result_over_the_memory_budget_stops_the_run_and_names_the_skill(workspace):
    (workspace / "size.pipe").write_text('use fs\n\npipeline main() -> int:\n    return fs.read_bytes("logo.png").size\n')
    stopped = run(workspace, "run", "size.pipe", "--max-memory", "1000")
    assert stopped.returncode == 70
    assert "memory budget exceeded: limit 1,000 bytes" in stopped.stderr and "fs.read_bytes" in stopped.stderr
