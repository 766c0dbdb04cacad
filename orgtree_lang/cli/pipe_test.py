"""`pipe test`: run the `test` blocks and examples of .pipe files, with a summary and an exit code."""

from __future__ import annotations

import sys
from pathlib import Path

from orgtree_lang.cli.options import (EXIT_COMPILE, EXIT_OK, add_model_options, add_verb, choices_from_args,
                                      program_file)

EXIT_FAILED = 1


def register(commands) -> None:
    test = add_verb(commands, "test", handler=command_test, help="run the tests and examples of programs",
                    description="Compile each FILE and run its `test \"name\":` blocks and the `examples:` of its "
                                "pipelines, each in a fresh run. Prints one line per test and a summary; exits 0 "
                                "when all pass, 1 when one fails (or none are found), 65 when a file does not "
                                "compile. Saved modules (.orgtree/modules/...) keep the examples they were "
                                "accepted with, so `pipe test` checks them again.",
                    examples=["pipe test examples/contracts.pipe",
                              "pipe test .orgtree/modules/triage/*.pipe -k classify"])
    test.add_argument("files", nargs="+", metavar="FILE")
    test.add_argument("-k", dest="only", metavar="TEXT", help="run only the tests whose name contains TEXT")
    test.add_argument("-v", "--verbose", action="store_true", help="also show what passing tests printed")
    add_model_options(test)


def _workspace_of(path: Path) -> Path:
    """The workspace a file belongs to: a saved module's is the folder holding `.orgtree/`, others' their own."""
    resolved = path.resolve()
    parts = resolved.parts
    if ".orgtree" in parts[:-1]:
        return Path(*parts[:len(parts) - 1 - parts[::-1].index(".orgtree")])
    return resolved.parent


def command_test(args) -> int:
    from orgtree_lang.compile.api import compile_file
    from orgtree_lang.run.options import RunOptions
    from orgtree_lang.run.program_tests import TEST_BUDGET, run_tests
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.run.settings import RunSettings
    from orgtree_lang.syntax.diagnostics import CompileError

    passed = failed = broken = 0
    for name in args.files:
        path = program_file(name, args.verb)
        root = _workspace_of(path)
        settings = RunSettings.load(root)
        registry = workspace_registry(root, config=settings.file)
        try:
            compiled = compile_file(path, registry)
        except CompileError as err:
            broken += 1
            print(err.render(), file=sys.stderr)
            continue
        # As `pipe run` would run the program: its models, and a decomposer that reuses the saved modules.
        options = RunOptions(budget=TEST_BUDGET, settings=settings, choices=choices_from_args(args),
                             notice=lambda text, kind="note": print(f"{args.verb}: {text}", file=sys.stderr))
        for outcome in run_tests(compiled.program, root, registry, options, source=compiled.source, only=args.only):
            if outcome.passed:
                passed += 1
                print(f"PASS {path}: {outcome.name} ({outcome.seconds:.2f}s)")
                if args.verbose:
                    print("".join(f"    | {line}\n" for line in outcome.printed), end="")
                continue
            failed += 1
            print(f"FAIL {path}: {outcome.name}")
            print("".join(f"    | {line}\n" for line in outcome.printed), end="")
            print("\n".join("    " + line for line in outcome.error.render("pipe test").splitlines()))
    total = passed + failed
    summary = f"{total} test{'s' if total != 1 else ''}: {passed} passed, {failed} failed"
    if broken:
        summary += f", {broken} file{'s' if broken != 1 else ''} did not compile"
    print(summary)
    if broken:
        return EXIT_COMPILE
    if failed or not total:
        if not total:
            print("no tests found: add `test \"name\":` blocks, or `examples:` after a pipeline's docstring",
                  file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
