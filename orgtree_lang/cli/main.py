"""The `pipe` command: parse arguments and dispatch to run, check, dis, fmt and skills."""

from __future__ import annotations

import argparse
import sys

from orgtree_lang import __version__

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_COMPILE = 65
EXIT_RUNTIME = 70

DESCRIPTION = """\
orgtree_lang: write .pipe programs that call skills, and leave the steps nobody knows
yet as `ambiguous` blocks for the decomposer.

exit codes: 0 ok, 1 `fmt --check` would reformat, 2 usage, 65 compile error, 70 runtime error"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipe", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pipe {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser("run", help="compile and run a program",
                              description="Compile FILE and run its entry pipeline (`main`, else its only one). "
                                          "Printed lines and the result go to stdout; errors to stderr.")
    run.add_argument("file", metavar="FILE", help="the .pipe program")
    run.add_argument("-i", "--input", dest="inputs", action="append", default=[], metavar="KEY=VALUE",
                     help="an input of the entry pipeline, parsed by the parameter's type (repeatable)")
    run.add_argument("--inputs", dest="inputs_file", metavar="FILE.json", help="inputs as a JSON object")
    run.add_argument("--entry", metavar="NAME", help="the pipeline to run (default: main, or the only pipeline)")
    run.add_argument("--max-steps", type=_positive_int, metavar="N", help="stop after N statements")
    run.add_argument("--max-seconds", type=_positive_float, metavar="S", help="stop after S wall-clock seconds")
    run.add_argument("--max-skill-calls", type=_positive_int, metavar="N", help="stop after N skill calls")
    run.add_argument("--max-tokens", type=_positive_int, metavar="N",
                     help="stop once the models of the whole run tree have used N tokens (prompt + completion)")
    run.add_argument("--max-cost", type=_positive(float, "an amount in USD"), metavar="USD",
                     help="stop once the models of the whole run tree have cost USD dollars")
    run.add_argument("--trace", metavar="FILE", help="write the JSONL trace here "
                                                     "(default: WORKSPACE/.orgtree/runs/<id>/trace.jsonl)")
    run.add_argument("--workspace", metavar="DIR", help="workspace root for fs skills and .orgtree/ "
                                                        "(default: the program's folder)")
    run.add_argument("--json", action="store_true", help="print one JSON envelope: output, run id, status, usage")
    run.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
    add_model_options(run)
    run.add_argument("--durability", choices=("power", "process"), default="power",
                     help="power (default): every journaled step is on disk before the run moves on; process: "
                          "it survives kill -9 and crashes of the process, is much faster, and may lose the last "
                          "steps on a power loss (they then run again, with the same idempotency keys)")
    run.add_argument("--no-tree", action="store_true",
                     help="do not record the org tree (each call costs about 15-20 µs more with it; see "
                          "benchmarks/orgtree_overhead.py); `pipe tree` and call history then miss this run")
    run.add_argument("--no-journal", action="store_true",
                     help="do not journal the run (it then cannot be resumed, replayed or forked)")

    check = commands.add_parser("check", help="check programs for errors without running them",
                                description="Parse and check each FILE; report every error and warning.")
    check.add_argument("files", nargs="+", metavar="FILE")

    dis = commands.add_parser("dis", help="show a program's bytecode",
                              description="Compile FILE and print its bytecode, one instruction per line.")
    dis.add_argument("file", metavar="FILE")
    dis.add_argument("--json", action="store_true", help="print the serialized bytecode (JSON) instead")

    fmt = commands.add_parser("fmt", help="format programs in the canonical style",
                              description="Rewrite each FILE in the canonical layout (comments are kept).")
    fmt.add_argument("files", nargs="+", metavar="FILE")
    fmt.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would be reformatted")

    from orgtree_lang.cli.runs import add_run_commands

    add_run_commands(commands)
    from orgtree_lang.cli.modules import add_module_commands

    add_module_commands(commands)
    from orgtree_lang.cli.tree import add_tree_command

    add_tree_command(commands)
    from orgtree_lang.cli.ctx import add_ctx_commands

    add_ctx_commands(commands)
    from orgtree_lang.cli.pad import add_pad_commands

    add_pad_commands(commands)

    from orgtree_lang.cli.pool import EPILOG as SKILL_ACTIONS

    skills = commands.add_parser("skills", help="list skills, or show one; work on the skill pool",
                                 description="List the skills of the workspace (installed and learned.*), or show "
                                             "NAME's signature and docs.", epilog=SKILL_ACTIONS,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    skills.add_argument("--workspace", metavar="DIR", default=".", help="the workspace (default: this folder)")
    skills.add_argument("name", nargs="?", metavar="NAME", help="a skill (text.split) or a namespace (text)")
    skills.add_argument("--json", action="store_true", help="print JSON (name, signature, schema, docs)")
    return parser


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--model, --review-model, --api-base and --record: the models that write modules for ambiguous blocks."""
    parser.add_argument("--model", metavar="SPEC", help="the model that writes modules for ambiguous blocks: "
                                                     "provider/name, scripted:FILE or replay:FILE "
                                                     "(default: PIPE_MODEL, or [model] name in orgtree.toml)")
    parser.add_argument("--review-model", metavar="SPEC", help="the reviewer's model (default: PIPE_REVIEW_MODEL, "
                                                            "[model] review, or the author's model)")
    parser.add_argument("--api-base", metavar="URL", help="the endpoint of an OpenAI-compatible server for the models")
    parser.add_argument("--record", metavar="FILE", help="save every model request and answer to the cassette FILE "
                                                      "(the reviewer's to FILE with .reviewer before the suffix); "
                                                      "replay them offline with --model replay:FILE")


def _positive(convert, what: str):
    """An argparse type: a number above zero, with a message that says what was expected."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
        return value

    return parse


_positive_int = _positive(int, "a whole number")
_positive_float = _positive(float, "a number of seconds")


def main(argv: list[str] | None = None) -> int:
    from orgtree_lang.runtime.state_db import StateSchemaError

    try:
        return _dispatch(argv)
    except StateSchemaError as err:
        # A newer orgtree-lang wrote this workspace: a usage problem, not a failure of the program.
        print(f"error: {err.message}\n  = hint: {err.hint}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from orgtree_lang.cli.pool import ACTIONS, run_action

    if len(argv) > 1 and argv[0] == "skills" and argv[1] in ACTIONS:
        return run_action(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.command == "run":
        from orgtree_lang.cli.run import command_run as command
    elif args.command == "check":
        from orgtree_lang.cli.tools import command_check as command
    elif args.command == "dis":
        from orgtree_lang.cli.tools import command_dis as command
    elif args.command == "fmt":
        from orgtree_lang.cli.tools import command_fmt as command
    elif args.command == "skills":
        from orgtree_lang.cli.tools import command_skills as command
    else:
        command = args.handler
    try:
        return command(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
