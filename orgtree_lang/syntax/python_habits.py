"""Recognize Python spellings in .pipe source that does not parse, and say what to write instead."""

from __future__ import annotations

import re

from orgtree_lang.syntax.diagnostics import Diagnostic
from orgtree_lang.syntax.spans import Span

# Strings and comments, blanked out before looking for habits so their text never matches.
_SKIPPED = re.compile(
    r'f?"""(?:[^\\]|\\.)*?"""|f?\'\'\'(?:[^\\]|\\.)*?\'\'\'|f?"(?:[^"\\\n]|\\.)*"|f?\'(?:[^\'\\\n]|\\.)*\''
    r"|#[^\n]*",
    re.S,
)

# (pattern on one masked line, message, hint); the pattern's group "at" (or the whole match) is underlined.
_LINE_HABITS: tuple[tuple[re.Pattern, str, str], ...] = tuple((re.compile(p), m, h) for p, m, h in (
    (r"^\s*(?P<at>import\s+[\w.]+|from\s+[\w.]+\s+import\b)",
     ".pipe has no `import`",
     "declare the skills a module calls with `use` at the top of the file, e.g. `use text, json`; "
     "`pipe skills` lists them"),
    (r"^\s*(?P<at>def)\s+\w+\s*\(",
     ".pipe has no `def`",
     "declare a pipeline: `pipeline NAME(param: type) -> type:`; pipelines of a module call each other by name"),
    (r"^\s*(?P<at>class)\s+\w+",
     ".pipe has no classes",
     "declare a data type with `record NAME:` and one `field: type` per line; put behaviour in pipelines"),
    (r"(?P<at>\blambda\b)[^:\n]*:",
     ".pipe has no `lambda`: functions are not values",
     "write a helper pipeline and call it in a loop; to sort by a field use `lists.sort(items, key=\"field\")`"),
    (r"^\s*\w+\s*(?P<at>&=|\|=|\^=|<<=|>>=|@=)",
     "there is no `{op}` operator",
     ".pipe has no bitwise or matrix operators; the augmented operators are `+= -= *= /= //= %=`"),
    (r"^\s*(?P<target>\w+)\s*(?P<at>\*\*=)\s*(?P<value>.*?)\s*$",
     "there is no `{op}` operator",
     "write the assignment out: `{target} = {target} {bare} {value}`; the augmented operators are "
     "`+= -= *= /= //= %=`"),
    (r"(?P<at>\bis\s+not\s+None\b)",
     "`None` is spelled `none` in .pipe",
     "write `x is not none` (a type test) or `x != none`"),
    (r"(?P<at>\bis\s+None\b)",
     "`None` is spelled `none` in .pipe",
     "write `x is none` (a type test) or `x == none`"),
    (r"^\s*(?P<at>else\s+if\b|elsif\b|elseif\b|elif\s*:)",
     "expected `elif CONDITION:`",
     "a further branch of an `if` is written `elif CONDITION:`; `else:` takes no condition"),
    (r"^\s*(?P<at>raise)\b",
     ".pipe has no `raise`",
     "stop with an error using `fail MESSAGE`, e.g. `fail f\"bad input: {x}\"`; catch it with `try:` / `except err:`"),
    (r"^\s*(?P<at>assert)\b",
     ".pipe has no `assert`",
     "write `if not CONDITION:` and `fail \"MESSAGE\"` on the next line"),
    (r"^\s*(?P<at>del)\s+\w",
     ".pipe has no `del`",
     "values are immutable: build a new one, e.g. `d = dicts.remove(d, \"key\")` or `xs = lists.remove_at(xs, i)`"),
    (r"^\s*(?P<at>global|nonlocal)\s+\w",
     ".pipe has no global variables",
     "pass the value to the pipeline as a parameter and return what changed"),
    (r"^\s*(?P<at>with)\s.*:\s*$",
     ".pipe has no `with`",
     "call the skill directly, e.g. `text = fs.read(\"notes.txt\")`"),
    (r"^\s*(?P<at>(async|await|yield))\b",
     ".pipe has no `{op}`",
     "pipelines run to completion and return one value with `return`"),
    (r"^\s*(?P<at>finally)\s*:",
     ".pipe has no `finally`",
     "put the clean-up after the `try`/`except` statement; the handler runs for every catchable error"),
    (r"^\s*except\s+(?P<at>[A-Z]\w*(\s+as\s+\w+)?)\s*:",
     "`except` takes only the name to bind the error to",
     "write `except err:` and test `err.kind` (`\"fail\"`, `\"type\"`, `\"key\"`, ...) to tell errors apart"),
    (r"^\s*\w+\s*(?P<at>\+\+|--)\s*$",
     "there is no `{op}` operator",
     "write `x += 1` or `x -= 1`"),
    (r"(?P<at>&&|\|\|)",
     "there is no `{op}` operator",
     "write `and` / `or`"),
    (r"(?:^|[\s(=,\[])(?P<at>!)(?!=)\s*[\w(]",
     "there is no `!` operator",
     "write `not x`"),
    (r"\S\s+(?P<at>if)\s+[^:]+\s+else\b(?!\s*:)",
     ".pipe has no conditional expression `A if C else B`",
     "use an `if` statement: `if C:` / `    x = A` / `else:` / `    x = B`"),
))



