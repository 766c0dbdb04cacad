"""fs.append with an idempotency key: each key's text lands in the file exactly once, across crashes and repeats."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, SkillRegistry
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.stdlib import fs_ledger


@pytest.fixture
def ctx(root: Path) -> SkillContext:
    return SkillContext(workspace=Workspace(root), run_id="r1")


@pytest.fixture
def append(registry: SkillRegistry, ctx: SkillContext):
    def call(path: str, text: str, key: str | None = None) -> int:
        return registry.get("fs.append").invoke([path, text], {}, replace(ctx, idempotency_key=key))

    return call


@contextmanager
def _ledger(root: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(root / ".orgtree" / "state.db")
    try:
        yield conn
    finally:
        conn.close()


def _rows(root: Path) -> list[tuple]:
    with _ledger(root) as conn:
        return conn.execute("SELECT key, path, offset, size, done, data FROM fs_appends ORDER BY key").fetchall()


def _interrupted(root: Path, key: str, path: str, text: str, written: int) -> None:
    """What a process killed mid-append leaves: a committed pending row, and `written` of its bytes in the file."""
    real = root / path
    offset = real.stat().st_size if real.exists() else 0
    data = text.encode()
    conn = fs_ledger.open_ledger(SkillContext(workspace=Workspace(root)), create=True)
    conn.execute(
        "INSERT INTO fs_appends (key, path, offset, size, digest, data, done) VALUES (?, ?, ?, ?, ?, ?, 0)",
        (key, path, offset, len(data), fs_ledger.hashlib.sha256(data).hexdigest(), data),
    )
    conn.close()
    with open(real, "ab") as handle:
        handle.write(data[:written])


def test_skill_context_carries_an_optional_idempotency_key(ctx: SkillContext) -> None:
    assert ctx.idempotency_key is None
    keyed = replace(ctx, idempotency_key="r1:7")
    assert keyed.idempotency_key == "r1:7" and keyed.workspace == ctx.workspace
    with pytest.raises(AttributeError):
        keyed.idempotency_key = "r1:8"  # type: ignore[misc]


def test_fs_write_is_declared_idempotent_and_fs_append_is_not(registry: SkillRegistry) -> None:
    assert registry.get("fs.write").idempotent
    assert not registry.get("fs.append").idempotent


def test_the_same_key_appends_once_and_returns_the_same_byte_count(append, root: Path) -> None:
    assert append("log.txt", "héllo\n", key="r1:1") == 7
    assert append("log.txt", "héllo\n", key="r1:1") == 7
    assert append("log.txt", "héllo\n", key="r1:1") == 7
    assert (root / "log.txt").read_text() == "héllo\n"


def test_different_keys_each_append(append, root: Path) -> None:
    append("log.txt", "a\n", key="r1:1")
    append("log.txt", "a\n", key="r1:2")
    append("log.txt", "b\n", key="r1:3")
    assert (root / "log.txt").read_text() == "a\na\nb\n"


def test_the_ledger_is_sqlite_in_wal_mode_and_forgets_the_bytes_once_done(append, root: Path) -> None:
    append("notes/log.txt", "one\n", key="r1:1")
    assert _rows(root) == [("r1:1", "notes/log.txt", 0, 4, 1, None)]
    with _ledger(root) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn = fs_ledger.open_ledger(SkillContext(workspace=Workspace(root)), create=False)
    try:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == fs_ledger.BUSY_TIMEOUT_MS
    finally:
        conn.close()


def test_without_a_key_every_call_appends_and_no_ledger_is_created(append, root: Path) -> None:
    append("log.txt", "x\n")
    append("log.txt", "x\n")
    assert (root / "log.txt").read_text() == "x\nx\n"
    assert not (root / ".orgtree").exists()


@pytest.mark.parametrize("written", [0, 3, 11], ids=["nothing-written", "partly-written", "fully-written"])
def test_repeating_an_interrupted_append_completes_it_exactly_once(append, root: Path, written: int) -> None:
    (root / "log.txt").write_text("before\n")
    _interrupted(root, "r1:5", "log.txt", "interrupted", written)
    assert append("log.txt", "interrupted", key="r1:5") == 11
    assert (root / "log.txt").read_text() == "before\ninterrupted"
    assert append("log.txt", "interrupted", key="r1:5") == 11
    assert (root / "log.txt").read_text() == "before\ninterrupted"
    assert _rows(root) == [("r1:5", "log.txt", 7, 11, 1, None)]


def test_another_append_to_the_file_first_finishes_the_interrupted_one(append, root: Path) -> None:
    _interrupted(root, "r1:5", "log.txt", "first\n", 2)
    append("log.txt", "unkeyed\n")
    append("log.txt", "keyed\n", key="r2:1")
    assert (root / "log.txt").read_text() == "first\nunkeyed\nkeyed\n"
    assert append("log.txt", "first\n", key="r1:5") == 6  # the repeat finds it done
    assert (root / "log.txt").read_text() == "first\nunkeyed\nkeyed\n"


def test_an_interrupted_append_to_a_file_replaced_since_lands_at_its_new_end(append, root: Path) -> None:
    (root / "log.txt").write_text("a long first version\n")
    _interrupted(root, "r1:5", "log.txt", "tail\n", 3)
    (root / "log.txt").write_text("new\n")
    assert append("log.txt", "tail\n", key="r1:5") == 5
    assert (root / "log.txt").read_text() == "new\ntail\n"


def test_a_crash_between_writing_and_marking_done_is_not_repeated(
    append, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Killed(BaseException):
        pass

    real_write_all = fs_ledger._write_all

    def write_then_die(fd: int, data: bytes) -> None:
        real_write_all(fd, data)
        raise Killed

    monkeypatch.setattr(fs_ledger, "_write_all", write_then_die)
    with pytest.raises(Killed):
        append("log.txt", "once\n", key="r1:9")
    monkeypatch.setattr(fs_ledger, "_write_all", real_write_all)
    assert (root / "log.txt").read_text() == "once\n"
    assert [row[4] for row in _rows(root)] == [0]  # left pending, bytes already in the file
    assert append("log.txt", "once\n", key="r1:9") == 5
    assert (root / "log.txt").read_text() == "once\n"


def test_a_key_reused_for_another_append_is_refused_and_changes_nothing(append, root: Path) -> None:
    append("log.txt", "one\n", key="r1:1")
    with pytest.raises(SkillError) as info:
        append("log.txt", "two\n", key="r1:1")
    assert info.value.message == (
        "fs.append: idempotency key `r1:1` already names an append of 4 bytes to `log.txt`, "
        "not this one of 4 bytes to `log.txt`"
    )
    assert "different key" in info.value.hint
    with pytest.raises(SkillError, match="to `log.txt`, not this one of 4 bytes to `other.txt`"):
        append("other.txt", "one\n", key="r1:1")
    assert (root / "log.txt").read_text() == "one\n"
    assert not (root / "other.txt").exists()


def test_the_ledger_cannot_be_written_by_programs(append) -> None:
    with pytest.raises(SkillError, match="state folder"):
        append(".orgtree/state.db", "x", key="r1:1")


def test_concurrent_callers_with_the_same_keys_append_each_once(registry: SkillRegistry, root: Path) -> None:
    skill = registry.get("fs.append")
    ctx = SkillContext(Workspace(root))
    keys = [f"k{i}" for i in range(25)]
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        order = keys[:]
        random.Random(seed).shuffle(order)
        try:
            for key in order:
                skill.invoke(["log.txt", f"{key}\n"], {}, replace(ctx, idempotency_key=key))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted((root / "log.txt").read_text().splitlines()) == sorted(keys)


_APPENDER = textwrap.dedent(
    """
    import sys
    from dataclasses import replace
    from orgtree_lang.run.registries import default_registry
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.runtime.workspace import Workspace

    skill = default_registry(plugins=False).get("fs.append")
    ctx = SkillContext(Workspace(sys.argv[1]), run_id="crash")
    print("ready", flush=True)
    for i in range(int(sys.argv[2])):
        line = f"line {i:03d} " + "x" * (i * 37 % 500) + "\\n"
        skill.invoke(["out/log.txt", line], {}, replace(ctx, idempotency_key=f"crash:{i}"))
    print("finished", flush=True)
    """
)


def test_sigkill_at_random_moments_then_rerunning_the_same_keys_leaves_each_line_once(root: Path, tmp_path: Path) -> None:
    lines = 300
    env = {**os.environ, "PIPE_NO_PLUGINS": "1"}
    command = [sys.executable, "-c", _APPENDER, str(root), str(lines)]
    rng = random.Random(1234)
    log = root / "out" / "log.txt"
    errors = tmp_path / "stderr.txt"

    def size() -> int:
        return log.stat().st_size if log.exists() else 0

    kills = kills_mid_append = 0
    # Kill until a few kills have landed inside the ledger's crash window (a pending row left behind).
    while kills < 30 and (kills < 8 or kills_mid_append < 3):
        before = size()
        with open(errors, "w") as stderr:
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True)
        assert child.stdout.readline() == "ready\n", errors.read_text()
        # Kill while it appends new lines, not while it is still skipping the keys done before.
        deadline = time.monotonic() + 10
        while size() == before and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(rng.uniform(0.0, 0.02))
        assert child.poll() in (None, 0), errors.read_text()
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        kills += 1
        with _ledger(root) as conn:
            kills_mid_append += conn.execute("SELECT count(*) FROM fs_appends WHERE done = 0").fetchone()[0]
    assert kills_mid_append >= 1, f"none of {kills} kills landed inside an append; the test proved nothing"
    finished = subprocess.run(command, capture_output=True, env=env, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    expected = [f"line {i:03d} " + "x" * (i * 37 % 500) for i in range(lines)]
    assert log.read_text().splitlines() == expected
    with _ledger(root) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*), sum(done) FROM fs_appends").fetchone() == (lines, lines)
