"""Messages from outside a run (`pipe send`): files queued in the run's folder, taken by the run one at a time.

`pipe send` writes each message as a file of `.orgtree/runs/RUN/inbound/` (written whole, then renamed, so a
run never reads half a message); names sort in the order they were sent. The run takes one when nothing in
it can happen any more (org/outside.py) and journals it as a step of its own before it deletes the file, so a
crash in between cannot deliver it twice: the ids already in the journal are skipped."""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from orgtree_lang.durable.journal import Journal
from orgtree_lang.org.outside import OUTSIDE_STEP
from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.inputs import check_nesting, json_nesting_depth, nesting_problem

INBOUND = "inbound"
POLL_SECONDS = 0.05  # how often a run waiting for an outside message looks for one


def queue_message(run_dir: Path, body: Any, *, to: str | None = None, topic: str | None = None) -> dict[str, Any]:
    """Queue a message for the run in `run_dir`; it is delivered when the run is idle (docs/org.md). A body that
    nests lists or dicts deeper than the input limit is refused (UsageError), as an entry input is."""
    check_nesting("the message", body, hint="send a flatter value (a list of records), or several messages")
    folder = run_dir / INBOUND
    folder.mkdir(exist_ok=True)
    message = {"id": f"{time.time_ns():020d}-{secrets.token_hex(3)}", "to": to, "topic": topic, "body": body,
               "sent": time.time()}
    partial = folder / f".{message['id']}.part"
    partial.write_text(json.dumps(message, ensure_ascii=False), encoding="utf-8")
    os.replace(partial, folder / f"{message['id']}.json")
    return message


def pending_messages(run_dir: Path) -> list[dict[str, Any]]:
    """The messages queued for the run and not taken yet, oldest first."""
    folder = run_dir / INBOUND
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue  # taken meanwhile
        # `pipe send` refuses deep bodies, but an older version queued them: the run would fail taking one, at
        # every resume. Such a message is taken without its body and logged as undelivered, with the reason.
        problem = nesting_problem("its body", json_nesting_depth(text) - 1)
        if problem is not None:
            found.append({"id": path.stem, "to": None, "topic": None, "body": None,
                          "refused": f"{problem}; an older `pipe send` queued it"})
            continue
        try:
            found.append(json.loads(text))
        except ValueError:
            continue  # half-written by hand: not a message
    return found


class Inbound:
    """A running attempt's door to its queued messages (the Services.inbound of org/outside.py)."""

    def __init__(self, run_dir: Path, journal: Journal) -> None:
        self.folder = run_dir / INBOUND
        self.taken: set[str] = set()
        for record in journal.steps().values():
            if record.name == OUTSIDE_STEP and record.ok and record.result not in (None, "null"):
                self.taken.add(json.loads(record.result).get("id", ""))

    def wait(self, seconds: float) -> dict[str, Any] | None:
        """The oldest queued message not taken yet, waiting up to `seconds` for one; None if none came."""
        deadline = time.monotonic() + max(0.0, seconds)
        while True:
            for message in self._queued():
                if message["id"] not in self.taken:
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(POLL_SECONDS, left))

    def done(self, message_id: str) -> None:
        """The message is journaled: its file goes."""
        self.taken.add(message_id)
        try:
            (self.folder / f"{message_id}.json").unlink()
        except FileNotFoundError:
            pass

    def _queued(self) -> list[dict[str, Any]]:
        if not self.folder.is_dir():
            return []
        return pending_messages(self.folder.parent)


def check_can_receive(meta: dict[str, Any]) -> None:
    """Refuse a message for a run that will never run again."""
    if meta.get("status") == "done":
        raise UsageError(f"run {meta['run_id']} has finished: no node of it can receive a message any more",
                         hint="`pipe runs` lists the runs; send to one that is running, waiting or stopped")
