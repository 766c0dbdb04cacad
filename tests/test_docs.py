"""docs/language.md: every ```pipe block that is a whole module compiles (or fails as its marker says) and runs as shown.

Conventions the page follows, read by this test:

- A ```pipe block whose first code line starts with `use`, `record` or `pipeline` is a module; it must
  compile with no errors and no warnings. Other ```pipe blocks are fragments and are not compiled.
- `<!-- expect-error -->` (or `<!-- expect-error: TEXT -->`) right before a block: it must fail to
  compile (with a diagnostic containing TEXT).
- `<!-- expect-runtime-error: TEXT -->` right before a block: it compiles, and running it fails with
  a runtime error whose message contains TEXT (runs get a budget of 1000 steps).
- An ```output block right after a module (or after one lead-in line ending in `:`) is exactly what `pipe run` prints on stdout for it: the
  printed lines, then the result (a str as-is, none not at all, anything else as JSON).
- A ```diagnostics block right after an error example is exactly what `pipe` prints on stderr for it
  (the module is compiled as `example.pipe`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.values import to_plain
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax.words import KEYWORDS, RESERVED, SOFT_KEYWORDS
from orgtree_lang.vm.budget import Budget

DOC = Path(__file__).resolve().parent.parent / "docs" / "language.md"
FILE = "example.pipe"
_FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_MARKER = re.compile(r"<!--\s*(expect-error|expect-runtime-error|expect-warning)\s*(?::\s*(.*?))?\s*-->\s*$")
_MODULE_START = re.compile(r"^(use|record|pipeline|route)\b")


@dataclass
class Example:
    line: int  # where the ```pipe fence is in the page
    source: str
    marker: str | None = None  # expect-error | expect-runtime-error | expect-warning
    marker_text: str | None = None
    output: str | None = None
    diagnostics: str | None = None

    @property
    def is_module(self) -> bool:
        for text in self.source.splitlines():
            if text.strip() and not text.lstrip().startswith("#"):
                return bool(_MODULE_START.match(text))
        return False

    def __str__(self) -> str:
        return f"docs/language.md:{self.line}"


def read_examples(page: str) -> list[Example]:
    """Every ```pipe block with its marker and the output/diagnostics block that follows it."""
    fences = list(_FENCE.finditer(page))
    examples: list[Example] = []
    for index, fence in enumerate(fences):
        if fence.group(1) != "pipe":
            continue
        example = Example(page.count("\n", 0, fence.start()) + 1, fence.group(2))
        before = page[: fence.start()].rstrip().splitlines()
        marker = _MARKER.search(before[-1]) if before else None
        if marker:
            example.marker, example.marker_text = marker.group(1), marker.group(2)
        if index + 1 < len(fences):
            following = fences[index + 1]
            if _adjacent(page[fence.end(): following.start()]):
                if following.group(1) == "output":
                    example.output = following.group(2)
                elif following.group(1) == "diagnostics":
                    example.diagnostics = following.group(2)
        examples.append(example)
    return examples


def _adjacent(between: str) -> bool:
    """Nothing between two fences, or one short lead-in line such as `Without a model, it stops:`."""
    lines = [text for text in between.strip().splitlines() if text.strip()]
    return not lines or (len(lines) == 1 and lines[0].rstrip().endswith(":"))


def unattached_result_blocks(page: str) -> list[int]:
    """Lines of ```output and ```diagnostics blocks that follow no ```pipe block (so nothing checks them)."""
    fences = list(_FENCE.finditer(page))
    lonely = []
    for previous, fence in zip([None, *fences], fences):
        if fence.group(1) in ("output", "diagnostics"):
            if previous is None or previous.group(1) != "pipe" or not _adjacent(page[previous.end(): fence.start()]):
                lonely.append(page.count("\n", 0, fence.start()) + 1)
    return lonely


PAGE = DOC.read_text(encoding="utf-8")
EXAMPLES = read_examples(PAGE)
MODULES = [e for e in EXAMPLES if e.is_module]


@pytest.fixture(scope="module")
def registry():
    return default_registry(plugins=False)


def run(example: Example, registry, workspace: Path) -> tuple[list[str], object]:
    """Compile and run an example as `pipe run` would; returns (printed lines, result)."""
    program = compile_source(example.source, FILE, registry).program
    printed: list[str] = []
    options = RunOptions(printer=printed.append, registry=registry, budget=Budget(max_steps=1000),
                         trace=workspace / "trace.jsonl")
    machine = run_program(program, workspace, registry, options)
    return printed, machine.state.result


def stdout_of(printed: list[str], result: object) -> str:
    lines = list(printed)
    if isinstance(result, str):
        lines.append(result)
    elif result is not None:
        lines.append(json.dumps(to_plain(result), ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def test_the_page_has_examples_of_every_kind() -> None:
    kinds = {e.marker for e in MODULES}
    assert len(MODULES) >= 40
    assert {None, "expect-error", "expect-runtime-error"} <= kinds
    assert sum(e.output is not None for e in MODULES) >= 20
    assert sum(e.diagnostics is not None for e in MODULES) >= 2


def test_every_output_block_belongs_to_an_example() -> None:
    assert unattached_result_blocks(PAGE) == [], "these output/diagnostics blocks follow no ```pipe block"
    assert unattached_result_blocks("```pipe\npipeline main():\n    pass\n```\n\nprose\n\nmore\n\n```output\nx\n```\n") == [10]


def test_reading_markers_and_output_blocks() -> None:
    page = ("<!-- expect-error: boom -->\n```pipe\npipeline main():\n    x\n```\n\n```output\n1\n```\n"
            "```pipe\n    x = 1\n```\n")
    first, second = read_examples(page)
    assert (first.marker, first.marker_text, first.output, first.line) == ("expect-error", "boom", "1\n", 2)
    assert first.is_module and not second.is_module and second.marker is None


@pytest.mark.parametrize("example", [e for e in MODULES if e.marker in (None, "expect-warning")], ids=str)
def test_module_compiles(example: Example, registry) -> None:
    try:
        compiled = compile_source(example.source, FILE, registry)
    except CompileError as err:
        pytest.fail(f"{example} does not compile:\n{err.render()}")
    warnings = [w.message for w in compiled.warnings]
    if example.marker == "expect-warning":
        assert any(example.marker_text in w for w in warnings), f"{example}: warnings were {warnings}"
    else:
        assert not warnings, f"{example} compiles with warnings: {warnings}"


@pytest.mark.parametrize("example", [e for e in MODULES if e.output is not None], ids=str)
def test_module_prints_its_output_block(example: Example, registry, tmp_path: Path) -> None:
    printed, result = run(example, registry, tmp_path)
    assert stdout_of(printed, result) == example.output, f"{example} prints something else"


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.marker == "expect-error"], ids=str)
def test_error_example_fails_to_compile(example: Example, registry) -> None:
    assert example.is_module, f"{example}: an error example must be a whole module"
    with pytest.raises(CompileError) as caught:
        compile_source(example.source, FILE, registry)
    messages = [d.message for d in caught.value.diagnostics if d.severity == "error"]
    if example.marker_text:
        assert any(example.marker_text in m for m in messages), f"{example}: the errors were {messages}"
    if example.diagnostics is not None:
        assert caught.value.render() + "\n" == example.diagnostics


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.marker == "expect-runtime-error"], ids=str)
def test_runtime_error_example_fails_when_run(example: Example, registry, tmp_path: Path) -> None:
    with pytest.raises(PipeRuntimeError) as caught:
        run(example, registry, tmp_path)
    assert example.marker_text in caught.value.message
    if example.diagnostics is not None:
        caught.value.source = example.source
        assert caught.value.render() + "\n" == example.diagnostics


def test_every_builtin_is_listed_with_its_signature() -> None:
    for builtin in BUILTINS.values():
        assert f"| `{builtin.signature}` |" in PAGE, f"built-in {builtin.name} is missing from the table"


def test_keywords_and_reserved_words_are_listed() -> None:
    section = PAGE[PAGE.index("## Keywords and reserved words"):]
    for word in sorted(KEYWORDS | RESERVED | set(SOFT_KEYWORDS)):
        assert re.search(rf"\b{word}\b", section), f"`{word}` is not in the keywords section"


def test_internal_links_point_to_headings() -> None:
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", PAGE, re.M):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-"))
    for target in re.findall(r"\]\(#([^)]+)\)", PAGE):
        assert target in anchors, f"link to #{target} has no heading"
