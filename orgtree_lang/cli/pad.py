"""`pipe pad show` and `pipe insights list`: a workspace's scratchpad notes and insight pool, as text or JSON."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from orgtree_lang.cli.options import EXIT_OK, add_sub_verbs, add_verb, add_workspace_option
from orgtree_lang.runtime.errors import UsageError


def register(commands) -> None:
    pad = add_verb(commands, "pad", help="read the shared scratchpad",
                   description="Every agent's notes, in the order they took the scratchpad's lock.",
                   examples=["pipe pad show --last 20"])
    actions = add_sub_verbs(pad)
    show = add_verb(actions, "show", handler=command_pad_show, help="print the notes, oldest first",
                    description="Print the scratchpad's notes, oldest first, one per line.",
                    examples=["pipe pad show", "pipe pad show --agent planner --last 5 --json"])
    show.add_argument("--agent", metavar="NAME", help="only this agent's notes")
    show.add_argument("--last", type=int, metavar="N", help="only the newest N notes")
    show.add_argument("--json", action="store_true", help="print one JSON object per note")
    add_workspace_option(show)

    insights = add_verb(commands, "insights", help="read the shared insight pool",
                        description="Insights enter and leave the pool only by proposals an "
                                    "independent reviewer accepted.",
                        examples=["pipe insights list", "pipe insights list --proposals"])
    actions = add_sub_verbs(insights)
    listing = add_verb(actions, "list", handler=command_insights_list,
                       help="print the insights (active ones unless told otherwise)",
                       description="Print the insights in the pool with their evidence and tags.",
                       examples=["pipe insights list", "pipe insights list --status all --json"])
    listing.add_argument("--status", choices=("active", "proposed", "rejected", "removed", "all"), default="active",
                         help="which insights to list (default: active, the ones agents read)")
    listing.add_argument("--proposals", action="store_true",
                         help="list the proposals instead: every add and remove, with the reviewer's decision")
    listing.add_argument("--json", action="store_true", help="print one JSON object per line")
    add_workspace_option(listing)


def _state_db(workspace: str) -> Path | None:
    """The workspace's state.db, or None (with a message) when the workspace has none yet."""
    from orgtree_lang.runtime.state_db import state_db_path

    path = state_db_path(Path(workspace))
    if not Path(workspace).is_dir():
        raise UsageError(f"no such workspace folder: {workspace}")
    if not path.is_file():
        print(f"nothing recorded yet: {path} does not exist", file=sys.stderr)
        return None
    return path


def command_pad_show(args) -> int:
    from orgtree_lang.memory.scratchpad import Scratchpad

    if args.last is not None and args.last < 1:
        raise UsageError(f"--last expects a number above 0, got {args.last}")
    path = _state_db(args.workspace)
    if path is None:
        return EXIT_OK
    with Scratchpad(path) as pad:
        notes = pad.notes(agent=args.agent, limit=args.last)
    for note in notes:
        if args.json:
            print(json.dumps(note.to_dict(), ensure_ascii=False))
        else:
            print(f"{_when(note.at)}  turn {note.turn}  {note.render()}")
    if not notes and not args.json:
        print("no notes" + (f" by {args.agent}" if args.agent else ""), file=sys.stderr)
    return EXIT_OK


def command_insights_list(args) -> int:
    from orgtree_lang.memory.insights import InsightPool

    path = _state_db(args.workspace)
    if path is None:
        return EXIT_OK
    with InsightPool(path) as pool:
        if args.proposals:
            rows = [p.to_dict() for p in pool.proposals()]
            lines = [f"proposal #{p['id']} {p['action']} insight #{p['insight_id']} by {p['author']}: {p['status']}"
                     + (f" ({p['reviewer_model']})" if p["reviewer_model"] else "")
                     + (f"\n  reason: {p['reason']}" if p["reason"] else "")
                     + (f"\n  decision: {p['decision']}" if p["decision"] else "") for p in rows]
        else:
            found = pool.insights(None if args.status == "all" else args.status)
            rows = [i.to_dict() for i in found]
            lines = [f"{i.render()}\n  by {i.author}, {i.status}" for i in found]
    if args.json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
    elif lines:
        print("\n".join(lines))
    else:
        print("no proposals" if args.proposals else f"no {args.status} insights", file=sys.stderr)
    return EXIT_OK


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
