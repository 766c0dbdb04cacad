"""A journal whose WAL was lost, with the workspace's state.db lost too, refuses to resume instead of repeating effects."""

from __future__ import annotations

from pathlib import Path

from durable_testing import exec_log, only_run_id, pipe

PROGRAM = """use fs

pipeline main(n: int) -> int:
    i = 0
    while i < n:
        fs.append("log.txt", f"line {i}\\n")
        i = i + 1
    return i
"""


def _lose(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_lost_wal_and_state_db_refuse_resume(tmp_path):
    (tmp_path / "prog.pipe").write_text(PROGRAM, encoding="utf-8")
    log = tmp_path / "exec.log"
    killed = pipe("run", "prog.pipe", "-i", "n=20", cwd=tmp_path, exec_log_path=log, kill_after="fs.append:12")
    assert killed.returncode == -9, killed.stderr
    run_id = only_run_id(tmp_path)
    run_dir = tmp_path / ".orgtree" / "runs" / run_id
    assert Path(f"{run_dir / 'journal.db'}-wal").is_file()  # the committed steps live in the WAL
    written = (tmp_path / "log.txt").read_text()
    assert written == "".join(f"line {i}\n" for i in range(12))
    # The double fault: the journal's WAL and the workspace's ledger are both gone.
    for name in ("journal.db-wal", "journal.db-shm"):
        (run_dir / name).unlink(missing_ok=True)
    _lose(tmp_path / ".orgtree" / "state.db")

    resumed = pipe("resume", run_id, cwd=tmp_path, exec_log_path=log)
    assert resumed.returncode == 2, resumed.stderr
    assert "lost committed steps 1 to 11" in resumed.stderr
    assert (tmp_path / "log.txt").read_text() == written  # nothing appended twice
    assert len(exec_log(log)) == 12

    # Starting over is the way on, and says so: it runs everything again under new keys.
    again = pipe("resume", run_id, "--from-scratch", cwd=tmp_path, exec_log_path=log)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "20"
