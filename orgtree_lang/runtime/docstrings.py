"""Parse a Google-style docstring into a summary, a description, per-parameter docs and a returns doc."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

# Section headers whose content is pulled out of the description into structured fields.
_ARGS_HEADERS = ("args", "arguments", "parameters", "params")
_RETURNS_HEADERS = ("returns", "return")
# Other Google-style sections; they stay in the description but end an Args/Returns section.
_OTHER_HEADERS = (
    "raises", "yields", "yield", "examples", "example", "note", "notes",
    "warning", "warnings", "see also", "todo", "attributes",
)
_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
# `name: text`, `name (type): text`, `*name: text`
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
# An optional leading type in a Returns section (`list[str]: the parts`); a type has no bare spaces.
_RETURN_TYPE = re.compile(r"^[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:\s*\|\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?)*\s*:\s+(.*)$")


@dataclass(frozen=True)
class Docstring:
    """The parts of a docstring a skill needs: what it does, what each argument means, what it returns."""

    summary: str = ""
    body: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str = ""

    @property
    def description(self) -> str:
        """Summary and body, without the Args and Returns sections."""
        return f"{self.summary}\n\n{self.body}" if self.body else self.summary


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into its summary, body, `Args:` entries and `Returns:` text."""
    if not doc or not doc.strip():
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    params: dict[str, str] = {}
    returns: list[str] = []
    i = 0
    while i < len(lines):
        header = _section_header(lines[i])
        if header in _ARGS_HEADERS or header in _RETURNS_HEADERS:
            section, i = _section_lines(lines, i + 1)
            if header in _ARGS_HEADERS:
                params.update(_parse_args(section))
            else:
                returns.extend(section)
            continue
        kept.append(lines[i])
        i += 1
    summary, body = _split_summary(kept)
    return Docstring(summary=summary, body=body, params=params, returns=_parse_returns(returns))


def _section_header(line: str) -> str | None:
    if line[:1].isspace():
        return None
    match = _HEADER.match(line.strip())
    if not match:
        return None
    name = match.group(1).strip().lower()
    return name if name in _ARGS_HEADERS + _RETURNS_HEADERS + _OTHER_HEADERS else None


def _section_lines(lines: list[str], start: int) -> tuple[list[str], int]:
    """The indented lines of a section starting at `start`, dedented, and the index after it."""
    section: list[str] = []
    i = start
    while i < len(lines):
        line = lines[i]
        if line.strip() and not line[:1].isspace():
            break
        section.append(line)
        i += 1
    while section and not section[-1].strip():
        section.pop()
    return inspect.cleandoc("\n".join(section)).splitlines() if section else [], i


def _parse_args(section: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    current: str | None = None
    for line in section:
        if not line.strip():
            continue
        match = None if line[:1].isspace() else _ARG_LINE.match(line)
        if match:
            current = match.group(1)
            params[current] = match.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return params


def _parse_returns(section: list[str]) -> str:
    text = " ".join(line.strip() for line in section if line.strip())
    match = _RETURN_TYPE.match(text)
    return match.group(1).strip() if match else text


def _split_summary(lines: list[str]) -> tuple[str, str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    summary: list[str] = []
    i = 0
    while i < len(lines) and lines[i].strip():
        summary.append(lines[i].strip())
        i += 1
    body = "\n".join(lines[i:]).strip("\n")
    body = re.sub(r"\n{3,}", "\n\n", body).strip()
    return " ".join(summary), body
