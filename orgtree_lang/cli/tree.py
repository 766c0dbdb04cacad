"""`pipe tree [RUN]`: a run's org tree (pipeline calls, skill calls, generated children) with status, time and cost."""

from __future__ import annotations

import json
from pathlib import Path

from orgtree_lang.cli.options import EXIT_OK, add_verb, add_workspace_option
from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.printable import printable


def register(commands) -> None:
    tree = add_verb(
        commands, "tree", handler=command_tree, help="show a run's org tree",
        description="Show the org tree of RUN (default: the latest run): every pipeline call, parallel branch, "
                    "skill call and ambiguous block with the generated child run under it, with its state (running, "
                    "waiting for a person, receiving a message, ok, error, cancelled, interrupted), duration, model "
                    "tokens and cost (a node's figures include everything under it), and the messages each node "
                    "sent (`→ main/worker#1 \"stop\"`).",
        examples=["pipe tree", "pipe tree 3f2a --depth 2 --every-call"])
    tree.add_argument("run", nargs="?", metavar="RUN", help="a run id or a unique prefix of one (default: latest)")
    add_workspace_option(tree)
    tree.add_argument("--every-call", action="store_true",
                      help="one line per skill call (default: consecutive calls of one skill are folded)")
    tree.add_argument("--depth", type=int, metavar="N", help="show N levels below the entry pipeline")
    tree.add_argument("--json", action="store_true", help="print the nodes as a JSON list")


def command_tree(args) -> int:
    from orgtree_lang.durable.reconcile import reconciled_tree
    from orgtree_lang.durable.runs import list_runs
    from orgtree_lang.runlog.render import render_tree, status_counts
    from orgtree_lang.runlog.store import TreeStore
    from orgtree_lang.runtime.state_db import state_db_path

    root = Path(args.workspace)
    path = state_db_path(root)
    if not path.is_file():
        raise UsageError(f"no runs recorded in {root.resolve()} (no {path})")
    with TreeStore(path) as store:
        runs = store.run_ids()
        # A run killed before its first nodes were written has none yet; its journal still names it.
        journaled = [s for s in reversed(list_runs(root)) if s.meta and s.run_id not in runs]
        if not runs and not journaled:
            raise UsageError(f"no runs recorded in {path}")
        if args.run is None:
            newest = journaled[0] if journaled else None
            recorded = store.run_nodes(runs[0])[:1] if runs else []
            run_id = newest.run_id if newest and (not recorded or newest.started > recorded[0].started_at) \
                else runs[0]
        else:
            known = runs + [s.run_id for s in journaled]
            matches = [r for r in known if r.startswith(args.run)]
            if len(matches) != 1:
                what = "no run" if not matches else f"{len(matches)} runs"
                shown = ", ".join((matches or known)[:8])
                raise UsageError(f"{what} matching `{args.run}`; {'they are' if matches else 'recent runs'}: {shown}")
            run_id = matches[0]
        nodes = reconciled_tree(root, run_id, store.run_nodes(run_id))
    if args.json:
        print(json.dumps([n.to_dict() for n in nodes], indent=2))
        return EXIT_OK
    counts = status_counts(nodes)
    summary = ", ".join(f"{sum(c.values())} {kind} node{'s' if sum(c.values()) != 1 else ''}"
                        for kind, c in sorted(counts.items()))
    print(f"run {run_id}: {summary}")
    for line in render_tree(nodes, every_skill_call=args.every_call, max_depth=args.depth,
                            messages=_messages(root, run_id), run_id=run_id):
        print(printable(line, one_line=True))  # names, values and errors in it are the program's
    return EXIT_OK


def _messages(root: Path, run_id: str) -> list[dict]:
    """The messages run `run_id`'s nodes sent, as its journal last saved them (none without a journal)."""
    from orgtree_lang.durable.journal import Journal, JournalError
    from orgtree_lang.durable.runs import find_run, view_meta

    try:
        run_dir = find_run(root, run_id)
        journal = Journal.open(run_dir)
    except JournalError:
        return []
    try:
        return view_meta(run_dir, journal).get("messages", [])
    finally:
        journal.close()
