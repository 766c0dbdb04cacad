"""Text skills: take strings (and patterns or templates) and return new strings, lists of strings or facts about them."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import skill
from orgtree_lang.runtime.values import display


@skill("text.len", pure=True)
def length(text: str) -> int:
    """The number of characters in a string.

    Example: `text.len("héllo")  # 5`

    Args:
        text: The string to measure.
    """
    return len(text)


@skill("text.lower", pure=True)
def lower(text: str) -> str:
    """The string in lower case.

    Example: `text.lower("Ada")  # "ada"`

    Args:
        text: The string to convert.
    """
    return text.lower()


@skill("text.upper", pure=True)
def upper(text: str) -> str:
    """The string in upper case.

    Example: `text.upper("ada")  # "ADA"`

    Args:
        text: The string to convert.
    """
    return text.upper()


@skill("text.strip", pure=True)
def strip(text: str, chars: str | None = None) -> str:
    """The string without leading and trailing whitespace (or the given characters).

    Example: `text.strip("  hi \\n")  # "hi"`

    Args:
        text: The string to trim.
        chars: The set of characters to remove from both ends; none means whitespace.
    """
    return text.strip(chars)


@skill("text.split", pure=True)
def split(text: str, sep: str | None = None, maxsplit: int = -1) -> list[str]:
    """Split a string into parts.

    Example: `text.split("a,b,,c", ",")  # ["a", "b", "", "c"]`

    Args:
        text: The string to split.
        sep: The separator; none splits on runs of whitespace and drops empty parts.
        maxsplit: At most this many splits (the last part keeps the rest); -1 means no limit.

    Returns:
        The parts, in order.
    """
    if sep == "":
        raise SkillError("text.split: the separator is empty", hint="use none to split on whitespace")
    return text.split(sep, maxsplit)


@skill("text.join", pure=True)
def join(items: list[str], sep: str = "") -> str:
    """Join strings into one, with a separator between each pair.

    Example: `text.join(["a", "b"], ", ")  # "a, b"`

    Args:
        items: The strings to join.
        sep: What goes between two items.
    """
    return sep.join(items)


@skill("text.replace", pure=True)
def replace(text: str, old: str, new: str, count: int = -1) -> str:
    """Replace occurrences of a substring.

    Example: `text.replace("a-b-c", "-", "+")  # "a+b+c"`

    Args:
        text: The string to change.
        old: The substring to look for.
        new: What to put in its place.
        count: Replace at most this many occurrences, from the left; -1 means all.
    """
    return text.replace(old, new, count)


@skill("text.contains", pure=True)
def contains(text: str, sub: str) -> bool:
    """Whether a substring occurs in a string.

    Example: `text.contains("hello", "ell")  # true (same as "ell" in "hello")`

    Args:
        text: The string to search.
        sub: The substring to look for.
    """
    return sub in text


@skill("text.startswith", pure=True)
def startswith(text: str, prefix: str) -> bool:
    """Whether a string starts with a prefix.

    Example: `text.startswith("report.md", "rep")  # true`

    Args:
        text: The string to test.
        prefix: The expected beginning.
    """
    return text.startswith(prefix)


@skill("text.endswith", pure=True)
def endswith(text: str, suffix: str) -> bool:
    """Whether a string ends with a suffix.

    Example: `text.endswith("report.md", ".md")  # true`

    Args:
        text: The string to test.
        suffix: The expected ending.
    """
    return text.endswith(suffix)


@skill("text.chars", pure=True)
def chars(text: str) -> list[str]:
    """The characters of a string, as a list of one-character strings.

    Example: `text.chars("abc")  # ["a", "b", "c"]; for c in s: also walks the characters`

    Args:
        text: The string.
    """
    return list(text)


def _pad(skill_name: str, text: str, width: int, fill: str, where: str) -> str:
    if len(fill) != 1:
        raise SkillError(f"{skill_name}: fill must be exactly one character, got {fill!r}")
    if where == "left":
        return text.rjust(width, fill)
    if where == "right":
        return text.ljust(width, fill)
    return text.center(width, fill)


@skill("text.pad_left", pure=True)
def pad_left(text: str, width: int, fill: str = " ") -> str:
    """The text right-aligned in `width` characters: `fill` added on the left (longer text is kept whole).

    Example: `text.pad_left("7", 3, "0")  # "007"`

    Args:
        text: The text.
        width: The width to reach.
        fill: One character to pad with.
    """
    return _pad("text.pad_left", text, width, fill, "left")


@skill("text.pad_right", pure=True)
def pad_right(text: str, width: int, fill: str = " ") -> str:
    """The text left-aligned in `width` characters: `fill` added on the right (longer text is kept whole).

    Example: `text.pad_right("ab", 4) + "|"  # "ab  |"`

    Args:
        text: The text.
        width: The width to reach.
        fill: One character to pad with.
    """
    return _pad("text.pad_right", text, width, fill, "right")


@skill("text.center", pure=True)
def center(text: str, width: int, fill: str = " ") -> str:
    """The text centred in `width` characters (with an odd number of fills, the extra one goes on the left, as in Python).

    Example: `text.center("ab", 6, "*")  # "**ab**"`

    Args:
        text: The text.
        width: The width to reach.
        fill: One character to pad with.
    """
    return _pad("text.center", text, width, fill, "center")


@skill("text.format", pure=True)
def format_text(template: str, values: dict[str, Any]) -> str:
    """Fill `{name}` fields of a template from a dict; `{name:>8}` and `{x:.2f}` format specs work.

    Example: `text.format("{name} is {age}", {"name": "ada", "age": 36})  # "ada is 36"`

    Fields must be plain names: no positional `{}` or `{0}`, no attribute or index access.
    Numbers and strings are formatted as themselves, other values as `print` shows them.

    Args:
        template: Text with `{name}` fields; write `{{` and `}}` for literal braces.
        values: The value for each field name.

    Returns:
        The filled-in text.
    """
    _check_fields(template, values)
    shown = {k: v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else display(v)
             for k, v in values.items()}
    try:
        return template.format_map(shown)
    except (ValueError, TypeError) as exc:
        raise SkillError(f"text.format: {exc}", hint="check the format specs after `:` in the fields") from None


def _check_fields(template: str, values: dict[str, Any]) -> None:
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise SkillError(f"text.format: bad template: {exc}", hint="write `{{` and `}}` for literal braces") from None
    for _, field, spec, _ in fields:
        if field is None:
            continue
        if field == "" or field.isdigit() or "." in field or "[" in field:
            raise SkillError(
                f"text.format: field `{{{field}}}` is not a plain name",
                hint="name every field, e.g. `{title}`, and pass its value in `values`",
            )
        if field not in values:
            known = ", ".join(f"`{k}`" for k in values) or "no keys"
            raise SkillError(f"text.format: no value for field `{field}`", hint=f"`values` has {known}")
        if spec and "{" in spec:
            _check_fields(spec, values)


def _compile(skill_name: str, pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise _regex_error(skill_name, "bad regular expression", pattern, exc) from None


def _regex_error(skill_name: str, what: str, source: str, exc: re.error) -> SkillError:
    where = f" at position {exc.pos}" if exc.pos is not None else ""
    hint = f"{source}\n{' ' * exc.pos}^" if exc.pos is not None else None
    return SkillError(f"{skill_name}: {what} `{source}`: {exc.msg}{where}", hint=hint)


@skill("text.regex_match", pure=True)
def regex_match(pattern: str, text: str) -> str | None:
    """The whole first match of Python regex `pattern` searched anywhere in `text` (not anchored), or none.

    Python `re` syntax; the pattern comes first. It searches like `re.search`: write `^...$` to match the
    whole text. It returns the whole match, never a group; text.regex_groups gives the groups.

    Example: `text.regex_match("[0-9]+", "order 66 and 7")  # "66"`

    Args:
        pattern: A Python regular expression.
        text: The text to search.

    Returns:
        The whole matched text (not the groups), or none if nothing matches.
    """
    match = _compile("text.regex_match", pattern).search(text)
    return match.group(0) if match else None


@skill("text.regex_findall", pure=True)
def regex_findall(pattern: str, text: str) -> list[str]:
    """Every non-overlapping whole match of Python regex `pattern` in `text`, left to right (groups ignored).

    Python `re` syntax; the pattern comes first. Always the whole matches: unlike Python's `re.findall`,
    groups do not change the result. `.` does not match a newline unless the pattern starts with `(?s)`.

    Example: `text.regex_findall("[0-9]+", "order 66 and 7")  # ["66", "7"]`

    Args:
        pattern: A Python regular expression.
        text: The text to search.

    Returns:
        The whole matched texts (groups in the pattern do not change what is returned).
    """
    return [m.group(0) for m in _compile("text.regex_findall", pattern).finditer(text)]


@skill("text.regex_groups", pure=True)
def regex_groups(pattern: str, text: str) -> list[str | None] | None:
    """The groups of the first match of Python regex `pattern` searched anywhere in `text`, or none.

    Example: `text.regex_groups("([a-z]+)=([0-9]+)", "x a=1")  # ["a", "1"]`

    Python `re` syntax; the pattern comes first. A group that took no part in the match is none.

    Args:
        pattern: A Python regular expression with groups `(...)`.
        text: The text to search.

    Returns:
        One string per group, in order, or none when there is no match.
    """
    match = _compile("text.regex_groups", pattern).search(text)
    return list(match.groups()) if match else None


@skill("text.regex_sub", pure=True)
def regex_sub(pattern: str, replacement: str, text: str, count: int = 0) -> str:
    """`text` with every match of Python regex `pattern` replaced by `replacement` (`\\1` inserts group 1).

    Python `re` syntax; the argument order is pattern, replacement, text.

    Example: `text.regex_sub("([a-z]+)@", "\\\\1 at ", "ada@x.org")  # "ada at x.org"`

    Args:
        pattern: A Python regular expression.
        replacement: The replacement; `\\1` or `\\g<name>` insert a group.
        text: The text to change.
        count: Replace at most this many matches; 0 means all.
    """
    compiled = _compile("text.regex_sub", pattern)
    if count < 0:
        raise SkillError(f"text.regex_sub: count must be 0 or more, got {count}")
    try:
        return compiled.sub(replacement, text, count=count)
    except re.error as exc:
        raise _regex_error("text.regex_sub", "bad replacement", replacement, exc) from None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_WORD = re.compile(r"[^\W_]+")
_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i in is it its of on or our she so "
    "that the their them they this to was we were what when which who will with you your not no do "
    "does did can could would should there than then also if into about".split()
)


@skill("text.summarize", pure=True)
def summarize(text: str, max_words: int = 60) -> str:
    """A short extractive summary: the text's most representative sentences, in their original order.

    Example: `text.summarize(report, max_words=40)`

    Deterministic and model-free: sentences are scored by how frequent their content words are in the
    whole text, and the best ones are kept while they fit in `max_words`. Text that already fits is
    returned unchanged (trimmed). If even the best sentence is too long, its first `max_words` words
    are returned with a trailing `…`.

    Args:
        text: The text to summarize.
        max_words: The most words (whitespace-separated) the summary may have.

    Returns:
        The summary; never more than `max_words` words.
    """
    if max_words < 1:
        raise SkillError(f"text.summarize: max_words must be at least 1, got {max_words}")
    if len(text.split()) <= max_words:
        return text.strip()
    sentences = [" ".join(s.split()) for s in _SENTENCE_END.split(text) if s.strip()]
    freq = Counter(w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)

    def score(sentence: str) -> float:
        words = [w for w in _WORD.findall(sentence.lower()) if w not in _STOPWORDS]
        if not words:
            return 0.0
        return sum(freq[w] for w in set(words)) / len(words) ** 0.5

    ranked = sorted(range(len(sentences)), key=lambda i: (-score(sentences[i]), i))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        n = len(sentences[i].split())
        if used + n <= max_words:
            chosen.append(i)
            used += n
    if not chosen:
        words = sentences[ranked[0]].split()[:max_words]
        return " ".join(words) + "…"
    return " ".join(sentences[i] for i in sorted(chosen))
