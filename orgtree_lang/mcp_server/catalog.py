"""Which pipelines `pipe mcp serve` offers, each as a tool with JSON schemas from its typed signature and docstring."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.skills import json_schema
from orgtree_lang.runtime.values import bytes_values, to_plain

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class ExposedTool:
    """One pipeline offered as an MCP tool: its name, description, schemas, and the compiled program it runs."""

    name: str
    description: str
    input_schema: dict
    output_schema: dict
    path: Path
    entry: str
    program: Any = field(repr=False)
    source: str = field(repr=False)
    budget: Any = None  # each call's vm Budget; None: the VM's default


@dataclass
class ToolOutcome:
    """What one tool call did: the run it made, and its result or its error (the .pipe message)."""

    run_id: str | None
    result: Any = None
    error: str | None = None
    artifacts: list = field(default_factory=list)  # the bytes values of the result, in order (runtime/artifacts.py)


def pipeline_tools(root: Path, registry, refs: list[str], *, learned: bool = True, budget=None) -> list[ExposedTool]:
    """The tools of `refs` (`FILE` for its entry pipeline, `FILE:PIPELINE`, relative to `root` unless absolute) and,
    with `learned`, of every promoted `learned.NAME` module of the workspace (as tool `learned_NAME`); each call's
    run gets `budget` (a vm Budget; default: the VM's)."""
    from orgtree_lang.compile.api import compile_file

    tools: dict[str, ExposedTool] = {}
    # (file, pipeline or None for its entry, tool name or None for the usual one, description or None for its doc)
    wanted: list[tuple[Path, str | None, str | None, str | None]] = []
    for ref in refs:
        file, entry = ref.rsplit(":", 1) if ":" in ref and not ref.endswith(".pipe") else (ref, None)
        path = Path(file)
        wanted.append((path if path.is_absolute() else root / path, entry, None, None))
    if learned:
        from orgtree_lang.pool.learned import LearnedStore

        wanted += [(module.path, "main", f"learned_{module.name}", module.doc.strip() or None)
                   for module in LearnedStore(root).all()]
    for path, entry, name, description in wanted:
        if not path.is_file():
            raise UsageError(f"no such pipeline file: {path}", hint="pass .pipe files (FILE or FILE:PIPELINE), "
                                                                     "relative to the workspace")
        compiled = compile_file(path, registry, root / ".orgtree" / "cache")
        try:
            code = compiled.program.entry(entry)
        except KeyError:
            names = ", ".join(compiled.program.pipelines) or "none"
            raise UsageError(f"{path} has no pipeline `{entry}`" if entry else
                             f"{path} has no `main` pipeline and several others: name one as {path}:PIPELINE",
                             hint=f"its pipelines are: {names}") from None
        tool_name = name or _NOT_A_NAME.sub("_", code.name if entry else path.stem)
        if tool_name in tools:
            raise UsageError(f"two exposed pipelines would both be the tool `{tool_name}` ({tools[tool_name].path} "
                             f"and {path})", hint="expose one of them as FILE:PIPELINE under another pipeline name")
        tools[tool_name] = _tool(tool_name, path, code, compiled.program, compiled.source)
        tools[tool_name].budget = budget
        if description:
            tools[tool_name].description = description
    return list(tools.values())


def _tool(name: str, path: Path, code, program, source: str) -> ExposedTool:
    from orgtree_lang.runtime.docstrings import parse_docstring

    doc = parse_docstring(code.doc or "")
    properties = {}
    for p in code.params:
        prop = _schema(p.type, program)
        if doc.params.get(p.name):
            prop["description"] = doc.params[p.name]
        if p.has_default:
            prop["default"] = to_plain(p.default)
        properties[p.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [p.name for p in code.params if not p.has_default]
    if required:
        schema["required"] = required
    output = {"type": "object", "properties": {"result": _schema(code.returns, program)}, "required": ["result"]}
    if doc.returns:
        output["properties"]["result"]["description"] = doc.returns
    description = doc.description.strip() or f"The pipeline `{code.name}` of {path.name}."
    return ExposedTool(name, description, schema, output, path, code.name, program, source)


def _schema(ptype, program, depth: int = 0) -> dict:
    """The JSON schema of a .pipe type, with a record's fields spelled out (records of the program itself)."""
    kind = ptype.kind
    if kind == "record" and ptype.name in program.records and depth < 8:
        spec = program.records[ptype.name]
        fields = {name: _schema(ftype, program, depth + 1) for name, ftype in spec.fields}
        required = [name for name, _ in spec.fields if name not in spec.defaults]
        return {"type": "object", "title": ptype.name, "properties": fields, "required": required}
    if kind == "optional":
        return {"anyOf": [_schema(ptype.arg, program, depth + 1), {"type": "null"}]}
    if kind == "list":
        return {"type": "array", "items": _schema(ptype.arg, program, depth + 1)}
    if kind == "dict":
        return {"type": "object", "additionalProperties": _schema(ptype.arg, program, depth + 1)}
    return json_schema(ptype)


def run_tool(tool: ExposedTool, arguments: dict[str, Any], root: Path, registry, printer=None,
             options=None) -> ToolOutcome:
    """Run the tool's pipeline with `arguments` as a durable run of the workspace (listed by `pipe runs`); a bad
    argument or a failed run is an outcome with the .pipe error message, never an exception.

    `options` (run.options.RunOptions) are those of every call (`pipe mcp serve`'s models, settings, notices);
    each call's models and decomposer are assembled fresh from them, as `pipe run` makes them."""
    import dataclasses

    from orgtree_lang.durable.runs import runs_dir
    from orgtree_lang.run.runner import RunOptions, new_run_id, run_program
    from orgtree_lang.runtime.errors import PipeError
    from orgtree_lang.runtime.inputs import check_inputs
    from orgtree_lang.runtime.records import RecordTypes

    code = tool.program.entry(tool.entry)
    try:
        check_inputs(code, arguments, RecordTypes(tool.program.records))
    except PipeError as err:
        return ToolOutcome(None, error=_message(err, tool))
    run_id = new_run_id()
    options = dataclasses.replace(options or RunOptions(), entry=tool.entry, inputs=dict(arguments), workspace=root,
                                  registry=registry, run_id=run_id, durable=True, printer=printer)
    if tool.budget is not None:
        options.budget = tool.budget
    try:
        machine = run_program(tool.program, root, registry, options, source=tool.source, program_path=tool.path)
    except PipeError as err:
        # Refused before it started (its models or settings), a call names no run.
        started = (runs_dir(root) / run_id).is_dir()
        return ToolOutcome(run_id if started else None, error=_message(err, tool))
    state = machine.state
    if state.status == "waiting":
        return ToolOutcome(run_id, error=f"run {run_id} waits for a person's answer: answer it with `pipe reply`, "
                                         f"then `pipe resume {run_id}` finishes it")
    return ToolOutcome(run_id, to_plain(state.result), artifacts=bytes_values(state.result))


def _message(err, tool: ExposedTool) -> str:
    """The error as `pipe run` prints it (message, source line, hint, .pipe call stack), without colours."""
    if getattr(err, "source", "") is None:
        err.source = tool.source
    return err.render("pipe mcp serve")

