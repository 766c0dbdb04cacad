"""The steps of remote nodes (docs/ray.md): appended to the run's folder as workers report them, read back on a rerun.

A remote spawned node is one step of the journal (kind `node`), recorded when the node ends. The effects it
makes meanwhile must survive a lost worker and a killed driver, so each comes back to the driver as a record
the moment it ends, and is appended here (one JSON line, written through to the operating system, and fsynced
under durability "power") before the node goes on: a node run again is handed these records and takes their
results instead of repeating their effects. The file is written from the threads that receive the records.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

NODE_STEPS_FILE = "node_steps.jsonl"


class NodeSteps:
    """The reported steps of a run's remote nodes, by the node's journal step."""

    def __init__(self, run_dir: Path, *, sync: bool = True) -> None:
        self.path = Path(run_dir) / NODE_STEPS_FILE
        self.sync = sync
        self._lock = threading.Lock()

    def append(self, node_seq: int, record: dict) -> None:
        line = json.dumps({"node": node_seq, **record}, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
                if self.sync:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def of(self, node_seq: int) -> list[dict]:
        """The records node `node_seq` reported, in order (a line cut short by a crash is left out)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        records = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.pop("node", None) == node_seq:
                records.append(record)
        return records
