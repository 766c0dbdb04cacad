"""The design step: the author states examples and expectations from the spec before any code, and an
independent reviewer checks them against the spec (and proposes the cases they miss) before the code is written."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from orgtree_lang.compile.code import AmbiguousSpec, BlockExample
from orgtree_lang.decompose.simulate import pipe_literal

DESIGN_REQUEST = """## First, the design: no code yet
Before writing the module, state from the spec alone what a correct module must do, as the lines that would
follow the block's docstring, in one ```pipe block and nothing else:

```pipe
examples:
    NAME(INPUT, ...) -> EXPECTED
expect CONDITION, "why it must hold"
```

Give 3 to 6 examples: typical cases and the edge cases the spec implies (empty, zero, missing, ties), with
every value written out as a literal; for several outputs name each (`NAME(...) -> a=1, b="x"`). Each `expect`
is a condition over the inputs and outputs that every correct answer meets, naming them as the block's signature
does (`result` is only for pipelines). Where the spec requires a failure, an example expects it with part of its
message: `NAME(...) -> fails "unterminated quote"`. The module you write next is run on these examples before
anyone reviews it."""

CODE_REQUEST = """The design is settled:

```pipe
{design}
```

Now write the module. It is run on these examples (with side-effecting skills sealed) and every expectation
is checked before review. Answer with exactly one ```pipe block holding the whole module."""

REVIEW_NOTE = """# The design of `{name}`, stated before any code: examples (inputs -> expected outputs) and expectations.
# Check each against the spec. An expected value the spec contradicts is a blocking concern; so is an important
# case the spec implies that no example covers: give that case as an example line (`{name}(...) -> ...`) in
# `suggested_fix`. Expectations name the block's inputs and outputs as its signature does ({names}); `result` is
# only for pipelines. A failure the spec requires is an example line too: `{name}(...) -> fails "part of its
# message"`. Do not ask for code: there is none yet."""

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)
_EXAMPLE_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\(.*\)\s*->")


@dataclass
class Design:
    """The examples and expectations a module must meet, with where each example came from."""

    examples: list[BlockExample] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # "spec" | "design" | "reviewer", one per example
    expects: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def of_spec(cls, spec: AmbiguousSpec) -> Design:
        """What the program's author stated in the block itself."""
        return cls(list(spec.examples), ["spec"] * len(spec.examples), list(spec.expects))

    def text(self, spec: AmbiguousSpec) -> str:
        """The design as the lines after a block's docstring."""
        lines = []
        if self.examples:
            lines.append("examples:")
            lines += [f"    {example_line(spec, e)}" for e in self.examples]
        lines += [f"expect {condition}, {pipe_literal(why)}" for condition, why in self.expects]
        return "\n".join(lines)

    @classmethod
    def settled(cls, spec: AmbiguousSpec, first: Design, final: Design) -> Design:
        """The program's examples and the design as the review left it; an example the author added while
        answering the reviewer is the reviewer's. Examples the review removed or corrected are gone."""
        settled = cls.of_spec(spec)
        known = {_key(e) for e in settled.examples}
        proposed = {_key(e) for e in first.examples}
        for example in final.examples:
            if _key(example) not in known:
                known.add(_key(example))
                settled.examples.append(example)
                settled.sources.append("design" if _key(example) in proposed else "reviewer")
        settled.expects += [e for e in final.expects if e not in settled.expects]
        return settled


def _key(example: BlockExample) -> str:
    return pipe_literal(example.inputs) + "->" + pipe_literal(example.outputs) + "!" + pipe_literal(example.fails)


def example_line(spec: AmbiguousSpec, example: BlockExample) -> str:
    args = ", ".join(f"{name}={pipe_literal(example.inputs[name])}" if i else pipe_literal(example.inputs[name])
                     for i, (name, _) in enumerate(spec.inputs) if name in example.inputs)
    if example.fails is not None:
        result = f"fails {pipe_literal(example.fails)}"
    elif len(spec.outputs) == 1:
        result = pipe_literal(example.outputs[spec.outputs[0][0]])
    else:
        result = ", ".join(f"{name}={pipe_literal(example.outputs[name])}" for name, _ in spec.outputs)
    return f"{spec.name}({args}) -> {result}"


def design_source(answer: str) -> str:
    """The design lines of an answer: its ```pipe block (or its only block, or the whole answer), dedented."""
    blocks = _FENCE.findall(answer)
    pipe_blocks = [body for lang, body in blocks if lang.lower() == "pipe"]
    text = pipe_blocks[0] if len(pipe_blocks) == 1 else blocks[0][1] if len(blocks) == 1 else answer
    lines = [line for line in text.splitlines() if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    return "\n".join(line[indent:] for line in lines)


def parse_design(answer: str, spec: AmbiguousSpec, registry, parent_source: str) -> tuple[Design, list[str]]:
    """The design an answer states, checked as the block it belongs to; or the problems that keep it from it."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.syntax.diagnostics import CompileError

    lines = design_source(answer)
    if not lines or not any(line.startswith(("examples:", "expect ")) for line in lines.splitlines()):
        return Design(), ["the answer holds no `examples:` block and no `expect` line; reply with the design in one "
                          "```pipe block: `examples:` with one example per line, then `expect CONDITION, \"why\"` "
                          "lines"]
    source = _block_program(spec, lines, parent_source)
    try:
        program = compile_source(source, f"{spec.name}.design.pipe", registry).program
    except CompileError as err:
        return Design(), [err.render()]
    block = program.pipelines["main"].ambiguous[0]
    if not block.examples:
        return Design(), ["the design has no examples; give 3 to 6 under `examples:`"]
    return Design(list(block.examples), ["design"] * len(block.examples), list(block.expects)), []


def _block_program(spec: AmbiguousSpec, lines: str, parent_source: str) -> str:
    """A program holding just the block with the design lines, to check them as the language does."""
    params = ", ".join(f"{name}: {ptype}" for name, ptype in spec.inputs)
    outputs = ", ".join(f"{name}: {ptype}" for name, ptype in spec.outputs)
    body = "\n".join("        " + line for line in lines.splitlines())
    return ("".join(f"use {u}\n" for u in spec.uses) + _records(parent_source) +
            f"\npipeline main({params}):\n    ambiguous {spec.name}({params}) -> {outputs}:\n"
            f'        """The block under design."""\n{body}\n    pass\n')


def _records(parent_source: str) -> str:
    """The record declarations of the parent program, which the block's types may name."""
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.syntax.parser import parse

    try:
        module = parse(parent_source, "parent.pipe")
    except CompileError:
        return ""
    lines = parent_source.splitlines()
    return "".join("\n" + "\n".join(lines[r.span.line - 1:r.span.end_line]).rstrip() + "\n"
                   for r in module.records)


def review_artifact(spec: AmbiguousSpec, design: Design) -> str:
    names = ", ".join(f"`{name}`" for name, _ in (*spec.inputs, *spec.outputs))
    return REVIEW_NOTE.format(name=spec.name, names=names) + "\n" + design.text(spec) + "\n"


def spec_with_contracts(text: str, spec: AmbiguousSpec) -> str:
    """The spec text a reviewer sees, with the examples and expectations the program's author wrote in the block."""
    stated = Design.of_spec(spec)
    if not stated.examples and not stated.expects:
        return text
    return text + "\n\nThe program states, in the block itself:\n" + stated.text(spec)
