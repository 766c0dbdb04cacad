"""Replay of the committed journal fixtures (tests/fixtures/journals, made by make_fixtures.py): zero outside calls,
identical output, result, error and trace; the same time, random values and ids on every replay; an edited journal
(a renamed or reordered step) gives the non-determinism error."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from durable_testing import exec_log, journal_snapshot, pipe
from orgtree_lang.durable import replay as durable_replay
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.durable.journal import JOURNAL_FORMAT
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.values import to_plain

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "journals"
NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())


def _expected(name: str) -> dict:
    return json.loads((FIXTURES / name / "expected.json").read_text(encoding="utf-8"))


def _install(name: str, tmp_path: Path, with_program: bool = True) -> tuple[Path, str, dict]:
    """A COPY of the fixture laid out as a workspace: program.pipe at the root, the run under .orgtree/runs/<id>."""
    expected = _expected(name)
    ws = tmp_path / f"ws-{name}"
    ws.mkdir()
    if with_program:
        shutil.copy(FIXTURES / name / "program.pipe", ws / "program.pipe")
    shutil.copytree(FIXTURES / name / "run", ws / ".orgtree" / "runs" / expected["run_id"])
    return ws, expected["run_id"], expected


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(FIXTURES)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class _SpyingSealedRegistry(durable_replay.SealedRegistry):
    instances: list[durable_replay.SealedRegistry] = []

    def __init__(self, registry) -> None:
        super().__init__(registry)
        _SpyingSealedRegistry.instances.append(self)


def test_there_are_fixtures_and_they_are_small_and_portable() -> None:
    assert set(NAMES) >= {"effects", "children", "resumed", "ambiguous"}
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert total < 100_000, total
    for name in NAMES:
        run = FIXTURES / name / "run"
        assert sorted(p.name for p in run.iterdir()) == ["journal.db", "trace.jsonl"], name  # no -wal, -shm, lock
        db = sqlite3.connect(f"file:{run / 'journal.db'}?mode=ro&immutable=1", uri=True)
        try:
            meta = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            db.close()
        assert meta["format"] == JOURNAL_FORMAT, "a new journal format: keep these fixtures replaying (or say why not)"
        assert (meta["program"], meta["workspace"], meta["file"]) == ("program.pipe", ".", "program.pipe")
        assert meta["sources"][meta["source_hash"]] == (FIXTURES / name / "program.pipe").read_text(encoding="utf-8")
        for path in (FIXTURES / name).rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert b"/tmp/" not in data and str(Path.home()).encode() not in data, path


@pytest.mark.parametrize("name", NAMES)
def test_cli_replay_of_a_fixture_makes_no_outside_call_and_is_identical(name: str, tmp_path: Path) -> None:
    before = _fingerprint()
    ws, run_id, expected = _install(name, tmp_path)
    log = tmp_path / "exec.log"
    done = pipe("replay", run_id, "--workspace", str(ws), cwd=tmp_path, exec_log_path=log)
    assert done.returncode == 0, done.stderr
    assert f"replayed run {run_id}: {len(expected['steps'])} journaled step(s) reused, 0 outside call(s)" in done.stderr
    checked = "output, result, error and trace" if expected["attempts"] == 1 else "output, result and error"
    assert f"identical to the original run ({checked}; timestamps ignored)" in done.stderr
    assert done.stdout.splitlines() == expected["printed"]
    assert exec_log(log) == []  # not one real skill execution
    assert not (ws / "notes.txt").exists() and not (ws / "fetched.txt").exists() and not (ws / "totals.txt").exists()
    assert _fingerprint() == before  # the committed fixture itself is untouched


@pytest.mark.parametrize("name", NAMES)
def test_replay_needs_neither_the_program_file_nor_a_model(name: str, tmp_path: Path, monkeypatch) -> None:
    """The API: the sealed registry refuses nothing because nothing is asked of it; no decomposer is given."""
    ws, run_id, expected = _install(name, tmp_path, with_program=False)
    monkeypatch.setattr(durable_replay, "SealedRegistry", _SpyingSealedRegistry)
    _SpyingSealedRegistry.instances.clear()
    printed: list[str] = []
    report = durable_runs.replay(ws, run_id, default_registry(plugins=False), printer=printed.append)
    assert report.identical, report.differences
    assert report.outside_calls == 0 and report.reused == len(expected["steps"])
    assert len(_SpyingSealedRegistry.instances) == 1 and _SpyingSealedRegistry.instances[0].refused == []
    assert printed == report.output == expected["printed"]
    assert report.result == to_plain(expected["result"]) if expected["result"] is not None else report.result is None
    assert report.error == expected["error"]
    assert report.trace_compared == (expected["attempts"] == 1)


def test_time_random_and_ids_are_the_same_on_every_replay(tmp_path: Path) -> None:
    ws, run_id, expected = _install("effects", tmp_path)
    registry = default_registry(plugins=False)
    outputs = []
    for _ in range(3):
        report = durable_runs.replay(ws, run_id, registry)
        assert report.identical and report.outside_calls == 0
        outputs.append((report.output, report.result))
    assert outputs == [(expected["printed"], expected["result"])] * 3
    assert expected["printed"][0].startswith("started 20") and expected["printed"][1].startswith("id ")


def _edit(ws: Path, run_id: str, *statements: str) -> None:
    db = sqlite3.connect(ws / ".orgtree" / "runs" / run_id / "journal.db")
    try:
        with db:
            for statement in statements:
                db.execute(statement)
    finally:
        db.close()


@pytest.mark.parametrize("edit, step, old, new", [
    # a renamed step: the journal says random.int where the program asks for time.now
    (["UPDATE steps SET name = 'random.int' WHERE seq = 1"], 1, "random.int", "time.now"),
    # two steps swapped: seq 1 and 2 change places (time.now <-> random.shuffle)
    (["UPDATE steps SET seq = -1 WHERE seq = 1", "UPDATE steps SET seq = 1 WHERE seq = 2",
      "UPDATE steps SET seq = 2 WHERE seq = -1"], 1, "random.shuffle", "time.now"),
    # a step whose recorded inputs differ (the journal's input hash of the first fs.append)
    (["UPDATE steps SET input_hash = 'x' || substr(input_hash, 2) WHERE seq = 3"], 3, "fs.append", "fs.append"),
])
def test_replay_of_an_edited_journal_is_a_non_determinism_error(edit, step, old, new, tmp_path: Path) -> None:
    ws, run_id, _ = _install("effects", tmp_path)
    _edit(ws, run_id, *edit)
    before = journal_snapshot(ws / ".orgtree" / "runs" / run_id)
    log = tmp_path / "exec.log"
    done = pipe("replay", run_id, "--workspace", str(ws), "--quiet", cwd=tmp_path, exec_log_path=log)
    assert done.returncode == 70, done.stderr
    assert "the replay differs from the original run" in done.stderr
    assert f"the program no longer matches the journal of run {run_id} at step {step}" in done.stderr
    assert f"the journal has: skill {old} at program.pipe:" in done.stderr
    assert f"this code asks:  skill {new} at program.pipe:" in done.stderr
    assert exec_log(log) == []  # it stops; it never falls back to calling the skill
    assert journal_snapshot(ws / ".orgtree" / "runs" / run_id) == before

    report = durable_runs.replay(ws, run_id, default_registry(plugins=False))
    assert not report.identical and report.outside_calls == 0
    assert report.error.startswith(f"the program no longer matches the journal of run {run_id} at step {step}")
