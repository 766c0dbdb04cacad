"""`pipe skills [NAME]` and `pipe skills history | report | bugs | review | promote | export`: the skills a
workspace sees, the skill pool's call history, bug reports and their reviews, promotion of generated modules to
`learned.*`, and sharing them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from orgtree_lang.cli.options import (EXIT_OK, EXIT_RUNTIME, add_reviewer_options, add_sub_verbs, add_verb,
                                      add_workspace_option, registry_near)
from orgtree_lang.runtime.errors import PipeError, UsageError


def register(commands) -> None:
    skills = add_verb(commands, "skills", handler=command_skills,
                      help="list skills, or show one; work on the skill pool",
                      description="List the skills of the workspace (installed and learned.*), or show NAME's "
                                  "signature and docs; the actions work on the skill pool "
                                  "(`pipe skills ACTION --help` for each).",
                      examples=["pipe skills", "pipe skills text.split", "pipe skills text --json",
                                "pipe skills history text.split"],
                      usage="pipe skills [-h] [--workspace DIR] [--json] [NAME | ACTION ...]")
    add_workspace_option(skills)
    skills.add_argument("--json", action="store_true", help="print JSON (name, signature, schema, docs)")
    skills.set_defaults(name=None)
    actions = add_sub_verbs(skills, action=_ActionOrSkill)

    def action(name: str, handler, help: str, examples: list[str]) -> argparse.ArgumentParser:
        parser = add_verb(actions, name, handler=handler, help=help, description=help,
                          examples=examples)
        # No default here: `pipe skills --workspace DIR history …` keeps the DIR given before the action.
        add_workspace_option(parser, default=argparse.SUPPRESS)
        return parser

    history = action("history", history_command, "show every recorded call of a skill or module, newest first",
                     ["pipe skills history text.split", "pipe skills history classify --limit 10 --json"])
    history.add_argument("name", metavar="NAME", help="a skill (text.split) or module name")
    history.add_argument("--limit", type=int, default=50, metavar="N", help="show at most N calls (default 50)")
    history.add_argument("--json", action="store_true", help="print JSON")

    report = action("report", report_command, "file a bug report about a skill",
                    ["pipe skills report text.split --use-case \"split a CSV line\" --expected \"3 fields\" "
                     "--observed \"1 field\" --no-review"])
    report.add_argument("name", metavar="NAME", help="the skill the report is about")
    report.add_argument("--use-case", required=True, metavar="TEXT", help="what you were trying to do")
    report.add_argument("--expected", required=True, metavar="TEXT", help="the outcome you expected")
    report.add_argument("--observed", required=True, metavar="TEXT", help="the outcome you got")
    report.add_argument("--notes", default="", metavar="TEXT", help="anything else that helps the reviewer")
    report.add_argument("--reporter", default="cli", metavar="WHO", help="who files it (default: cli)")
    report.add_argument("--conversation", metavar="ID", help="the reporter's conversation id (default: a new one); "
                                                             "the reviewer must never run in it")
    report.add_argument("--no-review", action="store_true", help="only file it; review later with `review`")
    add_reviewer_options(report)

    bugs = action("bugs", bugs_command, "list bug reports and the decisions about them",
                  ["pipe skills bugs", "pipe skills bugs text.split --open --json"])
    bugs.add_argument("name", nargs="?", metavar="NAME", help="only reports about this skill")
    bugs.add_argument("--open", action="store_true", help="only reports still open")
    bugs.add_argument("--json", action="store_true", help="print JSON")

    review = action("review", review_command, "have a reviewer decide open bug reports (fix, modify or remove)",
                    ["pipe skills review --review-model openai/gpt-4o-mini", "pipe skills review 3 --model SPEC"])
    review.add_argument("bug", nargs="?", type=int, metavar="BUG",
                        help="one report's number (default: every open one)")
    add_reviewer_options(review)

    promote = action("promote", promote_command,
                     "test a generated module with an independent reviewer and add it to the pool",
                     ["pipe skills promote classify --review-model openai/gpt-4o-mini",
                      "pipe skills promote triage/classify --name classify_report --model SPEC"])
    promote.add_argument("module", metavar="MODULE", help="a saved module: block name, PARENT/BLOCK or path "
                                                          "(`pipe modules list` shows them)")
    promote.add_argument("--name", metavar="NAME", help="its skill name under learned. (default: the block name)")
    add_reviewer_options(promote)

    export = action("export", export_command, "write the promoted modules to a folder for sharing",
                    ["pipe skills export shared/learned"])
    export.add_argument("dir", metavar="DIR", help="the folder to write them to (created if needed)")


class _ActionOrSkill(argparse._SubParsersAction):
    """`pipe skills ACTION ...` runs a pool action; any other first word is the skill or namespace NAME to show."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.choices = _AnyWord(self._name_parser_map)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        word, *rest = values
        if word in self._name_parser_map:
            super().__call__(parser, namespace, values, option_string)
            return
        if namespace.name is not None:
            parser.error(f"expected one skill NAME, got `{namespace.name}` and `{word}`")
        namespace.name = word
        _, extras = parser.parse_known_args(rest, namespace)
        if extras:
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, []).extend(extras)


class _AnyWord:
    """The actions, for argparse's choice check, which any word passes (it may be a skill NAME)."""

    def __init__(self, actions: dict) -> None:
        self.actions = actions

    def __contains__(self, word) -> bool:
        return True

    def __iter__(self):
        return iter(self.actions)


