"""Server-sent events: a page's live part, rendered again and pushed whenever the files behind it change.

The server looks at the files' sizes and modification times every `interval` seconds (a few stat calls) and
renders only when one moved, so a page left open on a finished run costs next to nothing."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

_LINE_END = re.compile(r"\r\n|\r|\n")  # every line ending of the event-stream format, not only \n
HEARTBEAT_SECONDS = 15.0  # a comment line now and then, so a closed tab is noticed and proxies keep the stream


def files_state(paths: list[Path]) -> tuple:
    """The size and modification time of each path (None for one that does not exist): changes when a writer wrote."""
    found = []
    for path in paths:
        try:
            status = os.stat(path)
        except OSError:
            found.append(None)
            continue
        found.append((status.st_size, status.st_mtime_ns))
    return tuple(found)


def run_files(workspace: Path, run_id: str) -> list[Path]:
    """The files a run's page is made from: state.db (with its write-ahead log) and everything in the run's folder."""
    state = Path(workspace) / ".orgtree" / "state.db"
    folder = Path(workspace) / ".orgtree" / "runs" / run_id.split("/", 1)[0]
    inside = sorted(folder.iterdir()) if folder.is_dir() else []
    return [state, state.with_name("state.db-wal"), folder, *inside]


def runs_files(workspace: Path) -> list[Path]:
    """The files the runs list is made from: the runs folder and each run's journal with its write-ahead log."""
    folder = Path(workspace) / ".orgtree" / "runs"
    journals = [run / name for run in (sorted(folder.iterdir()) if folder.is_dir() else [])
                for name in ("journal.db", "journal.db-wal", "lock")]
    return [folder, *journals]


async def updates(is_disconnected: Callable, watched: Callable[[], list[Path]], render: Callable[[], str],
                  interval: float) -> AsyncIterator[str]:
    """Server-sent events carrying `render()`'s HTML each time it differs from the last one sent."""
    from starlette.concurrency import run_in_threadpool

    seen, sent, quiet = None, None, 0.0
    while not await is_disconnected():
        now = await run_in_threadpool(lambda: files_state(watched()))
        if now != seen:
            seen = now
            html = await run_in_threadpool(render)
            if html != sent:
                sent, quiet = html, 0.0
                yield event("update", html)
        if quiet >= HEARTBEAT_SECONDS:
            quiet = 0.0
            yield ": still here\n\n"
        await asyncio.sleep(interval)
        quiet += interval


def event(name: str, text: str) -> str:
    """One server-sent event carrying `text`: one `data:` field per line, split at `\r\n`, `\r` and `\n` alike,
    since a browser ends a field at any of them: a bare `\r` inside a field would start a field (or an event) the
    text chose."""
    return f"event: {name}\n" + "".join(f"data: {line}\n" for line in _LINE_END.split(text)) + "\n"
