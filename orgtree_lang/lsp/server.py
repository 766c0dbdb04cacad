"""`pipe lsp`: a pygls language server on stdio that answers an editor's requests from the analysis, reference,
navigation, completion and outline modules of this package, converting spans to LSP ranges."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from orgtree_lang import __version__
from orgtree_lang.lsp import complete, navigate, outline, signature
from orgtree_lang.lsp.analysis import Analysis, analyse, workspace_root
from orgtree_lang.lsp.incremental import IncrementalParser
from orgtree_lang.lsp.references import reference_at
from orgtree_lang.lsp.skills import WorkspaceSkills
from orgtree_lang.syntax.diagnostics import Diagnostic
from orgtree_lang.syntax.spans import Span

_SYMBOL_KINDS = {"record": lsp.SymbolKind.Struct, "field": lsp.SymbolKind.Field,
                 "pipeline": lsp.SymbolKind.Function, "block": lsp.SymbolKind.Interface,
                 "label": lsp.SymbolKind.Key}
_COMPLETION_KINDS = {"keyword": lsp.CompletionItemKind.Keyword, "builtin": lsp.CompletionItemKind.Function,
                     "type": lsp.CompletionItemKind.TypeParameter, "namespace": lsp.CompletionItemKind.Module,
                     "skill": lsp.CompletionItemKind.Method, "pipeline": lsp.CompletionItemKind.Function,
                     "record": lsp.CompletionItemKind.Struct}


class PipeLanguageServer(LanguageServer):
    """Keeps the latest analysis of each open document and what navigation reads: the module of this version, or
    while a line is half-typed the declarations that parse with the last good tree of the others."""

    def __init__(self) -> None:
        super().__init__("pipe-lsp", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.skills = WorkspaceSkills()
        self.analyses: dict[str, Analysis] = {}
        self.parsed: dict[str, Analysis] = {}  # what hover, definition and the outline read (Analysis.for_navigation)
        self.parsers: dict[str, IncrementalParser] = {}

    def document_file(self, document: TextDocument) -> Path:
        return Path(document.path if document.path else to_fs_path(document.uri) or "untitled.pipe")

    def refresh(self, uri: str) -> None:
        """Analyse the document's current text and publish every diagnostic of it."""
        document = self.workspace.get_text_document(uri)
        file = self.document_file(document)
        parser = self.parsers.setdefault(uri, IncrementalParser())
        root = workspace_root(file)
        analysis = analyse(document.source, str(file), self.skills.registry(root), parser)
        # A workspace skill module that did not load is said at the top of every document of the workspace.
        analysis.diagnostics[:0] = [Diagnostic("error", err.message, Span(str(file), 1, 1, 1, 1), err.hint)
                                    for err in self.skills.problems(root)]
        self.analyses[uri] = analysis
        # Navigation answers from this version's declarations that parse (and the last good tree of the one being
        # typed); only when none is known does it fall back to the last version that parsed.
        navigation = analysis.for_navigation()
        if navigation is not None:
            self.parsed[uri] = navigation
        diagnostics = [_diagnostic(document, d) for d in analysis.diagnostics]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version))

    def at(self, uri: str, position: lsp.Position):
        """The document, its file, its last parsed analysis and the 1-based (line, col) of a client position."""
        document = self.workspace.get_text_document(uri)
        server = document.position_from_client_units(position)
        return document, self.document_file(document), self.parsed.get(uri), server.line + 1, server.character + 1


