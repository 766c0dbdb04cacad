"""Check examples, expectations, assumptions and tests; turn each pipeline example into a test `pipe test` runs."""

from __future__ import annotations

from orgtree_lang.check.module import CheckedModule, PipelineInfo, is_constant
from orgtree_lang.check.typing import ExprTyper
from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.syntax import contracts as c
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.diagnostics import DiagnosticSink

# The name a pipeline's `expect` lines give its returned value.
RESULT = "result"
CONTRACT_STATEMENTS = (c.Expect, c.Assume, c.Examples, c.ExampleRun)


def test_name(decl: c.TestDecl) -> str:
    """The name a test's code object has: never a pipeline's name, so no program can call it."""
    return f'test "{decl.name}"'


def example_name(example: c.Example) -> str:
    return f"example {example.name}, line {example.span.line}"


def contract_statement(checker, stmt: n.Stmt) -> None:
    """A contract met as a statement of a body: `assume` anywhere, `expect` in tests, nothing else."""
    if isinstance(stmt, c.ExampleRun):
        returns = checker.typer.expr(stmt.call)
        if stmt.example.fails is not None:
            return
        expected = checker.typer.expr(stmt.expected)
        if checker.report and not t.is_assignable(expected, returns):
            checker.sink.error(f"pipeline `{stmt.example.name}` returns {returns}, but the example expects {expected}",
                               stmt.expected.span)
        return
    if isinstance(stmt, c.Examples):
        if checker.report:
            checker.sink.error("`examples:` belongs right after the docstring of a pipeline or ambiguous block",
                               stmt.span, "move it up, before the first statement")
        return
    if isinstance(stmt, c.Expect) and checker.info.kind != "test" and checker.report:
        checker.sink.error("`expect` states what a pipeline or ambiguous block promises: it belongs right after "
                           "the docstring (or in a test)", stmt.span,
                           "to check a condition here, write `assume CONDITION, \"why\"`")
    _condition(checker.typer, stmt, checker.sink if checker.report else None)


def _condition(typer: ExprTyper, stmt, sink: DiagnosticSink | None) -> None:
    kind = typer.expr(stmt.condition)
    if sink is None:
        return
    word = "expect" if isinstance(stmt, c.Expect) else "assume"
    if kind.kind not in ("bool", "any"):
        sink.error(f"the condition of `{word}` must be a bool, but this is {kind}", stmt.condition.span,
                   "compare it: `len(xs) > 0`, `x is not none`")
    if not (isinstance(stmt.reason, n.Const) and isinstance(stmt.reason.value, str)):
        sink.error(f"the reason after the condition of `{word}` must be a string literal", stmt.reason.span,
                   f'say why it must hold: `{word} x > 0, "a count is never negative"`')


class _Scope:
    """The names an expectation may read: a block's inputs and outputs, or a pipeline's parameters and result."""

    def __init__(self, variables: dict[str, t.PipeType]) -> None:
        self.variables = variables
        self.assigned = set(variables)


def _typer(checked: CheckedModule, registry, sink: DiagnosticSink, variables: dict[str, t.PipeType]) -> ExprTyper:
    typer = ExprTyper(checked, registry, sink, _Scope(variables))
    typer.report = True
    return typer


def check_pipeline_contracts(checked: CheckedModule, registry, sink: DiagnosticSink, info: PipelineInfo,
                             assigned: set[str]) -> None:
    """A pipeline's examples (calls of itself) and its post-conditions over parameters and `result`."""
    decl = info.decl
    if decl.expects:
        if RESULT in assigned:
            sink.error(f"pipeline `{decl.name}` has `expect` lines, where `{RESULT}` is the returned value, so it "
                       f"cannot also use `{RESULT}` as a name", decl.name_span, f"rename its `{RESULT}` variable")
        variables = {p.name: p.type for p in info.params}
        variables[RESULT] = info.returns
        typer = _typer(checked, registry, sink, variables)
        for expect in decl.expects:
            _condition(typer, expect, sink)
    for example in decl.examples:
        if example.name != decl.name:
            sink.error(f"an example of pipeline `{decl.name}` must call `{decl.name}`, not `{example.name}`",
                       example.name_span, f"write `{decl.name}(...) -> EXPECTED`")
        _fails_message(sink, example)
        if example.outputs:
            sink.error("a pipeline returns one value: its example gives one expected value", example.outputs[0].span,
                       f"write `{decl.name}(...) -> VALUE` (a record value if it returns a record)")


def _fails_message(sink: DiagnosticSink, example: c.Example) -> None:
    if example.fails is not None and not (isinstance(example.fails, n.Const) and isinstance(example.fails.value, str)):
        sink.error("the message after `fails` must be a string literal", example.fails.span,
                   f'write `{example.name}(...) -> fails "part of the error message"`')


