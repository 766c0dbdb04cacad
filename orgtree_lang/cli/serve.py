"""`pipe serve`: start the web run viewer over a workspace (runs, org trees, messages, modules, memory)."""

from __future__ import annotations

from pathlib import Path

from orgtree_lang.cli.options import EXIT_OK, add_verb, add_workspace_option
from orgtree_lang.runtime.errors import UsageError

DEFAULT_PORT = 8765


def register(commands) -> None:
    serve = add_verb(
        commands, "serve", handler=command_serve, help="browse a workspace's runs in a web page, live",
        description="Serve a small web app over the workspace: its runs; a run's org tree, updated live while it "
                    "runs, with each node's inputs, outputs, time, tokens, cost and trace events; messages; "
                    "waiting questions; the workspace's programs; skills with their docs and call history; generated "
                    "modules with highlighted source, provenance and concern ledger; the scratchpad and insights. "
                    "Every page needs the token in the URL it prints (kept in a cookie). Read-only unless "
                    "--allow-actions. Needs the [viewer] extra (docs/viewer.md).",
        examples=["pipe serve", "pipe serve --workspace examples --port 8800",
                  "pipe serve --allow-actions   # then open the URL it prints"])
    add_workspace_option(serve, help="the workspace whose .orgtree to show (default: this folder)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N",
                       help=f"the port to listen on (default: {DEFAULT_PORT}; 0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", metavar="H",
                       help="the address to listen on (default: 127.0.0.1, this machine only)")
    serve.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="also answer requests for this host name (a proxy's, say); with --host 0.0.0.0 or :: "
                            "only this machine's own names and addresses are answered otherwise")
    serve.add_argument("--allow-actions", action="store_true",
                       help="let the page start runs of the workspace's programs, answer questions and resume "
                            "runs, each with the token printed at start")


def command_serve(args) -> int:
    root = Path(args.workspace)
    if not root.is_dir():
        raise UsageError(f"no such workspace folder: {args.workspace}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port expects a number from 0 to 65535, got {args.port}")
    try:
        from orgtree_lang.viewer.app import serve
    except ImportError as err:
        raise UsageError(f"`pipe serve` needs starlette and uvicorn, which are not installed ({err})",
                         hint="install the extra: pip install 'orgtree-lang[viewer]'") from None
    try:
        serve(root, args.host, args.port, args.allow_actions, tuple(args.allow_host))
    except OSError as err:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}",
                         hint="pick another port with --port N (0 picks a free one)") from None
    return EXIT_OK
