"""`pipe check`, `pipe dis`, `pipe fmt` and `pipe skills`: the commands that inspect programs without running them."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

from orgtree_lang.cli.main import EXIT_COMPILE, EXIT_OK, EXIT_USAGE


def _registry(near: str | Path = "."):
    """The skills a program in the workspace of `near` (a file or folder) sees, learned.* and pool changes included."""
    from orgtree_lang.engine.registries import workspace_registry

    near = Path(near)
    return workspace_registry(near if near.is_dir() else near.resolve().parent)


def command_check(args) -> int:
    from orgtree_lang.compile.api import compile_file
    from orgtree_lang.syntax.diagnostics import CompileError, render_all

    registry = _registry(args.files[0])
    failed = 0
    for name in args.files:
        try:
            compiled = compile_file(name, registry)
        except CompileError as err:
            failed += 1
            print(err.render(), file=sys.stderr)
            continue
        if compiled.warnings:
            print(render_all(compiled.warnings, {name: compiled.source}), file=sys.stderr)
        print(f"{name}: ok", file=sys.stderr)
    if len(args.files) > 1:
        print(f"checked {len(args.files)} files: {len(args.files) - failed} ok, {failed} with errors", file=sys.stderr)
    return EXIT_COMPILE if failed else EXIT_OK


def command_dis(args) -> int:
    from orgtree_lang.compile.api import compile_file
    from orgtree_lang.compile.disassemble import disassemble
    from orgtree_lang.syntax.diagnostics import CompileError

    try:
        compiled = compile_file(args.file, _registry(args.file))
    except CompileError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_COMPILE
    if args.json:
        print(json.dumps(compiled.program.to_json(), indent=1))
    else:
        sys.stdout.write(disassemble(compiled.program))
    return EXIT_OK


def command_fmt(args) -> int:
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.syntax.formatter import format_source

    would_change = 0
    errors = 0
    for name in args.files:
        path = Path(name)
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as err:
            print(f"pipe fmt: cannot read {path}: {err.strerror}", file=sys.stderr)
            errors += 1
            continue
        try:
            formatted = format_source(source, str(path))
        except CompileError as err:
            print(err.render(), file=sys.stderr)
            errors += 1
            continue
        if formatted == source:
            continue
        would_change += 1
        if args.check:
            diff = difflib.unified_diff(source.splitlines(True), formatted.splitlines(True),
                                        f"{path} (current)", f"{path} (formatted)")
            sys.stderr.writelines(diff)
            print(f"would reformat {path}", file=sys.stderr)
        else:
            from orgtree_lang.runtime.files import write_atomic

            write_atomic(path, formatted)
            print(f"reformatted {path}", file=sys.stderr)
    if errors:
        return EXIT_COMPILE
    return 1 if args.check and would_change else EXIT_OK


def command_skills(args) -> int:
    registry = _registry(getattr(args, "workspace", None) or ".")
    if args.name is None:
        skills = list(registry)
    elif registry.get(args.name) is not None:
        skills = [registry.get(args.name)]
    elif args.name in registry.namespaces():
        skills = registry.in_namespace(args.name)
    else:
        suggestion = registry.suggest(args.name)
        hint = f"; did you mean `{suggestion}`?" if suggestion else ""
        print(f"pipe skills: no skill or namespace `{args.name}`{hint}", file=sys.stderr)
        return EXIT_USAGE
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