def command_skills(args) -> int:
    registry = registry_near(args.workspace)
    if args.name is None:
        for namespace in registry.lazy_namespaces():  # the MCP servers of orgtree.toml, started to list their tools
            try:
                registry.load_lazy(namespace)
            except PipeError as err:
                print(f"pipe skills: {namespace}.* not listed: {err.message}", file=sys.stderr)
        skills = list(registry)
    elif registry.get(args.name) is not None:
        skills = [registry.get(args.name)]
    elif args.name in registry.namespaces():
        skills = registry.in_namespace(args.name)
    else:
        suggestion = registry.suggest(args.name)
        hint = f"; did you mean `{suggestion}`?" if suggestion else ""
        raise UsageError(f"no skill or namespace `{args.name}`{hint}")
    skills = sorted(skills, key=lambda s: s.name)
    if args.json:
        print(json.dumps([_skill_json(s) for s in skills], indent=1))
        return EXIT_OK
    if args.name is None or len(skills) > 1:
        width = max((len(s.name) for s in skills), default=0)
        for s in skills:
            summary = s.description.strip().splitlines()[0] if s.description.strip() else ""
            print(f"{s.name:<{width}}  {summary}")
        print(f"\n{len(skills)} skills. `pipe skills NAME` shows one in full.", file=sys.stderr)
        return EXIT_OK
    s = skills[0]
    print(s.signature())
    print()
    print(s.description.strip())
    if s.params:
        print("\nParameters:")
        for p in s.params:
            doc = f": {p.doc}" if p.doc else ""
            print(f"  {p.name} ({p.type}){doc}")
    if s.returns_doc:
        print(f"\nReturns ({s.returns}): {s.returns_doc}")
    traits = ["pure" if s.pure else "has effects"] + (["idempotent"] if getattr(s, "idempotent", False) else [])
    print(f"\n{', '.join(traits)}; from {s.origin}")
    return EXIT_OK


def _skill_json(s) -> dict:
    return {"name": s.name, "signature": s.signature(), "description": s.description,
            "params": [{"name": p.name, "type": str(p.type), "doc": p.doc, "required": p.required}
                       for p in s.params],
            "returns": str(s.returns), "pure": s.pure, "origin": s.origin,
            "input_schema": s.input_schema(), "output_schema": s.output_schema()}


def _reviewer(args):
    from orgtree_lang.models.roles import RunModels

    models = RunModels.from_config(args.model, args.review_model)
    if not models.review_spec:
        return None
    return models.reviewer()


def history_command(args) -> int:
    from orgtree_lang.pool.history import workspace_history

    try:
        calls = workspace_history(Path(args.workspace))(args.name, args.limit)
    except RuntimeError as err:
        raise UsageError(str(err)) from None
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


def report_command(args) -> int:
    import uuid

    from orgtree_lang.run.registries import workspace_registry
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


def review_command(args) -> int:
    from orgtree_lang.run.registries import workspace_registry
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


def bugs_command(args) -> int:
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


def promote_command(args) -> int:
    from orgtree_lang.cli.modules import matching_modules
    from orgtree_lang.decompose.store import ModuleStore
    from orgtree_lang.pool.promote import promote as promote_module
    from orgtree_lang.run.registries import workspace_registry

    root = Path(args.workspace)
    store = ModuleStore(root)
    saved = matching_modules(store, args.module)
    if len(saved) != 1:
        names = ", ".join(str(m.path.relative_to(store.root)) for m in (saved or store.all())) or "none"
        what = "names several modules" if saved else "is not a saved module"
        raise UsageError(f"`{args.module}` {what} (candidates: {names})")
    reviewer = _reviewer(args)
    if reviewer is None:
        raise UsageError("promotion needs a reviewer model: pass --review-model SPEC or --model SPEC "
                         "(or set PIPE_MODEL)")
    result = promote_module(root, saved[0], reviewer=reviewer, registry=workspace_registry(root), name=args.name,
                            progress=lambda text: print(text, file=sys.stderr))
    for case in result["cases"]:
        got = f"error: {case['error']}" if "error" in case else json.dumps(case["output"], ensure_ascii=False)
        print(f"case {case['case']}: {'ok ' if case['ok'] else 'BAD'} {json.dumps(case['inputs'], ensure_ascii=False)} "
              f"-> {got}" + (f" ({case['reason']})" if case["reason"] else ""))
    if result["accepted"]:
        print(f"promoted to learned.{result['name']} ({result['path']}): {result['reasons']}")
        return EXIT_OK
    print(f"rejected: {result['reasons']}")
    return EXIT_RUNTIME


def export_command(args) -> int:
    from orgtree_lang.pool.learned import LearnedStore

    written = LearnedStore(Path(args.workspace)).export(Path(args.dir))
    for path in written:
        print(path)
    print(f"exported {len(written)} learned skill(s) to {args.dir}", file=sys.stderr)
    return EXIT_OK


def promote_after_run(root: Path, models, registry, settings) -> None:
    """With `[skills] promote_after = N` in the workspace's orgtree.toml, put every saved module used successfully
    N times up for promotion (once; a rejection is recorded and not retried automatically)."""
    from orgtree_lang.runtime.config import ConfigError

    try:
        threshold = settings.skills.get("promote_after")
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
