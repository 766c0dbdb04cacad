"""One error family: every user-facing error derives from PipeError, renders itself and carries its exit code."""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

import orgtree_lang
from orgtree_lang.cli.main import main
from orgtree_lang.runtime.errors import PipeError, PipeRuntimeError, StackEntry, UsageError
from orgtree_lang.syntax.diagnostics import CompileError, Diagnostic
from orgtree_lang.syntax.spans import Span

# Exceptions that never reach a user: a compiler invariant (an AssertionError on purpose) and private control flow.
# (WaitingForHuman: the top-level machine turns it into the run's status `waiting`; RunClosed: stops a thread still
# resolving a block for a run that has ended, org/runlock.py; Replan: a block node's decision to revise its module,
# caught by the decomposer, decompose/messages.py.)
# Control flow inside one module, caught where it is raised and never shown to a user: the parser's LALR driver
# hands a refused input (Rejected) or a rule it cannot mirror (Unsupported) to Lark's own parse in syntax/parser.py.
NOT_FOR_USERS = {"orgtree_lang.compile.stack.StackError", "orgtree_lang.decompose.coerce._NoCoercion",
                 "orgtree_lang.vm.questions.WaitingForHuman", "orgtree_lang.org.runlock.RunClosed",
                 "orgtree_lang.syntax.lalr.Rejected", "orgtree_lang.syntax.lalr.Unsupported",
                 "orgtree_lang.vm.blocks.Replan",
                 # the stdio MCP session's failure: McpConnection turns it into the call's SkillError
                 "orgtree_lang.mcp_client.stdio.McpProtocolError"}
PACKAGE = Path(orgtree_lang.__file__).parent


def _error_classes() -> dict[str, set[str]]:
    """Every class the project defines whose name or bases look like an error, by qualified name, with the simple
    names of its bases; read from the source, so nothing heavy is imported."""
    import orgtree_lang.stdlib

    found: dict[str, set[str]] = {}
    stdlib = Path(orgtree_lang.stdlib.__file__).parent
    paths = [(path, PACKAGE.parent) for path in PACKAGE.rglob("*.py")] + \
        [(path, stdlib.parent) for path in stdlib.rglob("*.py")]
    for path, root in sorted(paths):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "") for base in node.bases}
                found[f"{module}.{node.name}"] = bases
    return found


def _derives_from(name: str, base: str, classes: dict[str, set[str]]) -> bool:
    by_simple_name = {qualified.rsplit(".", 1)[1]: bases for qualified, bases in classes.items()}
    todo, seen = list(classes[name]), set()
    while todo:
        current = todo.pop()
        if current == base:
            return True
        if current not in seen:
            seen.add(current)
            todo.extend(by_simple_name.get(current, ()))
    return False


def test_every_error_class_of_the_project_is_a_pipe_error():
    classes = _error_classes()
    builtin_errors = {name for name in dir(builtins) if isinstance(getattr(builtins, name), type)
                      and issubclass(getattr(builtins, name), BaseException)}
    errors = [name for name in classes if any(_derives_from(name, b, classes) for b in builtin_errors)]
    assert len(errors) >= 20
    outside = {name for name in errors if not _derives_from(name, "PipeError", classes)}
    outside.discard("orgtree_lang.syntax.errors.PipeError")
    assert outside == NOT_FOR_USERS


def _exception_classes() -> dict[str, type]:
    classes = {}
    for name in EXIT_CODES:
        module, attr = name.rsplit(".", 1)
        classes[name] = getattr(importlib.import_module(module), attr)
    return classes


EXIT_CODES = {
    "orgtree_lang.syntax.diagnostics.CompileError": 65,
    "orgtree_lang.runtime.errors.PipeRuntimeError": 70,
    "orgtree_lang.durable.effects.NonDeterminismError": 70,
    "orgtree_lang.runtime.errors.SkillError": 70,
    "orgtree_lang.models.base.ModelError": 70,
    "orgtree_lang.review.errors.ReviewError": 70,
    "orgtree_lang.runtime.inputs.InputError": 2,
    "orgtree_lang.runtime.config.ConfigError": 2,
    "orgtree_lang.durable.journal.JournalError": 2,
    "orgtree_lang.pool.store.PoolError": 2,
    "orgtree_lang.memory.memory.MemoryInputError": 2,
}


