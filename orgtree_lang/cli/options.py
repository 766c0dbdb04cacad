"""What the `pipe` verbs share: exit codes, the one way to add a verb, and the workspace, budget and model options."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Callable

from orgtree_lang.syntax.errors import EXIT_COMPILE, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_WAITING

__all__ = ["EXIT_OK", "EXIT_USAGE", "EXIT_COMPILE", "EXIT_RUNTIME", "EXIT_WAITING", "add_verb", "add_sub_verbs",
           "add_workspace_option", "add_budget_options", "budget_from_args", "add_trace_options", "add_model_options",
           "add_reviewer_options", "choices_from_args", "models_from_args", "positive", "registry_near",
           "program_file"]

WORKSPACE_HELP = "the workspace (default: this folder)"
HELP_WIDTH = 78


def add_verb(commands, name: str, *, help: str, description: str, examples: list[str],
             handler: Callable | None = None, usage: str | None = None) -> argparse.ArgumentParser:
    """Add `pipe NAME` (or a sub-verb) with its one-line help, description and examples; `handler(args)` runs it."""
    lines = "\n".join(f"  {example}" for example in examples)
    # Examples keep their lines, so the description is wrapped here rather than by argparse.
    parser = commands.add_parser(name, help=help, description=textwrap.fill(description, HELP_WIDTH), usage=usage,
                                 epilog=f"example{'s' if len(examples) > 1 else ''}:\n{lines}",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    # `verb` names the command in its error messages (`pipe skills history: ...`); a sub-verb's replaces its verb's.
    parser.set_defaults(verb=parser.prog)
    if handler is not None:
        parser.set_defaults(handler=handler)
        # Every verb can fail with a bug of orgtree_lang; `pipe`'s one handler shows its traceback only on request.
        parser.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
    return parser


def add_sub_verbs(parser: argparse.ArgumentParser, action=None):
    """The sub-verbs of a verb (`pipe ctx add`): each is added with `add_verb` on what this returns."""
    kwargs = {"action": action} if action is not None else {}
    return parser.add_subparsers(dest="action", metavar="ACTION", required=action is None, **kwargs)


def add_workspace_option(parser: argparse.ArgumentParser, help: str = WORKSPACE_HELP,
                         default: str | None = ".") -> None:
    parser.add_argument("--workspace", metavar="DIR", default=default, help=help)


def positive(convert, what: str):
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


positive_int = positive(int, "a whole number")


def _bytes(text: str) -> int:
    """`500M`, `2G`, `64K` or a number of bytes."""
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


# flag, type, metavar, help for a new run, help for a resumed one (whose limits count what was already spent)
_BUDGETS = (
    ("--max-steps", positive_int, "N", "stop after N statements", "new step limit (steps already done count)"),
    ("--max-seconds", positive(float, "a number of seconds"), "S", "stop after S wall-clock seconds",
     "new limit on wall seconds (so far count)"),
    ("--max-skill-calls", positive_int, "N", "stop after N skill calls", "new limit on skill calls"),
    ("--max-tokens", positive_int, "N",
     "stop once the models of the whole run tree have used N tokens (prompt + completion)",
     "new limit on model tokens (so far count)"),
    ("--max-cost", positive(float, "an amount in USD"), "USD",
     "stop once the models of the whole run tree have cost USD dollars", "new limit on model cost (so far counts)"),
    ("--max-memory", positive(_bytes, "a size like 500M or 2G"), "SIZE",
     "stop when the program builds one value (a string, list, dict or bytes) over SIZE (bytes, or with K, M or G)",
     "limit on the bytes one value may take (500M, 2G, or bytes)"),
)


def add_budget_options(parser: argparse.ArgumentParser, resumed: bool = False) -> None:
    """--max-steps, --max-seconds, --max-skill-calls, --max-tokens, --max-cost and --max-memory, each above 0."""
    for flag, kind, metavar, fresh, again in _BUDGETS:
        parser.add_argument(flag, type=kind, metavar=metavar, help=again if resumed else fresh)


def budget_from_args(args):
    """The Budget the budget options ask for (the VM's default step limit when --max-steps is not given)."""
    from orgtree_lang.vm.budget import Budget

    return Budget(max_steps=args.max_steps or Budget().max_steps, max_seconds=args.max_seconds,
                  max_skill_calls=args.max_skill_calls, max_tokens=args.max_tokens, max_cost=args.max_cost,
                  max_memory=args.max_memory)


def add_trace_options(parser: argparse.ArgumentParser, resumed: bool = False) -> None:
    """--trace-level: how much of the run its trace.jsonl records."""
    parser.add_argument("--trace-level", choices=("off", "calls", "steps"), default=None,
                        help="calls: run start and end, pipeline, skill and model calls, prints, errors, blocks; "
                             "steps: also one event per statement (slow, large); off: no trace "
                             + ("(default: the level the run started with)" if resumed else
                                "(default: [trace] level in orgtree.toml, else calls)"))


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--model, --review-model, --api-base, --model-timeout and --record: the models that write modules for
    ambiguous blocks."""
    parser.add_argument("--model", metavar="SPEC", help="the model that writes modules for ambiguous blocks: "
                                                     "provider/name, scripted:FILE or replay:FILE "
                                                     "(default: PIPE_MODEL, or [model] name in orgtree.toml)")
    parser.add_argument("--review-model", metavar="SPEC", help="the reviewer's model (default: PIPE_REVIEW_MODEL, "
                                                            "[model] review, or the author's model)")
    parser.add_argument("--api-base", metavar="URL", help="the endpoint of an OpenAI-compatible server for the models")
    parser.add_argument("--model-timeout", metavar="SECONDS", type=positive(float, "a number of seconds"),
                        help="how long one model call may take (default: PIPE_MODEL_TIMEOUT, [model] timeout, "
                             "or 120)")
    parser.add_argument("--context-window", metavar="TOKENS", type=positive(int, "a whole number of tokens"),
                        help="how many tokens of input the model takes, for a model litellm does not know (a local "
                             "server's); prompts are sized to it (default: PIPE_CONTEXT_WINDOW, [model] "
                             "context_window, the spec's NAME:TOKENS, litellm's map, else a guess of 8192)")
    parser.add_argument("--review-context-window", metavar="TOKENS", type=positive(int, "a whole number of tokens"),
                        help="the same for the reviewer's model (default: [model] review_context_window, or the "
                             "author's when both are the same model)")
    parser.add_argument("--record", metavar="FILE", help="save every model request and answer to the cassette FILE "
                                                      "(the reviewer's to FILE with .reviewer before the suffix); "
                                                      "replay them offline with --model replay:FILE")


def choices_from_args(args):
    """The models and OpenTelemetry export a verb's arguments chose (run.options.RunChoices); a verb without some
    of the options leaves those to orgtree.toml."""
    from orgtree_lang.run.options import RunChoices

    return RunChoices(model=getattr(args, "model", None), review_model=getattr(args, "review_model", None),
                      api_base=getattr(args, "api_base", None), record=getattr(args, "record", None),
                      model_timeout=getattr(args, "model_timeout", None), otel=getattr(args, "otel", False),
                      otel_endpoint=getattr(args, "otel_endpoint", None),
                      context_window=getattr(args, "context_window", None),
                      review_context_window=getattr(args, "review_context_window", None))


def models_from_args(args: argparse.Namespace, config_path: Path, *, review: bool = True, tell: bool = False):
    """The run's RunModels from add_model_options' flags (those a verb lacks count as not given); `tell`: say on
    stderr, once per model, when its context window is only a guess. A bad setting is a UsageError."""
    from orgtree_lang.models.base import ModelError
    from orgtree_lang.models.roles import RunModels
    from orgtree_lang.runtime.errors import UsageError

    given = vars(args)
    try:
        return RunModels.from_config(given.get("model"), given.get("review_model") if review else None,
                                     api_base=given.get("api_base"), record=given.get("record"),
                                     timeout=given.get("model_timeout"), context_window=given.get("context_window"),
                                     review_context_window=given.get("review_context_window"),
                                     notice=(lambda text: print(f"pipe: {text}", file=sys.stderr, flush=True))
                                     if tell else None,
                                     config_path=config_path)
    except ModelError as err:
        raise UsageError(str(err)) from None


def add_reviewer_options(parser: argparse.ArgumentParser) -> None:
    """--model and --review-model for the verbs whose only model is a reviewer (skill-pool reviews, promotion)."""
    parser.add_argument("--model", metavar="SPEC", help="the reviewer's model when --review-model is not given "
                                                        "(default: PIPE_MODEL, or [model] name in orgtree.toml)")
    parser.add_argument("--review-model", metavar="SPEC", help="the reviewer's model (default: PIPE_REVIEW_MODEL, "
                                                               "[model] review, or the --model one)")


def registry_near(near: str | Path = "."):
    """The skills a program in the workspace of `near` (a file or folder) sees, learned.* and pool changes included."""
    from orgtree_lang.run.registries import workspace_registry

    near = Path(near)
    return workspace_registry(near if near.is_dir() else near.resolve().parent)


def program_file(name: str, verb: str) -> Path:
    """The .pipe file a verb (`pipe run`, as `args.verb` has it) was given, or a usage error that says what
    was given instead: a folder (with the programs in it), or no file (with the name plus `.pipe` if that is one)."""
    from orgtree_lang.runtime.errors import UsageError

    path = Path(name)
    if path.is_dir():
        programs = sorted(p.name for p in path.glob("*.pipe") if p.is_file())
        shown = ", ".join(programs[:8]) + (f" and {len(programs) - 8} more" if len(programs) > 8 else "")
        hint = (f"its programs: {shown} (e.g. `{verb} {path / programs[0]}`)" if programs
                else "it holds no .pipe file; name a program file")
        raise UsageError(f"{path} is a folder, not a .pipe file", hint=hint)
    if not path.is_file():
        guess = path.with_name(path.name + ".pipe") if path.suffix != ".pipe" and path.name else None
        raise UsageError(f"no such file: {path}",
                         hint=f"did you mean {guess}?" if guess is not None and guess.is_file() else None)
    return path
