"""`pipe modules list | show | accept`: the generated child modules of a workspace, their provenance and review
ledgers, and a person's approval of a module edited since its review."""

from __future__ import annotations

import sys
from pathlib import Path

from orgtree_lang.cli.options import EXIT_OK, add_sub_verbs, add_verb, add_workspace_option
from orgtree_lang.runtime.errors import UsageError


def register(commands) -> None:
    modules = add_verb(commands, "modules", help="list or show generated child modules",
                       description="Generated modules live in WORKSPACE/.orgtree/modules as .pipe source.",
                       examples=["pipe modules list", "pipe modules show classify --review"])
    actions = add_sub_verbs(modules)
    listing = add_verb(actions, "list", handler=command_list, help="one line per saved module",
                       description="One line per saved module: its path, block, parent program and review rounds.",
                       examples=["pipe modules list --workspace examples"])
    add_workspace_option(listing)
    show = add_verb(actions, "show", handler=command_show, help="a module's source with its provenance header",
                    description="Print a saved module's source with its provenance header, and on request its "
                                "review ledger and the author's attempts.",
                    examples=["pipe modules show classify", "pipe modules show triage/classify --attempts",
                              "pipe modules show classify --history"])
    show.add_argument("name", metavar="NAME", help="a block name, PARENT/BLOCK, or the module's path")
    show.add_argument("--review", action="store_true", help="also print the module's concern ledger")
    show.add_argument("--attempts", action="store_true",
                      help="also print every answer the author gave while writing it, with its problems")
    show.add_argument("--history", action="store_true",
                      help="also print its versions: as written, and each repair after it failed on real data")
    add_workspace_option(show)
    accept = add_verb(actions, "accept", handler=command_accept,
                      help="approve a module edited since its review, so runs reuse it again",
                      description="Record that a person read the module as it is now and approves it: runs refuse "
                                  "a module whose body changed since its review, or that went over a generated "
                                  "module's limits, until it is accepted. Its signature and capabilities are still "
                                  "checked against its parent on every reuse.",
                      examples=["pipe modules accept triage/classify"])
    accept.add_argument("name", metavar="NAME", help="a block name, PARENT/BLOCK, or the module's path")
    add_workspace_option(accept)


def command_list(args) -> int:
    from orgtree_lang.decompose.store import ModuleStore

    store = ModuleStore(Path(args.workspace))
    saved = store.all()
    if not saved:
        print(f"no generated modules in {store.root}", file=sys.stderr)
        return EXIT_OK
    for module in saved:
        p = module.provenance
        print(f"{module.path.relative_to(store.root)}  block {p.get('block', '?')}  parent {p.get('parent', '?')}  "
              f"review rounds {p.get('review-rounds', '?')}" + "".join(f"  [{w}]" for w in module.refusals))
    return EXIT_OK


def _one_module(store, name: str):
    """The saved module NAME names; UsageError if none or several."""
    matches = matching_modules(store, name)
    if not matches:
        names = ", ".join(str(m.path.relative_to(store.root)) for m in store.all()) or "none"
        raise UsageError(f"no module `{name}` (saved modules: {names})")
    if len(matches) > 1:
        names = ", ".join(str(m.path.relative_to(store.root)) for m in matches)
        raise UsageError(f"`{name}` names several modules ({names}); write PARENT/BLOCK")
    return matches[0]


