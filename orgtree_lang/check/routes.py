"""Routes and sends: `route "topic" -> pipeline` declarations, and the target and topic of each `send`, checked."""

from __future__ import annotations

from orgtree_lang.runtime.builtins import HANDLE_RECORD
from orgtree_lang.runtime.people import HUMAN
from orgtree_lang.runtime.routes import handler_problem
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.diagnostics import DiagnosticSink, did_you_mean

_CONFIG_HINT = "or `route \"{topic}\"` alone to take its pipeline from orgtree.toml's [org] routes"


def declare_routes(module: n.Module, checked, sink: DiagnosticSink) -> None:
    """Fill `checked.routes` (topic -> pipeline, or None when orgtree.toml names it) from the module's routes."""
    for route in module.routes:
        if route.topic in checked.routes:
            sink.error(f'route "{route.topic}" is declared twice', route.topic_span,
                       "a topic has one pipeline; remove one of the two lines")
            continue
        if route.topic == HUMAN:
            sink.error('"human" cannot be routed: `send "human", note` puts a note in `pipe inbox`', route.topic_span,
                       "choose another topic for the route")
            continue
        if not route.topic.strip():
            sink.error("a route's topic cannot be empty", route.topic_span, 'write e.g. `route "billing" -> desk`')
            continue
        checked.routes[route.topic] = route.pipeline
        if route.pipeline is not None:
            _check_handler(route, checked, sink)


def _check_handler(route: n.Route, checked, sink: DiagnosticSink) -> None:
    """The route's pipeline exists and takes a message as its first parameter (any others have defaults)."""
    info = checked.pipelines.get(route.pipeline)
    if info is None:
        known = ", ".join(sorted(checked.pipelines)) or "none"
        sink.error(f'route "{route.topic}" -> {route.pipeline}: this module has no pipeline `{route.pipeline}`',
                   route.pipeline_span,
                   did_you_mean(route.pipeline, checked.pipelines) or f"its pipelines: {known}")
        return
    problem = handler_problem([(p.name, p.type, p.default is not None) for p in info.params])
    if problem is not None:
        sink.error(f'route "{route.topic}" -> {route.pipeline}: {problem}', route.pipeline_span,
                   f"a route's pipeline is started with the message as its first argument: write "
                   f"`pipeline {route.pipeline}(m: Message) -> ...`")


def check_send(pipeline_checker, stmt: n.Send) -> None:
    """A send's target is a Handle, `parent`, "human" or a routed topic (a literal must be declared); its topic
    is a str."""
    typer = pipeline_checker.typer
    checked = pipeline_checker.checked
    target = stmt.target
    if not (isinstance(target, n.Name) and target.id == "parent" and "parent" not in pipeline_checker.assigned):
        kind = typer.expr(target)
        if isinstance(target, n.Const) and isinstance(target.value, str):
            _check_topic_literal(target, checked, typer)
        elif not (t.is_assignable(kind, t.record(HANDLE_RECORD)) or t.is_assignable(kind, t.STR)):
            typer.error(f"`send` needs a Handle (what `spawn` gives), `parent`, a route's topic or \"human\", "
                        f"got {kind}", target.span, 'write `send h, body`, `send parent, body` or `send "topic", body`')
    typer.expr(stmt.body)
    if stmt.topic is not None:
        kind = typer.expr(stmt.topic)
        if not t.is_assignable(kind, t.STR):
            typer.error(f"`topic=` of `send` must be a str, got {kind}", stmt.topic.span,
                        'write e.g. `topic="refund"`')


def _check_topic_literal(target: n.Const, checked, typer) -> None:
    topic = target.value
    if topic == HUMAN or topic in checked.routes:
        return
    known = ", ".join(f'"{name}"' for name in sorted(checked.routes)) or "none"
    hint = did_you_mean(topic, checked.routes)
    hint = (hint + "; " if hint else "") + f'declare `route "{topic}" -> some_pipeline` at the top level, ' + \
        _CONFIG_HINT.format(topic=topic)
    typer.error(f'`send "{topic}", ...`: no route for topic "{topic}" (known routes: {known})', target.span, hint)
