"""Check a parsed Module against a skill registry: resolve declarations and types, collect every diagnostic."""

from __future__ import annotations

from dataclasses import dataclass, field

from orgtree_lang.runtime.builtins import (BUILTINS, ERROR_FIELDS, ERROR_RECORD, HANDLE_FIELDS, HANDLE_RECORD,
                                           MESSAGE_FIELDS, MESSAGE_RECORD)
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.diagnostics import CompileError, Diagnostic, DiagnosticSink, did_you_mean


@dataclass(frozen=True)
class CallTarget:
    """What a call expression resolves to."""

    kind: str  # "builtin" | "skill" | "pipeline" | "record" | "human" (ask/approve: vm.people) | "receive"
    name: str


@dataclass
class RecordInfo:
    name: str
    fields: dict[str, t.PipeType]
    defaults: dict[str, n.Expr]
    doc: str | None = None


@dataclass
class ParamInfo:
    name: str
    type: t.PipeType
    default: n.Expr | None


@dataclass
class PipelineInfo:
    name: str
    params: list[ParamInfo]
    returns: t.PipeType
    decl: n.Pipeline
    kind: str = "pipeline"  # or "test": a `test` block or a pipeline example, run by `pipe test`


@dataclass
class CheckedModule:
    """A module that passed the checker, with everything the compiler needs resolved."""

    module: n.Module
    source: str
    uses: list[str]
    records: dict[str, RecordInfo]
    pipelines: dict[str, PipelineInfo]
    tests: dict[str, PipelineInfo] = field(default_factory=dict)
    routes: dict[str, str | None] = field(default_factory=dict)  # topic -> pipeline (None: orgtree.toml names it)
    calls: dict[n.Call, CallTarget] = field(default_factory=dict)
    types: dict[n.TypeExpr, t.PipeType] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def type_of(self, expr: n.TypeExpr | None) -> t.PipeType:
        return t.NONE if expr is None else self.types[expr]


def check(module: n.Module, registry, source: str) -> CheckedModule:
    """Check a module; raise CompileError carrying all errors (and warnings) if any error was found."""
    sink = DiagnosticSink(module.file)
    checked = CheckedModule(module, source, [], {}, {})
    _declare_records(module, checked, sink)
    _declare_uses(module, checked, registry, sink)
    _declare_pipelines(module, checked, sink)
    from orgtree_lang.check.routes import declare_routes

    declare_routes(module, checked, sink)
    from orgtree_lang.check.contracts import check_pipeline_contracts, example_tests, user_tests
    from orgtree_lang.check.pipeline import PipelineChecker

    for info in checked.pipelines.values():
        checker = PipelineChecker(checked, registry, sink, info)
        checker.run()
        check_pipeline_contracts(checked, registry, sink, info, checker.assigned)
    for name, decl in sorted(user_tests(module, sink) + example_tests(checked), key=lambda test: test[1].span.line):
        checked.tests[name] = PipelineInfo(name, [], t.NONE, decl, kind="test")
        PipelineChecker(checked, registry, sink, checked.tests[name]).run()
    if sink.has_errors:
        raise CompileError(sink.items, {module.file: source})
    checked.diagnostics = sink.items
    return checked


def resolve_type(expr: n.TypeExpr, records, sink: DiagnosticSink, checked: CheckedModule) -> t.PipeType:
    """Turn a written type into a PipeType, reporting unknown names and wrong arities."""
    result = _resolve(expr, records, sink)
    checked.types[expr] = result
    return result


def _resolve(expr: n.TypeExpr, records, sink: DiagnosticSink) -> t.PipeType:
    name, args = expr.name, expr.args
    if name == "list":
        if len(args) > 1:
            sink.error(f"`list` takes one type argument, got {len(args)}", expr.span, "write `list[T]`")
        result = t.list_of(_resolve(args[0], records, sink) if args else t.ANY)
    elif name == "dict":
        if len(args) == 1:
            value = _resolve(args[0], records, sink)
        elif len(args) == 2:
            if args[0].name != "str" or args[0].args or args[0].optional:
                sink.error(f"dict keys must be `str`, got `{args[0]}`", args[0].span, "write `dict[str, T]`")
            value = _resolve(args[1], records, sink)
        else:
            if args:
                sink.error(f"`dict` takes two type arguments, got {len(args)}", expr.span, "write `dict[str, T]`")
            value = t.ANY
        result = t.dict_of(value)
    elif name in t.PRIMITIVES:
        if args:
            sink.error(f"`{name}` takes no type arguments", expr.span)
        result = t.primitive(name)
    elif name in records or name in (ERROR_RECORD, HANDLE_RECORD, MESSAGE_RECORD):
        result = t.record(name)
    else:
        candidates = list(t.PRIMITIVES) + ["list", "dict"] + list(records)
        sink.error(f"unknown type `{name}`", expr.span, did_you_mean(name, candidates))
        result = t.ANY
    return t.optional(result) if expr.optional else result


