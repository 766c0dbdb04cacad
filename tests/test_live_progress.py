"""A running run's figures (steps, printed lines) can be read while its attempt runs, not only once it ends: the
views (`pipe show`, `pipe runs`, `pipe serve`) read the newest of its checkpoint and the progress it writes."""

from __future__ import annotations

from pathlib import Path

from orgtree_lang.durable import checkpoints
from orgtree_lang.durable.journal import Journal
from orgtree_lang.durable.runs import effective_status, list_runs, view_meta
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_file

# Nothing between the two prints is journaled (no skill call): no checkpoint is due, only the progress figures.
PURE_LOOP = '''\
pipeline main() -> int:
    print("first")
    n = 0
    for i in range(3000):
        n = n + i
    print(f"second after {n}")
    return n
'''


def _seen_while_running(tmp_path: Path, program: str) -> list[dict]:
    """Run `program` durably; at each printed line, read the run as a view would from its own journal connection."""
    path = tmp_path / "loop.pipe"
    path.write_text(program)
    seen: list[dict] = []

    def look(line: str) -> None:
        run_dir = tmp_path / ".orgtree" / "runs" / "live"
        journal = Journal.open(run_dir)
        try:
            meta = view_meta(run_dir, journal)
        finally:
            journal.close()
        seen.append({"line": line, "status": effective_status(run_dir, meta), "steps": meta.get("steps", 0),
                     "output": list(meta.get("output", []))})

    run_file(path, RunOptions(durable=True, registry=default_registry(plugins=False), workspace=tmp_path,
                              run_id="live", use_cache=False, printer=look))
    return seen


def test_the_lines_printed_so_far_and_the_steps_show_while_the_run_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "PROGRESS_SECONDS", 0.0)  # every look at statements writes the figures
    first, second = _seen_while_running(tmp_path, PURE_LOOP)
    assert first["status"] == second["status"] == "running"
    assert second["line"].startswith("second after")
    assert second["output"] == ["first"]  # the line before this one, read back from the journal mid-attempt
    assert second["steps"] > 2000  # most of the loop's steps, counted before the attempt ended


def test_the_figures_of_a_run_in_progress_are_written_at_most_every_progress_seconds(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "PROGRESS_SECONDS", 3600.0)
    first, second = _seen_while_running(tmp_path, PURE_LOOP)
    assert second["status"] == "running"
    assert second["output"] == [] and second["steps"] < 10  # nothing written yet within the hour


def test_a_finished_run_shows_its_final_figures_not_its_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "PROGRESS_SECONDS", 0.0)
    _seen_while_running(tmp_path, PURE_LOOP)
    (summary,) = list_runs(tmp_path)
    assert summary.status == "done"
    assert summary.meta["output"] == ["first", "second after 4498500"]
    assert summary.steps == summary.meta["steps"] > 3000
