"""`pipe modules list | show`: the generated child modules of a workspace, their provenance and review ledgers."""

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
                    examples=["pipe modules show classify", "pipe modules show triage/classify --attempts"])
    show.add_argument("name", metavar="NAME", help="a block name, PARENT/BLOCK, or the module's path")
    show.add_argument("--review", action="store_true", help="also print the module's concern ledger")
    show.add_argument("--attempts", action="store_true",
                      help="also print every answer the author gave while writing it, with its problems")
    add_workspace_option(show)


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
              f"review rounds {p.get('review-rounds', '?')}")
    return EXIT_OK


def command_show(args) -> int:
    from orgtree_lang.decompose.store import ModuleStore

    store = ModuleStore(Path(args.workspace))
    matches = matching_modules(store, args.name)
    if not matches:
        names = ", ".join(str(m.path.relative_to(store.root)) for m in store.all()) or "none"
        raise UsageError(f"no module `{args.name}` (saved modules: {names})")
    if len(matches) > 1:
        names = ", ".join(str(m.path.relative_to(store.root)) for m in matches)
        raise UsageError(f"`{args.name}` names several modules ({names}); write PARENT/BLOCK")
    module = matches[0]
    sys.stdout.write(module.path.read_text(encoding="utf-8"))
    if args.review:
        from orgtree_lang.review.ledger import ConcernLedger

        parent = Path(module.provenance.get("parent", "").split(":")[0]).name
        subject = module.provenance.get("review-subject") or \
            f"{parent}:{module.provenance.get('block')}:{module.spec_hash}"
        rows = ConcernLedger.for_workspace(Path(args.workspace)).history(subject)
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
    return EXIT_OK


def matching_modules(store, name: str) -> list:
    """The saved modules of `store` that `name` names: a block name, PARENT/BLOCK (with or without .pipe), or a path."""

    def named(module) -> bool:
        relative = str(module.path.relative_to(store.root))
        return name in (module.provenance.get("block"), relative, relative.removesuffix(".pipe"), str(module.path))

    return [module for module in store.all() if named(module)]
