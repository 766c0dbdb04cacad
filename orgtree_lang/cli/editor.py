"""`pipe lsp`: start the language server that editors talk to over stdin and stdout."""

from __future__ import annotations

from orgtree_lang.cli.options import EXIT_OK, add_verb
from orgtree_lang.syntax.errors import UsageError


def register(commands) -> None:
    lsp = add_verb(commands, "lsp", handler=command_lsp, help="serve the .pipe language server to an editor",
                   description="Speak the Language Server Protocol on stdin/stdout: diagnostics from the checker "
                               "as you type, hover, go to definition, completion, formatting (as `pipe fmt`) and "
                               "an outline. Editors start it themselves (editors/vscode/, docs/editor.md); it needs "
                               "the [lsp] extra.",
                   examples=["pipe lsp", "pipe lsp --stdio"])
    # vscode-languageclient adds --stdio to the command it starts; stdio is the only transport anyway.
    lsp.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only way)")


def command_lsp(args) -> int:
    try:
        from orgtree_lang.lsp.server import serve
    except ImportError as err:
        raise UsageError(f"`pipe lsp` needs pygls, which is not installed ({err})",
                         hint="install the extra: pip install 'orgtree-lang[lsp]'") from None
    serve()
    return EXIT_OK
