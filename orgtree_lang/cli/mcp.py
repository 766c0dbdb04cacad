"""`pipe mcp serve`: offer a workspace's pipelines and learned skills to MCP clients (stdio, or HTTP on 127.0.0.1)."""

from __future__ import annotations

import sys
from pathlib import Path

from orgtree_lang.cli.options import (EXIT_OK, add_budget_options, add_model_options, add_sub_verbs, add_verb,
                                      add_workspace_option, budget_from_args)
from orgtree_lang.runtime.errors import UsageError


def register(commands) -> None:
    mcp = add_verb(commands, "mcp", help="serve pipelines to MCP clients (MCP servers as skills: docs/mcp.md)",
                   description="The Model Context Protocol both ways: `pipe mcp serve` offers pipelines as tools; "
                               "MCP servers listed in orgtree.toml ([mcp.servers.NAME]) are the skills "
                               "mcp.NAME.TOOL of every program that has `use mcp.NAME` (docs/mcp.md).",
                   examples=["pipe mcp serve tools/triage.pipe", "pipe mcp serve --http --port 8765"])
    actions = add_sub_verbs(mcp)
    serve = add_verb(actions, "serve", handler=command_serve,
                     help="offer pipelines and learned.* skills as MCP tools, each call a durable run",
                     description="Serve MCP on stdin/stdout (or streamable HTTP with --http): each PIPELINE_FILE's "
                                 "entry pipeline (`main`, else its only one; FILE:NAME picks another), else those "
                                 "listed in `[mcp] expose` of orgtree.toml, and every promoted learned.NAME skill "
                                 "(as tool learned_NAME). Input schemas come from the pipelines' typed parameters, "
                                 "descriptions from their docstrings. Each call is a durable run of the workspace, "
                                 "listed by `pipe runs` and shown by `pipe tree`; a failed run is a tool error "
                                 "with the .pipe message. Needs the [mcp] extra.",
                     examples=["pipe mcp serve tools/triage.pipe tools/report.pipe:weekly",
                               "pipe mcp serve --workspace ~/notes --http --port 8765   # prints the token",
                               "pipe mcp serve --socket ~/.pipe-mcp.sock   # only you may connect",
                               'claude mcp add notes -- pipe mcp serve --workspace ~/notes'])
    add_workspace_option(serve, help="the workspace whose runs, learned skills and orgtree.toml are used "
                                     "(default: this folder)")
    serve.add_argument("files", nargs="*", metavar="PIPELINE_FILE",
                       help="a .pipe file (its entry pipeline) or FILE:PIPELINE, relative to the workspace "
                            "(default: [mcp] expose of orgtree.toml)")
    serve.add_argument("--no-learned", action="store_true", help="do not offer the learned.* skills")
    serve.add_argument("--http", action="store_true",
                       help="serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio; every request "
                            "needs the bearer token printed at start (or set in $PIPE_MCP_TOKEN)")
    serve.add_argument("--socket", metavar="PATH", default=None,
                       help="serve streamable HTTP on a unix socket at PATH that only you may connect to (mode "
                            "0600), without a token")
    serve.add_argument("--port", type=int, default=8765, metavar="N",
                       help="the HTTP port (default 8765; 0 picks a free one)")
    add_budget_options(serve)
    add_model_options(serve)


def command_serve(args) -> int:
    import importlib.util

    from orgtree_lang.mcp_client.settings import INSTALL_HINT

    if importlib.util.find_spec("mcp") is None:
        raise UsageError("`pipe mcp serve` needs the `mcp` Python SDK, which is not installed", hint=INSTALL_HINT)
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.mcp_server.catalog import pipeline_tools
    from orgtree_lang.mcp_server.server import build_server, serve_http, serve_stdio
    from orgtree_lang.run.settings import RunSettings

    root = Path(args.workspace).resolve()
    if not root.is_dir():
        raise UsageError(f"no such workspace folder: {root}")
    settings = RunSettings.load(root)
    refs = args.files or settings.mcp_exposed
    registry = workspace_registry(root, config=settings.file)
    tools = pipeline_tools(root, registry, refs, learned=not args.no_learned, budget=budget_from_args(args))
    if not tools:
        raise UsageError("no pipelines to serve", hint="pass .pipe files, list them in `[mcp] expose` of "
                                                       "orgtree.toml, or promote a learned skill first")
    names = f"{len(tools)} tool{'s' if len(tools) != 1 else ''} ({', '.join(tool.name for tool in tools)})"
    server = build_server(tools, root, registry, _call_options(args, settings))
    if args.http or args.socket:
        _serve_http(args, server, names)
    else:
        print(f"pipe mcp serve: {names} on stdio", file=sys.stderr, flush=True)
        serve_stdio(server)
    return EXIT_OK


def _serve_http(args, server, names: str) -> None:
    """Streamable HTTP, never without a credential: a bearer token on 127.0.0.1, or a unix socket only you reach."""
    import os
    import secrets

    from orgtree_lang.mcp_server.server import TOKEN_VARIABLE, listen, serve_http

    token = None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port expects a number from 0 to 65535, got {args.port}")
    if args.socket is None:
        token = os.environ.get(TOKEN_VARIABLE) or secrets.token_urlsafe(32)
        if len(token) < 16:
            raise UsageError(f"${TOKEN_VARIABLE} is {len(token)} characters long; a token needs at least 16",
                             hint="unset it to get a random token, e.g. `unset PIPE_MCP_TOKEN`")
    try:
        listener = listen(args.port, Path(args.socket) if args.socket else None)
    except OSError as err:
        where = args.socket or f"127.0.0.1:{args.port}"
        raise UsageError(f"cannot listen on {where}: {err.strerror or err}",
                         hint="pick another path with --socket PATH" if args.socket else
                         "pick another port with --port N") from None

    def ready() -> None:
        if token is None:
            print(f"pipe mcp serve: {names} at http://localhost/mcp on the unix socket {args.socket} (mode 0600: "
                  f"only you may connect)", file=sys.stderr, flush=True)
        else:
            port = listener.getsockname()[1]
            print(f"pipe mcp serve: {names} at http://127.0.0.1:{port}/mcp\n"
                  f"every request needs the header `Authorization: Bearer {token}`", file=sys.stderr, flush=True)

    serve_http(server, listener, token, ready=ready)


def _call_options(args, settings):
    """The options every call's run is assembled from: the models the arguments chose (else orgtree.toml's), the
    settings read once at start, notices on stderr."""
    from orgtree_lang.cli.options import choices_from_args
    from orgtree_lang.run.options import RunOptions

    def notice(text: str, kind: str = "note") -> None:
        print(f"pipe mcp serve: {text}", file=sys.stderr, flush=True)

    return RunOptions(choices=choices_from_args(args), settings=settings, notice=notice)