def _declare_records(module: n.Module, checked: CheckedModule, sink: DiagnosticSink) -> None:
    names = {r.name for r in module.records}
    checked.records[ERROR_RECORD] = RecordInfo(ERROR_RECORD, dict(ERROR_FIELDS), {}, "A caught runtime error.")
    checked.records[HANDLE_RECORD] = RecordInfo(HANDLE_RECORD, dict(HANDLE_FIELDS), {}, "A spawned node (`spawn`).")
    checked.records[MESSAGE_RECORD] = RecordInfo(MESSAGE_RECORD, dict(MESSAGE_FIELDS), {},
                                                 "A message a node received (`receive`).")
    for decl in module.records:
        if decl.name in checked.records:
            sink.error(f"record `{decl.name}` is declared twice", decl.span)
            continue
        if decl.name in BUILTINS:
            sink.error(f"record `{decl.name}` shadows the built-in `{decl.name}`", decl.span, "choose another name")
        info = RecordInfo(decl.name, {}, {}, decl.doc)
        for f in decl.fields:
            if f.name in info.fields:
                sink.error(f"field `{f.name}` is declared twice in record `{decl.name}`", f.span)
                continue
            info.fields[f.name] = resolve_type(f.type, names, sink, checked)
            if f.default is not None:
                _require_constant(f.default, sink, "a field default")
                info.defaults[f.name] = f.default
        checked.records[decl.name] = info


def _declare_uses(module: n.Module, checked: CheckedModule, registry, sink: DiagnosticSink) -> None:
    namespaces = registry.namespaces()
    for use in module.uses:
        if use.name in checked.uses:
            sink.warning(f"`use {use.name}` appears twice", use.span)
            continue
        if use.name not in namespaces and registry.get(use.name) is None:
            hint = did_you_mean(use.name, sorted(namespaces) + registry.names())
            if use.name.startswith("mcp.") and use.name.count(".") == 1:
                server = use.name.split(".")[1]
                hint = (f"{hint + ' Else: ' if hint else ''}MCP servers are declared in the workspace's orgtree.toml:"
                        f" add a table [mcp.servers.{server}] with `command = [...]` or `url = \"...\"` (docs/mcp.md)")
            sink.error(f"unknown skill or namespace `{use.name}`", use.span,
                       hint or "`pipe skills` lists every skill that is installed")
        checked.uses.append(use.name)


def _declare_pipelines(module: n.Module, checked: CheckedModule, sink: DiagnosticSink) -> None:
    for decl in module.pipelines:
        if decl.name in checked.pipelines:
            sink.error(f"pipeline `{decl.name}` is declared twice", decl.name_span)
            continue
        if decl.name in BUILTINS or decl.name in checked.records:
            sink.error(f"pipeline `{decl.name}` shadows the {'built-in' if decl.name in BUILTINS else 'record'} "
                       f"`{decl.name}`", decl.name_span, "choose another name")
        params: list[ParamInfo] = []
        seen_default = False
        for p in decl.params:
            if any(existing.name == p.name for existing in params):
                sink.error(f"parameter `{p.name}` is declared twice", p.span)
                continue
            if p.default is not None:
                seen_default = True
                _require_constant(p.default, sink, "a parameter default")
            elif seen_default:
                sink.error(f"parameter `{p.name}` without a default follows one with a default", p.span,
                           "put parameters with defaults last")
            params.append(ParamInfo(p.name, resolve_type(p.type, checked.records, sink, checked), p.default))
        returns = resolve_type(decl.returns, checked.records, sink, checked) if decl.returns else t.NONE
        checked.pipelines[decl.name] = PipelineInfo(decl.name, params, returns, decl)


def is_constant(expr: n.Expr) -> bool:
    if isinstance(expr, n.Const):
        return True
    if isinstance(expr, n.UnaryOp) and expr.op in "-+":
        return isinstance(expr.operand, n.Const) and isinstance(expr.operand.value, (int, float))
    if isinstance(expr, n.ListExpr):
        return all(is_constant(i) for i in expr.items)
    if isinstance(expr, n.DictExpr):
        return all(isinstance(k, n.Const) and isinstance(k.value, str) for k in expr.keys) and all(
            is_constant(v) for v in expr.values
        )
    return False


def _require_constant(expr: n.Expr, sink: DiagnosticSink, what: str) -> None:
    if not is_constant(expr):
        sink.error(f"{what} must be a constant (a literal, or a list or dict of literals)", expr.span,
                   "compute the value inside the pipeline instead")