def command_show(args) -> int:
    from orgtree_lang.decompose.store import ModuleStore

    from orgtree_lang.decompose.reuse import accept_name

    store = ModuleStore(Path(args.workspace))
    module = _one_module(store, args.name)
    sys.stdout.write(module.text)
    if module.changed_since_review:
        print(f"pipe modules show: {module.path} was changed since it was reviewed (its body no longer matches the "
              f"header's body-hash); runs refuse it until a person approves it with "
              f"`pipe modules accept {accept_name(module)}`", file=sys.stderr)
    if module.budget_failure:
        print(f"pipe modules show: a run of {module.path} went over the limits of a generated module "
              f"({module.budget_failure}); runs refuse it until it is fixed or the limits raised, and accepted with "
              f"`pipe modules accept {accept_name(module)}`", file=sys.stderr)
    if args.review:
        from orgtree_lang.review.ledger import ConcernLedger

        rows = ConcernLedger.for_workspace(Path(args.workspace)).history(module.review_subject)
        print(f"\n# review ledger ({len(rows)} concern{'s' if len(rows) != 1 else ''})")
        for row in rows:
            print(f"# {row['concern_id']} [{row['severity']}, round {row['round']}] {row['status']}: "
                  f"{row['evidence']}" + (f" ({row['rationale']})" if row.get("rationale") else ""))
    if args.attempts:
        from orgtree_lang.decompose.attempts import AttemptLog

        log = AttemptLog(Path(args.workspace))
        rows = log.for_spec(module.spec_hash)
        log.close()
        print(f"\n# author attempts ({len(rows)})")
        for row in rows:
            verdict = "accepted" if row["accepted"] else "not accepted: " + " | ".join(
                p.splitlines()[0] for p in row["problems"])
            print(f"# {row['phase']} attempt {row['attempt']} by {row['model']}: {verdict}")
    if args.history:
        _print_history(Path(args.workspace), module)
    return EXIT_OK


def _print_history(workspace: Path, module) -> None:
    """One block per version, oldest first: number, when, why, the cases it was simulated on, and how its module
    differs from the version before (a unified diff, without the header and the examples' tests)."""
    import difflib
    import time

    from orgtree_lang.decompose.simulate import module_part
    from orgtree_lang.decompose.store import HEADER, split_header
    from orgtree_lang.decompose.versions import ModuleVersions

    with ModuleVersions(workspace) as versions:
        rows = versions.history(module.path)
    print(f"\n# versions ({len(rows)})")
    before = ""
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.at))
        runs = sum(c.source == "run" for c in row.cases)
        print(f"# version {row.version}  {when}  {row.reason}" + (f"  (run {row.run_id})" if row.run_id else ""))
        print(f"#   {len(row.cases)} example(s) simulated, {runs} from real inputs a run failed on")
        body = module_part(split_header(row.text, HEADER)[1])  # the author's module, not its examples as tests
        if before:
            for line in difflib.unified_diff(before.splitlines(), body.splitlines(), f"version {row.version - 1}",
                                             f"version {row.version}", lineterm="", n=1):
                print(f"#   {line}")
        before = body


def command_accept(args) -> int:
    import getpass

    from orgtree_lang.decompose.reuse import spec_in_parent
    from orgtree_lang.decompose.store import ModuleStore, StoreError
    from orgtree_lang.decompose.validate import validate_module
    from orgtree_lang.run.registries import default_registry

    store = ModuleStore(Path(args.workspace))
    module = _one_module(store, args.name)
    if not module.changed_since_review and not module.budget_failure:
        print(f"pipe modules accept: {module.path} is as its review accepted it; nothing to accept", file=sys.stderr)
        return EXIT_OK
    registry = default_registry()
    spec = spec_in_parent(module, Path(args.workspace), registry)
    if spec is not None:
        problems = validate_module(module.text, spec, registry, str(module.path)).problems
        if problems:
            raise UsageError(f"{module.path} does not fit block `{spec.name}` of its parent, so runs would refuse "
                             "it even accepted:\n" + "\n".join(problems))
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown user"
    try:
        store.accept(module, user, registry)
    except StoreError as err:
        raise UsageError(str(err)) from None
    print(f"accepted {module.path}: runs reuse it as it is now (still checked against its parent's signature and "
          "capabilities on every reuse)", file=sys.stderr)
    return EXIT_OK


def matching_modules(store, name: str) -> list:
    """The saved modules of `store` that `name` names: a block name, PARENT/BLOCK (with or without .pipe), or a path."""

    def named(module) -> bool:
        relative = str(module.path.relative_to(store.root))
        return name in (module.provenance.get("block"), relative, relative.removesuffix(".pipe"), str(module.path))

    return [module for module in store.all() if named(module)]
