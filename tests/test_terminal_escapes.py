"""Program-controlled text reaches a person's terminal with its control characters spelled out: a question, a
printed line, a message or an error cannot rewrite what `pipe run`, `pipe inbox`, `pipe show`, `pipe tree` or
`pipe messages` shows (a carriage return plus an erase sequence), nor act on the terminal (OSC sequences)."""

from __future__ import annotations

import json

from cli_testing import pipe

from orgtree_lang.runtime.printable import printable

# Erase the line and write another question over it; set the window title; a hidden link; a bidi override.
HOSTILE = "Ship to production?\r\x1b[2KShip to staging?\x1b]0;owned\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\u202e"
PROGRAM = '''use text

pipeline main(question: str) -> str:
    print(question)
    if approve(question):
        fail question
    return "held"
'''


def _raw_controls(text: str) -> list[str]:
    return [hex(ord(c)) for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
            or 0x202a <= ord(c) <= 0x202e]


def test_every_human_facing_print_of_program_text_shows_its_control_characters(tmp_path):
    (tmp_path / "ask.pipe").write_text(PROGRAM)
    asked = pipe("run", "ask.pipe", "-i", f"question={HOSTILE}", cwd=tmp_path)
    assert asked.returncode == 75, asked.stderr
    run_id = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[-1]["id"]
    answered = pipe("reply", "--resume", run_id, "yes", cwd=tmp_path)
    assert answered.returncode == 70  # the program fails with the question as its message
    shown = {"the waiting hint": asked.stderr, "pipe inbox": pipe("inbox", "--all", cwd=tmp_path).stdout,
             "the error": answered.stderr, "pipe show": pipe("show", run_id, cwd=tmp_path).stdout,
             "pipe tree": pipe("tree", run_id, cwd=tmp_path).stdout}
    for where, text in shown.items():
        assert _raw_controls(text) == [], where
    assert "Ship to production?\\r\\x1b[2KShip to staging?\\x1b]0;owned\\x07" in shown["the waiting hint"]
    assert "Ship to production?\\r\\x1b[2KShip to staging?" in shown["pipe show"]
    assert "\\u202e" in shown["the error"]


def test_the_programs_own_output_stays_its_own():
    # `pipe run` writes what the program prints and returns to stdout unchanged: it is the program's output, as
    # `cat` writes a file's bytes; what pipe itself says about a run goes through printable.
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("a\nb", one_line=True) == "a\\nb"
    assert printable("\x1b[31m\x9b\u2028") == "\\x1b[31m\\x9b\\u2028"
