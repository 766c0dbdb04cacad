"""`pipe skills history | report | bugs | review | promote | export`: the skill pool's call history, bug reports
and their reviews, promotion of generated modules to `learned.*`, and sharing them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from orgtree_lang.cli.main import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE

ACTIONS = ("history", "report", "bugs", "review", "promote", "export")

EPILOG = """\
actions (`pipe skills ACTION --help` for each):
  history NAME        every recorded call of a skill or module, newest first
  report NAME ...     file a bug report about a skill (reviewed at once when a model is configured)
  bugs [NAME]         bug reports and the reviewers' decisions
  review [BUG]        have a reviewer (never the reporter) decide open reports: fix, modify or remove
  promote MODULE      test a generated module with an independent reviewer; accepted -> learned.<name>
  export DIR          write the promoted modules to DIR for sharing"""


def action_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipe skills", description="Work on the skill pool of a workspace.",
                                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--workspace", metavar="DIR", default=".", help="the workspace (default: this folder)")
        return sub

    history = add("history", "show every recorded call of a skill or module, newest first")
    history.add_argument("name", metavar="NAME", help="a skill (text.split) or module name")
    history.add_argument("--limit", type=int, default=50, metavar="N", help="show at most N calls (default 50)")
    history.add_argument("--json", action="store_true", help="print JSON")

    report = add("report", "file a bug report about a skill")
    report.add_argument("name", metavar="NAME", help="the skill the report is about")
    report.add_argument("--use-case", required=True, metavar="TEXT", help="what you were trying to do")
    report.add_argument("--expected", required=True, metavar="TEXT", help="the outcome you expected")
    report.add_argument("--observed", required=True, metavar="TEXT", help="the outcome you got")
    report.add_argument("--notes", default="", metavar="TEXT", help="anything else that helps the reviewer")
    report.add_argument("--reporter", default="cli", metavar="WHO", help="who files it (default: cli)")
    report.add_argument("--conversation", metavar="ID", help="the reporter's conversation id (default: a new one); "
                                                             "the reviewer must never run in it")
    report.add_argument("--no-review", action="store_true", help="only file it; review later with `review`")
    _model_options(report)

    bugs = add("bugs", "list bug reports and the decisions about them")
    bugs.add_argument("name", nargs="?", metavar="NAME", help="only reports about this skill")
    bugs.add_argument("--open", action="store_true", help="only reports still open")
    bugs.add_argument("--json", action="store_true", help="print JSON")

    review = add("review", "have a reviewer decide open bug reports (fix, modify or remove)")
    review.add_argument("bug", nargs="?", type=int, metavar="BUG", help="one report's number (default: every open one)")
    _model_options(review)

    promote = add("promote", "test a generated module with an independent reviewer and add it to the pool")
    promote.add_argument("module", metavar="MODULE", help="a saved module: block name, PARENT/BLOCK or path "
                                                          "(`pipe modules list` shows them)")
    promote.add_argument("--name", metavar="NAME", help="its skill name under learned. (default: the block name)")
    _model_options(promote)

    export = add("export", "write the promoted modules to a folder for sharing")
    export.add_argument("dir", metavar="DIR", help="the folder to write them to (created if needed)")
    return parser


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="SPEC", help="the reviewer's model when --review-model is not given "
                                                        "(default: PIPE_MODEL, or [model] name in orgtree.toml)")
    parser.add_argument("--review-model", metavar="SPEC", help="the reviewer's model (default: PIPE_REVIEW_MODEL, "
                                                               "[model] review, or the --model one)")


def run_action(argv: list[str]) -> int:
    args = action_parser().parse_args(argv)
    from orgtree_lang.models.base import ModelError
    from orgtree_lang.pool.store import PoolError
    from orgtree_lang.review.errors import ReviewError
    from orgtree_lang.runtime.errors import SkillError

    handler = {"history": history, "report": report, "bugs": bugs, "review": review, "promote": promote,
               "export": export}[args.action]
    try:
        return handler(args)
    except (PoolError, ModelError, ReviewError, SkillError) as err:
        print(f"pipe skills {args.action}: {err.message}", file=sys.stderr)
        if getattr(err, "hint", None):
            print(f"  = hint: {err.hint}", file=sys.stderr)
        return EXIT_RUNTIME if isinstance(err, (ModelError, ReviewError)) else EXIT_USAGE


def _reviewer(args):
    from orgtree_lang.models.roles import RunModels

    models = RunModels.from_config(args.model, args.review_model)
    if not models.review_spec:
        return None
    return models.reviewer()


def history(args) -> int:
    from orgtree_lang.pool.history import workspace_history

    try:
        calls = workspace_history(Path(args.workspace))(args.name, args.limit)
    except RuntimeError as err:
        print(f"pipe skills history: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps([call.__dict__ for call in calls], indent=1))
        return EXIT_OK
    if not calls:
        print(f"no recorded calls of {args.name} in {Path(args.workspace).resolve()}", file=sys.stderr)
        return EXIT_OK
    for call in calls:
        print(call.line())
    failed = sum(call.failed for call in calls)
    print(f"\n{len(calls)} call(s) shown, {failed} failed", file=sys.stderr)
    return EXIT_OK


def report(args) -> int:
    import uuid

    from orgtree_lang.engine.registries import workspace_registry
    from orgtree_lang.pool.store import PoolError, PoolStore

    registry = workspace_registry(Path(args.workspace))
    if registry.get(args.name) is None:
        suggestion = registry.suggest(args.name)
        raise PoolError(f"no skill `{args.name}` in this workspace's pool",
                        hint=f"did you mean `{suggestion}`?" if suggestion else "`pipe skills` lists them")
    store = PoolStore.for_workspace(Path(args.workspace))
    try:
        bug_id = store.file_bug(args.name, args.use_case, args.expected, args.observed, args.notes,
                                reporter=args.reporter, reporter_conversation=args.conversation or f"cli:{uuid.uuid4()}")
    finally:
        store.close()
    print(f"filed bug report #{bug_id} about {args.name}")
    if args.no_review:
        return EXIT_OK
    return _review_open(args, [bug_id], registry)


def review(args) -> int:
    from orgtree_lang.engine.registries import workspace_registry
    from orgtree_lang.pool.store import PoolStore

    store = PoolStore.for_workspace(Path(args.workspace))
    try:
        ids = [args.bug] if args.bug is not None else [bug.id for bug in store.bugs(status="open")]
    finally:
        store.close()
    if not ids:
        print("no open bug reports", file=sys.stderr)
        return EXIT_OK
    return _review_open(args, ids, workspace_registry(Path(args.workspace)))


def _review_open(args, ids: list[int], registry) -> int:
    from orgtree_lang.pool.bugs import review_bug
    from orgtree_lang.pool.history import workspace_history
    from orgtree_lang.runtime.config import config_section

    reviewer = _reviewer(args)
    if reviewer is None:
        print("no reviewer model is configured, so the report stays open; review it with "
              "`pipe skills review --model SPEC`", file=sys.stderr)
        return EXIT_OK
    limits = config_section("skills", Path(args.workspace) / "orgtree.toml", types={"removal_evidence": int})
    for number, bug_id in enumerate(ids, 1):
        print(f"reviewing bug report #{bug_id} ({number} of {len(ids)}) with {reviewer.name}", file=sys.stderr)
        row = review_bug(Path(args.workspace), bug_id, reviewer=reviewer, registry=registry,
                         history=workspace_history(Path(args.workspace)),
                         min_failures=limits.get("removal_evidence", 1))
        print(_decision_line(row))
    return EXIT_OK


def _decision_line(row: dict) -> str:
    evidence = f" evidence {', '.join('#' + e for e in row['evidence'])};" if row["evidence"] else ""
    detail = f" ({row['detail']})" if row["detail"] else ""
    return f"bug #{row['bug']} {row['skill']}: {row['decision']} {row['outcome']};{evidence} {row['reasoning']}{detail}"


def bugs(args) -> int:
    from orgtree_lang.pool.store import PoolStore, state_db

    if not state_db(Path(args.workspace)).is_file():
        print("no bug reports", file=sys.stderr)
        return EXIT_OK
    store = PoolStore.for_workspace(Path(args.workspace))
    try:
        reports = store.bugs(args.name, "open" if args.open else None)
        decisions = {bug.id: store.decisions(bug.id) for bug in reports}
    finally:
        store.close()
    if args.json:
        print(json.dumps([{**bug.__dict__, "decisions": decisions[bug.id]} for bug in reports], indent=1))
        return EXIT_OK
    if not reports:
        print("no bug reports", file=sys.stderr)
        return EXIT_OK
    for bug in reports:
        print(f"#{bug.id} {bug.skill} [{bug.status}] by {bug.reporter}: when {bug.use_case}; expected "
              f"{bug.expected}; observed {bug.observed}")
        for row in decisions[bug.id]:
            print(f"    {row['decision']} {row['outcome']} by {row['reviewer_model'] or '?'}: {row['reasoning']}"
                  + (f" ({row['detail']})" if row["detail"] else ""))
    return EXIT_OK


def promote(args) -> int:
    from orgtree_lang.cli.modules import _matches
    from orgtree_lang.decompose.store import ModuleStore
    from orgtree_lang.pool.promote import promote as promote_module
    from orgtree_lang.engine.registries import workspace_registry

    root = Path(args.workspace)
    store = ModuleStore(root)
    saved = [m for m in store.all() if _matches(m, args.module, store.root)]
    if len(saved) != 1:
        names = ", ".join(str(m.path.relative_to(store.root)) for m in (saved or store.all())) or "none"
        what = "names several modules" if saved else "is not a saved module"
        print(f"pipe skills promote: `{args.module}` {what} (candidates: {names})", file=sys.stderr)
        return EXIT_USAGE
    reviewer = _reviewer(args)
    if reviewer is None:
        print("pipe skills promote: promotion needs a reviewer model: pass --review-model SPEC or --model SPEC "
              "(or set PIPE_MODEL)", file=sys.stderr)
        return EXIT_USAGE
    result = promote_module(root, saved[0], reviewer=reviewer, registry=workspace_registry(root), name=args.name,
                            progress=lambda text: print(text, file=sys.stderr))
    for index, case in enumerate(result["cases"]):
        got = f"error: {case['error']}" if "error" in case else json.dumps(case["output"], ensure_ascii=False)
        print(f"case {index}: {'ok ' if case['ok'] else 'BAD'} {json.dumps(case['inputs'], ensure_ascii=False)} "
              f"-> {got}" + (f" ({case['reason']})" if case["reason"] else ""))
    if result["accepted"]:
        print(f"promoted to learned.{result['name']} ({result['path']}): {result['reasons']}")
        return EXIT_OK
    print(f"rejected: {result['reasons']}")
    return EXIT_RUNTIME


def export(args) -> int:
    from orgtree_lang.pool.learned import LearnedStore

    written = LearnedStore(Path(args.workspace)).export(Path(args.dir))
    for path in written:
        print(path)
    print(f"exported {len(written)} learned skill(s) to {args.dir}", file=sys.stderr)
    return EXIT_OK


def promote_after_run(root: Path, models, registry) -> None:
    """With `[skills] promote_after = N` in the workspace's orgtree.toml, put every saved module used successfully
    N times up for promotion (once; a rejection is recorded and not retried automatically)."""
    from orgtree_lang.runtime.config import ConfigError, config_section

    try:
        threshold = config_section("skills", root / "orgtree.toml", types={"promote_after": int}).get("promote_after")
    except ConfigError as err:
        print(f"pipe run: automatic promotion skipped: {err}", file=sys.stderr)
        return
    if not threshold or threshold < 1 or not models.review_spec:
        return
    from orgtree_lang.models.base import ModelError
    from orgtree_lang.pool.promote import due_for_promotion, promote as promote_module
    from orgtree_lang.pool.store import PoolError
    from orgtree_lang.review.errors import ReviewError

    for saved in due_for_promotion(root, threshold):
        print(f"pipe run: {saved.path.name} was used successfully {threshold}+ times; testing it for the pool",
              file=sys.stderr)
        try:
            result = promote_module(root, saved, reviewer=models.reviewer(), registry=registry,
                                    progress=lambda text: print(f"  {text}", file=sys.stderr))
        except (PoolError, ModelError, ReviewError) as err:
            print(f"pipe run: promotion of {saved.path.name} failed: {err.message}", file=sys.stderr)
            continue
        verdict = f"promoted to learned.{result['name']}" if result["accepted"] else "rejected"
        print(f"pipe run: {saved.path.name} {verdict}: {result['reasons']}", file=sys.stderr)