server = PipeLanguageServer()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: PipeLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.refresh(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: PipeLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.refresh(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: PipeLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
    # A saved file may be a learned module, or the pool may have changed since: every open document is checked
    # again against the skills its workspace has now.
    for uri in list(ls.analyses):
        ls.refresh(uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: PipeLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.analyses.pop(uri, None)
    ls.parsed.pop(uri, None)
    ls.parsers.pop(uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: PipeLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    document, file, analysis, line, col = ls.at(params.text_document.uri, params.position)
    if analysis is None:
        return None
    registry = ls.skills.registry(workspace_root(file))
    ref = reference_at(analysis.module, analysis.lines, registry, line, col)
    text = navigate.hover_text(ref, analysis.module, registry, file) if ref is not None else None
    if text is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                     range=_range(document, ref.span))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def definition(ls: PipeLanguageServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    document, file, analysis, line, col = ls.at(params.text_document.uri, params.position)
    if analysis is None:
        return None
    registry = ls.skills.registry(workspace_root(file))
    ref = reference_at(analysis.module, analysis.lines, registry, line, col)
    place = navigate.definition(ref, analysis.module, analysis.lines, registry, file) if ref else None
    if place is None:
        return None
    if place.path is not None:
        start = lsp.Position(line=0, character=0)
        return lsp.Location(uri=place.path.resolve().as_uri(), range=lsp.Range(start=start, end=start))
    return lsp.Location(uri=params.text_document.uri, range=_range(document, place.span))


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["."]))
def completion(ls: PipeLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    document, file, analysis, line, col = ls.at(params.text_document.uri, params.position)
    prefix = document.lines[line - 1][:col - 1] if line <= len(document.lines) else ""
    module = analysis.module if analysis is not None else None
    found = complete.candidates(prefix, module, ls.skills.registry(workspace_root(file)))
    items = [lsp.CompletionItem(label=c.label, kind=_COMPLETION_KINDS[c.kind], detail=c.detail or None,
                                documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=c.documentation)
                                if c.documentation else None)
             for c in found]
    return lsp.CompletionList(is_incomplete=False, items=items)


@server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP, lsp.SignatureHelpOptions(trigger_characters=["(", ","]))
def signature_help(ls: PipeLanguageServer, params: lsp.SignatureHelpParams) -> lsp.SignatureHelp | None:
    document, file, analysis, line, col = ls.at(params.text_document.uri, params.position)
    prefix = document.lines[line - 1][:col - 1] if line <= len(document.lines) else ""
    module = analysis.module if analysis is not None else None
    found = signature.signature_at(prefix, module, ls.skills.registry(workspace_root(file)))
    if found is None:
        return None
    parameters = [lsp.ParameterInformation(label=span) for span in found.parameters]
    documentation = lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=found.documentation) \
        if found.documentation else None
    return lsp.SignatureHelp(signatures=[lsp.SignatureInformation(label=found.label, documentation=documentation,
                                                                  parameters=parameters)],
                             active_signature=0, active_parameter=found.active)


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
def formatting(ls: PipeLanguageServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
    """The whole document as `pipe fmt` prints it; nothing while it does not parse (its diagnostics say why)."""
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.syntax.formatter import format_source

    document = ls.workspace.get_text_document(params.text_document.uri)
    try:
        formatted = format_source(document.source, str(ls.document_file(document)))
    except CompileError:
        return None
    if formatted == document.source:
        return []
    lines = document.lines
    if not lines or lines[-1].endswith("\n"):  # the end of the text is the start of the line after the last
        end = lsp.Position(line=len(lines), character=0)
    else:
        end = document.position_to_client_units(ServerTextPosition(len(lines) - 1, len(lines[-1])))
    return [lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=formatted)]


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(ls: PipeLanguageServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
    uri = params.text_document.uri
    analysis = ls.parsed.get(uri)
    if analysis is None:
        return []
    document = ls.workspace.get_text_document(uri)
    return [_symbol(document, s) for s in outline.outline(analysis.module, analysis.lines)]


def _symbol(document: TextDocument, symbol: outline.Symbol) -> lsp.DocumentSymbol:
    return lsp.DocumentSymbol(name=symbol.name, kind=_SYMBOL_KINDS[symbol.kind], detail=symbol.detail,
                              range=_range(document, symbol.span),
                              selection_range=_range(document, symbol.name_span),
                              children=[_symbol(document, child) for child in symbol.children])


def _range(document: TextDocument, span: Span) -> lsp.Range:
    """A 1-based span with an exclusive end column as an LSP range in the client's position units."""
    if span.line < 1:
        start = lsp.Position(line=0, character=0)
        return lsp.Range(start=start, end=start)
    start = ServerTextPosition(span.line - 1, max(span.col - 1, 0))
    end = max(start, ServerTextPosition(max(span.end_line - 1, 0), max(span.end_col - 1, 0)))
    return document.range_to_client_units(ServerTextRange(start, end))


def _diagnostic(document: TextDocument, diagnostic) -> lsp.Diagnostic:
    severity = lsp.DiagnosticSeverity.Error if diagnostic.severity == "error" else lsp.DiagnosticSeverity.Warning
    message = diagnostic.message + (f"\nhint: {diagnostic.hint}" if diagnostic.hint else "")
    return lsp.Diagnostic(range=_range(document, diagnostic.span), message=message, severity=severity,
                          source="pipe")


def serve() -> None:
    server.start_io()
