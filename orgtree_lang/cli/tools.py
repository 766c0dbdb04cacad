"""`pipe check`, `pipe dis` and `pipe fmt`: the commands that inspect programs without running them."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

from orgtree_lang.cli.options import EXIT_COMPILE, EXIT_OK, add_verb, program_file, registry_near


def register(commands) -> None:
    check = add_verb(commands, "check", handler=command_check, help="check programs for errors without running them",
                     description="Parse and check each FILE; report every error and warning.",
                     examples=["pipe check examples/hello.pipe", "pipe check examples/*.pipe"])
    check.add_argument("files", nargs="+", metavar="FILE")

    dis = add_verb(commands, "dis", handler=command_dis, help="show a program's bytecode",
                   description="Compile FILE and print its bytecode, one instruction per line.",
                   examples=["pipe dis examples/loops.pipe", "pipe dis examples/loops.pipe --json"])
    dis.add_argument("file", metavar="FILE")
    dis.add_argument("--json", action="store_true", help="print the serialized bytecode (JSON) instead")

    fmt = add_verb(commands, "fmt", handler=command_fmt, help="format programs in the canonical style",
                   description="Rewrite each FILE in the canonical layout (comments are kept).",
                   examples=["pipe fmt examples/hello.pipe", "pipe fmt --check examples/*.pipe"])
    fmt.add_argument("files", nargs="+", metavar="FILE")
    fmt.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would be reformatted")


def command_check(args) -> int:
    from orgtree_lang.compile.api import compile_file
    from orgtree_lang.syntax.diagnostics import CompileError, render_all

    for name in args.files:
        program_file(name, args.verb)
    registry = registry_near(args.files[0])
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

    compiled = compile_file(program_file(args.file, args.verb), registry_near(args.file))
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