@pytest.mark.parametrize("name, code", EXIT_CODES.items())
def test_each_error_carries_the_exit_code_of_design_section_4(name, code):
    assert _exception_classes()[name].exit_code == code


def test_a_plain_error_renders_command_message_hint_and_notes():
    err = UsageError("no run `zzz` in .orgtree/runs", hint="`pipe runs` lists them")
    err.add_note("see docs/durability.md")
    assert err.render("pipe resume") == ("pipe resume: no run `zzz` in .orgtree/runs\n"
                                         "  = hint: `pipe runs` lists them\n"
                                         "see docs/durability.md")
    assert str(err) == "no run `zzz` in .orgtree/runs" and err.exit_code == 2


def test_a_runtime_error_renders_location_source_line_hint_and_pipe_call_stack():
    source = "pipeline main(n: int) -> int:\n    return half(n)\n\npipeline half(n: int) -> int:\n    return n // 0\n"
    err = PipeRuntimeError("division by zero", kind="arithmetic", span=Span("a.pipe", 5, 12, 5, 18),
                           hint="check the divisor first",
                           stack=[StackEntry(Span("a.pipe", 2, 12, 2, 19), "main"),
                                  StackEntry(Span("a.pipe", 5, 12, 5, 18), "half")],
                           source=source)
    assert err.render() == ("runtime error: division by zero\n"
                            "  --> a.pipe:5:12\n"
                            "     5 |     return n // 0\n"
                            "       |            ^~~~~~\n"
                            "  = hint: check the divisor first\n"
                            ".pipe call stack (most recent call last):\n"
                            "  a.pipe:5: in half\n"
                            "  a.pipe:2: in main")


def test_a_runtime_error_shows_its_python_cause_only_when_debugging():
    try:
        try:
            {}["key"]
        except KeyError as cause:
            raise PipeRuntimeError("skill crashed") from cause
    except PipeRuntimeError as caught:
        err = caught
    assert "Traceback" not in err.render()
    assert "Python traceback (--debug):" in err.render(debug=True) and "KeyError: 'key'" in err.render(debug=True)


def test_a_compile_error_renders_every_diagnostic():
    source = "pipeline main() -> int:\n    return y\n"
    err = CompileError([Diagnostic("error", "undefined name `y`", Span("b.pipe", 2, 12, 2, 13), "define it")],
                       {"b.pipe": source})
    assert err.render("pipe run") == ("b.pipe:2:12: error: undefined name `y`\n"
                                      "   2 |     return y\n"
                                      "     |            ^\n"
                                      "  = hint: define it\n"
                                      "1 error generated.")


def test_the_cli_renders_an_error_from_any_verb_with_its_exit_code(tmp_path, capsys):
    assert main(["tree", "--workspace", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"pipe tree: no runs recorded in {tmp_path.resolve()} " \
                                      f"(no {tmp_path / '.orgtree' / 'state.db'})\n"
    assert main(["ctx", "show", "99", "--workspace", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("pipe ctx show: there is no memory node #99")


def test_a_bug_in_orgtree_lang_is_an_internal_error_not_a_traceback(tmp_path, capsys, monkeypatch):
    from orgtree_lang.cli import tools

    def crash(args):
        return {}["boom"]

    monkeypatch.setattr(tools, "command_check", crash)  # stands for any bug behind any verb
    assert main(["check", str(tmp_path / "p.pipe")]) == 70
    err = capsys.readouterr().err
    assert err.startswith("internal error: KeyError: 'boom'\n  = this is a bug in orgtree_lang")
    assert "Traceback" not in err
    assert main(["check", "--debug", str(tmp_path / "p.pipe")]) == 70
    assert "Traceback (most recent call last)" in capsys.readouterr().err