def _fill(text: str, words: dict[str, str]) -> str:
    for key, value in words.items():
        text = text.replace(key, value)
    return text


def _mask(source: str) -> str:
    """The source with every string's and comment's characters replaced by spaces (lines and columns kept)."""
    def blank(match: re.Match) -> str:
        return re.sub(r"[^\n]", " ", match.group())
    return _SKIPPED.sub(blank, source)


def find_habits(source: str, file: str) -> list[Diagnostic]:
    """Every Python habit in `source`, one diagnostic per line at most, in line order."""
    masked = _mask(source)
    found: dict[int, Diagnostic] = {}
    for number, line in enumerate(masked.splitlines(), 1):
        for pattern, message, hint in _LINE_HABITS:
            match = pattern.search(line)
            if match is None:
                continue
            start, end = match.span("at")
            op = re.sub(r"\s+", " ", match.group("at"))
            bare = op[:-1] if op.endswith("=") else op
            words = {"{op}": op, "{bare}": bare, **{"{" + k + "}": v for k, v in match.groupdict().items() if v}}
            found[number] = Diagnostic("error", _fill(message, words), Span(file, number, start + 1, number, end + 1),
                                       _fill(hint, words))
            break
    for diagnostic in _comprehensions(masked, file):
        found.setdefault(diagnostic.span.line, diagnostic)
    return [found[line] for line in sorted(found)]


_TOKENS = re.compile(r"[\[\](){}:]|\bfor\b")


def _comprehensions(masked: str, file: str) -> list[Diagnostic]:
    """A `for` inside brackets is a comprehension or generator, which .pipe does not have."""
    stack: list[list] = []  # [bracket, saw a top-level `:`]
    found = []
    for match in _TOKENS.finditer(masked):
        text = match.group()
        if text in "([{":
            stack.append([text, False])
        elif text in ")]}":
            if stack:
                stack.pop()
        elif text == ":":
            if stack:
                stack[-1][1] = True
        elif stack:
            line = masked.count("\n", 0, match.start()) + 1
            col = match.start() - masked.rfind("\n", 0, match.start())
            bracket, colon = stack[-1]
            if bracket == "{" and colon:
                what, hint = "dict comprehensions", ("build the dict in a loop: `d = {}` / `for k in keys:` / "
                                                     "`    d = dicts.set(d, k, VALUE)`")
            else:
                what, hint = ("list comprehensions" if bracket == "[" else "generator expressions",
                              "build the list in a loop: `out = []` / `for x in xs:` / `    out += [EXPR]` "
                              "(add `if COND:` inside the loop to filter)")
            found.append(Diagnostic("error", f".pipe has no {what}", Span(file, line, col, line, col + 3), hint))
            stack[-1][1] = False
    return found
