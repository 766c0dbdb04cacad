"""The `pipe` command: build the parser from every verb module's `register`, then run the chosen verb's handler."""

from __future__ import annotations

import argparse
import sys
import traceback

from orgtree_lang import __version__
from orgtree_lang.cli import (ctx, editor, mcp, modules, pad, people, pipe_test, research, run, saved_runs, serve,
                              skills, tools, tree)
from orgtree_lang.cli.options import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE
from orgtree_lang.runtime.errors import DiskFull, disk_full, no_room
from orgtree_lang.runtime.printable import printable
from orgtree_lang.syntax.errors import PipeError

# In the order `pipe --help` lists them; each module's `register(commands)` adds its verbs with their handlers.
VERB_MODULES = (run, tools, pipe_test, saved_runs, people, modules, tree, serve, ctx, pad, research, skills, editor,
                mcp)

DESCRIPTION = """\
orgtree_lang: write .pipe programs that call skills, and leave the steps nobody knows
yet as `ambiguous` blocks for the decomposer.

exit codes: 0 ok, 1 `fmt --check` would reformat or `test` failed, 2 usage, 65 compile error, 70 runtime error,
74 no room to write (a full disk: free space, then `pipe resume RUN`), 75 the run waits for a person's answer
(`pipe inbox`, `pipe reply`)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipe", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pipe {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in VERB_MODULES:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one `pipe` command; every error a user should see is rendered here, once, with its exit code."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = getattr(args, "debug", False)
    try:
        return args.handler(args)
    except PipeError as err:
        print(printable(err.render(args.verb, debug=debug)), file=sys.stderr)  # messages may quote program text
        return err.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug in orgtree_lang itself: say so plainly, traceback only with --debug
        if debug:
            traceback.print_exc()
        full = disk_full(exc)
        if full is not None:  # not a bug: the machine had no room to write
            err = DiskFull(f"no room to write: {no_room(full)}")
            print(printable(err.render(args.verb)), file=sys.stderr)
            return err.exit_code
        print(f"internal error: {type(exc).__name__}: {exc}\n  = this is a bug in orgtree_lang, not in your "
              "program; run with --debug for the Python traceback", file=sys.stderr)
        return EXIT_RUNTIME


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
