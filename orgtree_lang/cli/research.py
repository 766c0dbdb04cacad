"""`pipe research QUESTION...`: run the research agent (stdlib/research.pipe's `ask`) as a durable run in the workspace,
its findings cited and proposed as insights, printed as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from orgtree_lang.cli.options import (add_budget_options, add_model_options, add_trace_options, add_verb,
                                      add_workspace_option)
from orgtree_lang.cli.run import add_executor_option, add_otel_options, command_run


def register(commands) -> None:
    research = add_verb(
        commands, "research", handler=command_research, help="research questions with the research agent",
        description="Run the research agent (stdlib/research.pipe) on QUESTIONs: it plans each, searches the "
                    "workspace memory and the web provider of [web] in orgtree.toml, reads the hits with the run's "
                    "model (offline: by word overlap) and follows links within [http] allow, runs an experiment "
                    "in the sandbox for an empirical question, and answers with findings that cite their sources. "
                    "Each finding is proposed as an insight and reviewed by the review model. A durable run: "
                    "`pipe resume`, `pipe replay` and `pipe tree` work on it as on any.",
        examples=['pipe research "Which endpoint of the ticket API lists open tickets?" --model gpt-4o',
                  'pipe research "How many primes are below 10000?" --model scripted:agent.json --no-web'])
    research.add_argument("questions", nargs="+", metavar="QUESTION", help="a question to research (repeatable)")
    research.add_argument("--no-web", action="store_true",
                          help="search the workspace memory only, even when [web] search names a provider")
    research.add_argument("--max-reads", type=int, default=8, metavar="N",
                          help="sources read per question before it is given up (default 8)")
    add_budget_options(research)
    add_trace_options(research)
    add_workspace_option(research, default=".", help="the workspace whose memory, insights and orgtree.toml are used "
                                                     "(default: the current folder)")
    research.add_argument("--json", action="store_true", help="print one JSON envelope: output, run id, status, usage")
    add_model_options(research)
    add_executor_option(research)
    add_otel_options(research)


def command_research(args) -> int:
    from importlib import resources

    from orgtree_lang.decompose.research import RESEARCH_MODULE, web_allowed
    from orgtree_lang.runtime.errors import UsageError

    if args.max_reads < 1:
        raise UsageError(f"--max-reads must be at least 1, got {args.max_reads}")
    root = Path(args.workspace)
    web = not args.no_web and web_allowed(root / "orgtree.toml")
    args.file = str(resources.files("orgtree_lang.stdlib").joinpath(RESEARCH_MODULE))
    args.entry = "ask"
    args.inputs = [f"questions={json.dumps(args.questions)}", f"web={'true' if web else 'false'}",
                   f"max_reads={args.max_reads}"]
    args.inputs_file, args.trace, args.durability, args.no_tree, args.no_journal = None, None, "power", False, False
    args.run_id = None  # pipe run's --run-id (the viewer's): a research run takes a new id
    return command_run(args)
