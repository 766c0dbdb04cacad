"""Group commit after a power loss: a durable run killed with SIGKILL, its journal then cut back to what was
fsynced (as a power loss would leave it), resumes with every effect the outside world saw applied once and
matching the journal, and with everything the run printed still in its journal.

What this proves and what it does not: the power loss is simulated for the journal only. The test harness
(tests/durable_testing.py, PIPE_TEST_SYNC_COPY) copies `journal.db-wal` each time the journal fsyncs it; after
the kill, the WAL is replaced by the last copy, so every commit that was not fsynced is gone: the worst case a
power loss can leave, since SQLite ignores any WAL frame past the first one that is torn. The run is kept short
so that SQLite never checkpoints the WAL into `journal.db` (which it fsyncs itself; checked below). Files the
program wrote stay as they were at the kill: they stand for the outside world, which keeps what it saw.
"""

from __future__ import annotations

import json
import re
import shutil

from durable_testing import exec_log, journal_meta, journal_steps, only_run_id, pipe

PROGRAM = """use fs, random, time

pipeline main(n: int, spin: int) -> int:
    total = 0
    for i in range(n):
        r = random.int(1, 1000000)
        t = time.now()
        j = 0
        while j < spin:
            j = j + 1
        if i % 4 == 3:
            print(f"line {i} {r}")
            fs.append("out.txt", f"{i} {r}\\n")
        total = total + r
    return total
"""

N = 24
SETTINGS = "[durable]\ngroup_steps = 1000\ngroup_ms = 60000\n"  # only observed steps and prints sync


def _power_loss(run_dir) -> int:
    """Cut the journal back to its last fsynced state; the number of committed steps that were lost."""
    wal = run_dir / "journal.db-wal"
    synced = run_dir / "journal.db-wal.synced"
    assert synced.is_file(), "the journal never synced"
    assert wal.stat().st_size < 900 * 4120, "the WAL may have been checkpointed: the simulation would be wrong"
    # Counted in a copy: the last connection to close a journal folds its WAL into journal.db.
    probe = run_dir.parent / "probe"
    shutil.copytree(run_dir, probe)
    before = len(journal_steps(probe))
    shutil.rmtree(probe)
    shutil.copyfile(synced, wal)
    (run_dir / "journal.db-shm").unlink(missing_ok=True)
    (run_dir / "journal.mark").unlink(missing_ok=True)  # written, never fsynced: a power loss may take it back
    return before - len(journal_steps(run_dir))


def _check_resumed(ws, run_id: str, log) -> None:
    run_dir = ws / ".orgtree" / "runs" / run_id
    resumed = pipe("resume", run_id, cwd=ws, exec_log_path=log)
    assert resumed.returncode == 0, resumed.stderr
    steps = journal_steps(run_dir)
    randoms = [json.loads(s["result"]) for s in steps if s["name"] == "random.int"]
    assert len(randoms) == N
    expected = [f"{i} {randoms[i]}\n" for i in range(3, N, 4)]
    # Every line the outside world got is there once, with the value the journal holds for it.
    assert (ws / "out.txt").read_text(encoding="utf-8") == "".join(expected)
    meta = journal_meta(run_dir)
    assert meta["status"] == "done" and meta["result"] == sum(randoms)
    assert meta["output"] == [f"line {line}".rstrip() for line in expected]
    appends = [key for name, key in exec_log(log) if name == "fs.append"]
    assert len(set(appends)) == len(expected)  # a repeat (the step in flight at the kill) keeps its key


def _killed_run(tmp_path, kill_after: str):
    (tmp_path / "p.pipe").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "orgtree.toml").write_text(SETTINGS, encoding="utf-8")
    log = tmp_path.parent / f"{tmp_path.name}.log"
    killed = pipe("run", "p.pipe", "-i", f"n={N}", "-i", "spin=300", cwd=tmp_path, exec_log_path=log,
                  kill_after=kill_after, sync_copy=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    return only_run_id(tmp_path), log


def test_unobserved_steps_lost_to_a_power_loss_run_again_with_new_values(tmp_path):
    # Killed in flight on the 11th random draw: the draws and clock reads of iterations 8 and 9 were committed
    # without an fsync (the last one came with the append of iteration 7), so the power loss takes them.
    run_id, log = _killed_run(tmp_path, "random.int:11")
    run_dir = tmp_path / ".orgtree" / "runs" / run_id
    assert _power_loss(run_dir) == 4
    assert [s["name"] for s in journal_steps(run_dir)][-1] == "fs.append"
    _check_resumed(tmp_path, run_id, log)
    draws = [name for name, _ in exec_log(log) if name == "random.int"]
    assert len(draws) == N + 3  # three draws ran again: two lost to the power loss, one in flight at the kill


def test_what_an_observed_step_used_survives_a_power_loss(tmp_path):
    # Killed right after the append of iteration 7 ran, before its row: the draws it printed and appended were
    # fsynced before the append ran, so the resume repeats the append with the same key and the same line.
    run_id, log = _killed_run(tmp_path, "fs.append:2")
    run_dir = tmp_path / ".orgtree" / "runs" / run_id
    assert _power_loss(run_dir) == 0
    _check_resumed(tmp_path, run_id, log)
    appends = [key for name, key in exec_log(log) if name == "fs.append"]
    assert appends[1] == appends[2]  # the append in flight ran again with its key, and its line is once in out.txt
