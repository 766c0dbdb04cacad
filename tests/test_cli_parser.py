"""The `pipe` parser as one tree: every verb documented with an example, shared options validated alike."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from orgtree_lang.cli.main import build_parser
from orgtree_lang.cli.options import add_sub_verbs, add_verb

pytestmark = pytest.mark.fast

CLI_DIR = Path(__file__).resolve().parent.parent / "orgtree_lang" / "cli"


def _verbs(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, one-line help, parser) for every verb and sub-verb under `parser`, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action._name_parser_map.items():
                yield path + (name,), helps.get(name), sub
                yield from _verbs(sub, path + (name,))


def _undocumented(parser: argparse.ArgumentParser) -> list[str]:
    problems = []
    for path, summary, sub in _verbs(parser):
        text = sub.format_help()
        if not summary:
            problems.append(f"pipe {' '.join(path)}: no one-line help")
        if "example" not in text or f"pipe {' '.join(path)}" not in text.split("example", 1)[1]:
            problems.append(f"pipe {' '.join(path)}: no example in --help")
    return problems


def test_every_verb_and_sub_verb_has_help_and_an_example():
    parser = build_parser()
    verbs = [" ".join(path) for path, _, _ in _verbs(parser)]
    assert {"run", "check", "resume", "ctx search", "modules show", "pad show", "skills history",
            "skills export"} <= set(verbs)
    assert _undocumented(parser) == []


def test_the_walk_would_notice_a_verb_without_an_example_or_help():
    parser = argparse.ArgumentParser(prog="pipe")
    commands = parser.add_subparsers(dest="command")
    group = add_verb(commands, "good", help="a verb", description="A verb.", examples=["pipe good now"])
    add_verb(add_sub_verbs(group), "inner", help="", description="No help.", examples=["pipe good inner"])
    commands.add_parser("bare", help="a verb without examples")
    assert _undocumented(parser) == ["pipe good inner: no one-line help", "pipe bare: no example in --help"]


@pytest.mark.parametrize("verb", [["run", "p.pipe"], ["resume", "r1"], ["retry", "r1", "--node", "main"],
                                  ["fork", "r1", "--at", "0"]])
@pytest.mark.parametrize("flag", ["--max-steps", "--max-seconds", "--max-skill-calls", "--max-tokens", "--max-cost"])
@pytest.mark.parametrize("value", ["0", "-3"])
def test_budget_flags_take_only_numbers_above_zero_on_every_verb(verb, flag, value, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([*verb, f"{flag}={value}"])
    assert stop.value.code == 2
    assert f"argument {flag}: expected a number above 0, got {value}" in capsys.readouterr().err


def test_budget_flags_parse_the_same_on_run_and_resume():
    flags = ["--max-steps", "5", "--max-seconds", "1.5", "--max-skill-calls", "2", "--max-tokens", "9",
             "--max-cost", "0.25"]
    run = build_parser().parse_args(["run", "p.pipe", *flags])
    resume = build_parser().parse_args(["resume", "r1", *flags])
    wanted = (5, 1.5, 2, 9, 0.25)
    for args in (run, resume):
        assert (args.max_steps, args.max_seconds, args.max_skill_calls, args.max_tokens, args.max_cost) == wanted


def test_skills_takes_a_skill_name_or_an_action():
    parser = build_parser()
    shown = parser.parse_args(["skills", "text.split", "--json"])
    assert (shown.name, shown.json, shown.handler.__name__) == ("text.split", True, "command_skills")
    listed = parser.parse_args(["skills", "--workspace", "w"])
    assert (listed.name, listed.workspace, listed.handler.__name__) == (None, "w", "command_skills")
    history = parser.parse_args(["skills", "history", "text.split", "--limit", "3"])
    assert (history.action, history.name, history.limit) == ("history", "text.split", 3)
    assert history.handler is not shown.handler
    assert history.workspace == "."


@pytest.mark.parametrize("argv", [["skills", "--workspace", "w", "history", "text.split"],
                                  ["skills", "history", "text.split", "--workspace", "w"]])
def test_skills_actions_take_the_workspace_before_or_after_the_action(argv):
    assert build_parser().parse_args(argv).workspace == "w"


def test_skills_refuses_two_names(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["skills", "text.split", "text.join"])
    assert "expected one skill NAME, got `text.split` and `text.join`" in capsys.readouterr().err


def test_verb_modules_never_import_the_entry_point():
    # main.py lists the verb modules; a verb importing main back would make the import cycle this layout removed.
    offenders = []
    for path in sorted(CLI_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "orgtree_lang.cli.main":
                offenders.append(path.name)
    assert offenders == []
