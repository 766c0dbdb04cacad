"""Compiled programs: code objects (instructions, constants, names, line table) and their JSON form."""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import Any

from orgtree_lang.compile.opcodes import BY_NAME, OPCODES
from orgtree_lang.runtime.values import decode, encode
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.spans import Span

FORMAT_VERSION = 1


@dataclass(frozen=True)
class CallSite:
    """One call in the source: who is called, how many positional arguments, which keywords."""

    kind: str  # builtin | skill | pipeline | record | human
    name: str
    nargs: int
    kwnames: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class BlockExample:
    """One `examples:` line of an ambiguous block: constant input values and the outputs they must give, or the
    text the error they must raise contains (`-> fails "text"`)."""

    inputs: dict[str, Any]
    outputs: dict[str, Any]
    line: int = 0
    fails: str | None = None

    def to_json(self) -> dict[str, Any]:
        # `fails` only when set, so the spec hash of a block without failing examples stays what it was.
        return {"inputs": {k: encode(v) for k, v in self.inputs.items()},
                "outputs": {k: encode(v) for k, v in self.outputs.items()}, "line": self.line,
                **({"fails": self.fails} if self.fails is not None else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BlockExample:
        return cls({k: decode(v) for k, v in data["inputs"].items()},
                   {k: decode(v) for k, v in data["outputs"].items()}, data.get("line", 0), data.get("fails"))


@dataclass(frozen=True)
class AmbiguousSpec:
    """Everything the decomposer is told about an ambiguous block."""

    name: str
    doc: str
    inputs: tuple[tuple[str, t.PipeType], ...]
    outputs: tuple[tuple[str, t.PipeType], ...]
    uses: tuple[str, ...]  # the capabilities a generated child may have at most
    pipeline: str
    span: Span
    examples: tuple[BlockExample, ...] = ()  # stated by the program's author, or by the decomposer's design step
    expects: tuple[tuple[str, str], ...] = ()  # (condition as .pipe source, why) over inputs and outputs


@dataclass(frozen=True)
class CheckSpec:
    """One `assume`, `expect` or example check: what a failure says, and which locals' values it shows."""

    kind: str  # assume | expect | example
    text: str  # the condition, or the example's call, as .pipe source
    reason: str
    slots: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()  # what a failure calls each slot's value: a name, or an operand's source

    def to_json(self) -> list[Any]:
        return [self.kind, self.text, self.reason, list(self.slots), list(self.labels)]


@dataclass(frozen=True)
class RecordSpec:
    name: str
    fields: tuple[tuple[str, t.PipeType], ...]
    defaults: dict[str, Any]
    doc: str = ""


@dataclass(frozen=True)
class Param:
    name: str
    type: t.PipeType
    has_default: bool = False
    default: Any = None


@dataclass(eq=False)
class CodeObject:
    """The compiled body of one pipeline."""

    name: str
    file: str
    params: tuple[Param, ...]
    returns: t.PipeType
    doc: str
    ops: list[int] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)
    consts: list[Any] = field(default_factory=list)
    varnames: list[str] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    ambiguous: list[AmbiguousSpec] = field(default_factory=list)
    checks: list[CheckSpec] = field(default_factory=list)
    line_table: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # (first pc, line, col, end_line, end_col)
    span: Span | None = None
    max_stack: int = 0

    def span_at(self, pc: int) -> Span:
        """The source span of the instruction at `pc`, from the line table."""
        starts = self.__dict__.get("_line_starts")
        if starts is None or len(starts) != len(self.line_table):  # built once per finished line table
            starts = self.__dict__["_line_starts"] = [row[0] for row in self.line_table]
        i = bisect.bisect_right(starts, pc) - 1
        if i < 0:
            return self.span or Span(self.file, 0, 0, 0, 0)
        _, line, col, end_line, end_col = self.line_table[i]
        return Span(self.file, line, col, end_line, end_col)

    def instructions(self) -> list[tuple[int, str, Any]]:
        return [(pc, OPCODES[op].name, arg) for pc, (op, arg) in enumerate(zip(self.ops, self.args))]

    def shape(self) -> list[Any]:
        """Instructions and constants without positions: equal for programs that differ only in layout."""
        return [self.name, self.instructions(), [encode(c) for c in self.consts], self.varnames,
                [_call_json(c) for c in self.calls]]


@dataclass(eq=False)
class Program:
    """A compiled module: its pipelines' code objects and record types."""

    file: str
    source_hash: str
    uses: tuple[str, ...]
    records: dict[str, RecordSpec]
    pipelines: dict[str, CodeObject]
    tests: dict[str, CodeObject] = field(default_factory=dict)  # `test` blocks and pipeline examples, by name
    routes: dict[str, str | None] = field(default_factory=dict)  # topic -> pipeline (None: orgtree.toml names it)

    def entry(self, name: str | None = None) -> CodeObject:
        """The pipeline `pipe run` starts: `name`, else `main`, else the only pipeline."""
        if name is not None:
            return self.pipelines[name]
        if "main" in self.pipelines:
            return self.pipelines["main"]
        if len(self.pipelines) == 1:
            return next(iter(self.pipelines.values()))
        raise KeyError(None)

    def shape(self) -> list[Any]:
        return [code.shape() for code in self.pipelines.values()]

    # ---- JSON ----

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "file": self.file,
            "source_hash": self.source_hash,
            "uses": list(self.uses),
            "records": [
                {"name": r.name, "doc": r.doc, "fields": [[f, str(ft)] for f, ft in r.fields],
                 "defaults": {k: encode(v) for k, v in r.defaults.items()}}
                for r in self.records.values()
            ],
            "pipelines": [_code_json(c) for c in self.pipelines.values()],
            "tests": [_code_json(c) for c in self.tests.values()],
            "routes": dict(self.routes),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Program:
        if data.get("format") != FORMAT_VERSION:
            raise ValueError(f"bytecode format {data.get('format')} is not supported (expected {FORMAT_VERSION})")
        file = data["file"]
        records = {
            r["name"]: RecordSpec(r["name"], tuple((f, t.parse(ft)) for f, ft in r["fields"]),
                                  {k: decode(v) for k, v in r["defaults"].items()}, r.get("doc", ""))
            for r in data["records"]
        }
        pipelines = {c["name"]: _code_from_json(c, file) for c in data["pipelines"]}
        tests = {c["name"]: _code_from_json(c, file) for c in data.get("tests", [])}
        return cls(file, data["source_hash"], tuple(data["uses"]), records, pipelines, tests,
                   dict(data.get("routes", {})))

    @classmethod
    def loads(cls, text: str) -> Program:
        return cls.from_json(json.loads(text))


def _call_json(site: CallSite) -> list[Any]:
    return [site.kind, site.name, site.nargs, list(site.kwnames)]


def _code_json(code: CodeObject) -> dict[str, Any]:
    return {
        "name": code.name,
        "doc": code.doc,
        "params": [[p.name, str(p.type), p.has_default, encode(p.default)] for p in code.params],
        "returns": str(code.returns),
        "code": [[OPCODES[op].name, arg] for op, arg in zip(code.ops, code.args)],
        "consts": [encode(c) for c in code.consts],
        "varnames": code.varnames,
        "calls": [_call_json(c) for c in code.calls],
        "ambiguous": [
            {"name": a.name, "doc": a.doc, "inputs": [[k, str(v)] for k, v in a.inputs],
             "outputs": [[k, str(v)] for k, v in a.outputs], "uses": list(a.uses), "span": a.span.to_list(),
             **({"examples": [e.to_json() for e in a.examples]} if a.examples else {}),
             **({"expects": [list(e) for e in a.expects]} if a.expects else {})}
            for a in code.ambiguous
        ],
        **({"checks": [c.to_json() for c in code.checks]} if code.checks else {}),
        "line_table": [list(row) for row in code.line_table],
        "span": code.span.to_list() if code.span else None,
        "max_stack": code.max_stack,
    }


def _code_from_json(data: dict[str, Any], file: str) -> CodeObject:
    code = CodeObject(
        name=data["name"],
        file=file,
        params=tuple(Param(p[0], t.parse(p[1]), p[2], decode(p[3])) for p in data["params"]),
        returns=t.parse(data["returns"]),
        doc=data["doc"],
        ops=[BY_NAME[name].code for name, _ in data["code"]],
        args=[arg for _, arg in data["code"]],
        consts=[decode(c) for c in data["consts"]],
        varnames=list(data["varnames"]),
        calls=[CallSite(c[0], c[1], c[2], tuple(c[3])) for c in data["calls"]],
        line_table=[tuple(row) for row in data["line_table"]],
        span=Span.from_list(file, data["span"]) if data["span"] else None,
        max_stack=data["max_stack"],
    )
    code.ambiguous = [
        AmbiguousSpec(a["name"], a["doc"], tuple((k, t.parse(v)) for k, v in a["inputs"]),
                      tuple((k, t.parse(v)) for k, v in a["outputs"]), tuple(a["uses"]), code.name,
                      Span.from_list(file, a["span"]),
                      tuple(BlockExample.from_json(e) for e in a.get("examples", ())),
                      tuple(tuple(e) for e in a.get("expects", ())))
        for a in data["ambiguous"]
    ]
    code.checks = [CheckSpec(c[0], c[1], c[2], tuple(c[3]), tuple(c[4])) for c in data.get("checks", ())]
    return code
