"""Write a run's trace: one JSON object per line for each step, call, print and error."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import IO, Any

from orgtree_lang.runtime.values import display_short
from orgtree_lang.syntax.spans import Span

SUMMARY_CHARS = 200


def summarize(value: Any, limit: int = SUMMARY_CHARS) -> str:
    """A short display form of a value for traces and the org tree (only the part shown is rendered)."""
    try:
        return display_short(value, limit)
    except RecursionError:  # a list nested thousands deep: summaries must never stop the run
        return "<a value nested too deeply to show>"


class Tracer:
    """Appends trace events to a JSONL file; each event carries time, run id, frame and source location."""

    def __init__(self, path: Path, run_id: str, steps: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.steps = steps
        self._handle: IO[str] | None = open(self.path, "a", encoding="utf-8")

    def emit(self, event: str, span: Span | None = None, frame: str | None = None, **fields: Any) -> None:
        if self._handle is None:
            return
        record = {"time": round(time.time(), 6), "run": self.run_id, "node": "root", "event": event}
        if frame is not None:
            record["frame"] = frame
        if span is not None:
            record["at"] = f"{span.file}:{span.line}"
        record.update(fields)
        self._handle.write(json.dumps(record, default=str) + "\n")

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