def example_tests(checked: CheckedModule) -> list[tuple[str, n.Pipeline]]:
    """Each pipeline example as the body of a test: call the pipeline, compare with the expected value."""
    tests = []
    for info in checked.pipelines.values():
        decl = info.decl
        for example in decl.examples:
            expected = example.fails if example.fails is not None else example.result
            if example.name != decl.name or expected is None:
                continue
            call = n.Call(example.span, n.Name(example.name_span, example.name), example.args, example.keywords)
            run = c.ExampleRun(example.span, call, expected, example)
            tests.append((example_name(example),
                          n.Pipeline(example.span, example_name(example), (), None, None, (run,), example.name_span)))
    return tests


def user_tests(module: n.Module, sink: DiagnosticSink) -> list[tuple[str, n.Pipeline]]:
    tests, seen = [], set()
    for decl in module.tests:
        if decl.name in seen:
            sink.error(f'test "{decl.name}" is declared twice', decl.span, "give each test its own name")
            continue
        seen.add(decl.name)
        tests.append((test_name(decl), n.Pipeline(decl.span, test_name(decl), (), None, decl.doc, decl.body,
                                                  decl.span)))
    return tests


def check_block_contracts(checker, block: n.Ambiguous) -> None:
    """An ambiguous block's examples (constant inputs and outputs) and its post-conditions over them."""
    if not checker.report:
        return
    sink, checked = checker.sink, checker.checked
    inputs = {i.name: checked.types.get(i.type, t.ANY) for i in block.inputs}
    outputs = {o.name: checked.types.get(o.type, t.ANY) for o in block.outputs}
    typer = _typer(checked, checker.registry, sink, {**inputs, **outputs})
    for example in block.examples:
        _block_example(typer, sink, block, example, inputs, outputs)
    for expect in block.expects:
        _condition(typer, expect, sink)


def _block_example(typer: ExprTyper, sink: DiagnosticSink, block: n.Ambiguous, example: c.Example,
                   inputs: dict[str, t.PipeType], outputs: dict[str, t.PipeType]) -> None:
    if example.name != block.name:
        sink.error(f"an example of ambiguous block `{block.name}` must call `{block.name}`, not `{example.name}`",
                   example.name_span, f"write `{block.name}(...) -> EXPECTED`")
    values = [*example.args, *(k.value for k in example.keywords), *(k.value for k in example.outputs)]
    if example.result is not None:
        values.append(example.result)
    for value in values:
        if not is_constant(value):
            sink.error("the values of an ambiguous block's example must be constants (literals, or lists and dicts "
                       "of them)", value.span, "write the value out; the decomposer reads it before any code runs")
    # Every input is given, defaults included: the module's `main` takes them all as parameters.
    params = [(i.name, inputs[i.name], True) for i in block.inputs]
    call = n.Call(example.span, n.Name(example.name_span, block.name), example.args, example.keywords)
    arg_types = [typer.expr(a) for a in example.args]
    kw_types = {k.name: typer.expr(k.value) for k in example.keywords}
    typer._check_arguments(call, f"ambiguous block `{block.name}`", params, arg_types, kw_types)
    if example.fails is not None:
        _fails_message(sink, example)
        return
    if example.result is not None:
        if len(outputs) != 1:
            names = ", ".join(f"{name}=..." for name in outputs)
            sink.error(f"ambiguous block `{block.name}` has {len(outputs)} outputs: name each expected value",
                       example.result.span, f"write `{block.name}(...) -> {names}`")
            return
        expected = {next(iter(outputs)): example.result}
    else:
        expected = {k.name: k.value for k in example.outputs}
        missing = [name for name in outputs if name not in expected]
        for k in example.outputs:
            if k.name not in outputs:
                sink.error(f"ambiguous block `{block.name}` has no output `{k.name}`", k.span,
                           "its outputs are " + ", ".join(f"`{name}`" for name in outputs))
        if missing:
            sink.error(f"the example gives no value for output(s) {', '.join(missing)}", example.span,
                       "give every output a value")
    for name, value in expected.items():
        if name in outputs:
            got = typer.expr(value)
            if not t.is_assignable(got, outputs[name]):
                sink.error(f"output `{name}` is {outputs[name]}, but the example gives {got}", value.span)


def value_names(expr: n.Expr) -> list[str]:
    """The variables an expression reads (not the names it calls), each once, in order."""
    called: set[int] = set()
    for node in expr.walk():
        if isinstance(node, n.Call):
            called.update(id(x) for x in node.func.walk())
    names: list[str] = []
    for node in expr.walk():
        if isinstance(node, n.Name) and id(node) not in called and node.id not in names and node.id not in BUILTINS:
            names.append(node.id)
    return names


__all__ = ["CONTRACT_STATEMENTS", "RESULT", "check_block_contracts", "check_pipeline_contracts",
           "contract_statement", "example_tests", "user_tests", "value_names"]
