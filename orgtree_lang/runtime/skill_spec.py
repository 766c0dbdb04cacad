"""One skill as the VM calls it: its parameters, the context a call gets, binding and checking arguments, converting
values between Python and .pipe, and its JSON schemas (runtime/skills.py turns functions into these and keeps them)."""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Callable

from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.runtime.config import CONFIG_NAME, ConfigSnapshot
from orgtree_lang.runtime.errors import SkillArgumentError, SkillError
from orgtree_lang.runtime.state_db import StateConnection, open_state_db, state_db_path
from orgtree_lang.runtime.values import RecordValue, conforms, display, to_plain
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.syntax import types as T
from orgtree_lang.syntax.types import PipeType

class _Missing:
    """The type of MISSING: the default of a parameter that has none."""

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Param:
    """One parameter of a skill: its name, .pipe type, default (or MISSING) and documentation."""

    name: str
    type: PipeType
    default: Any = MISSING
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is MISSING


@dataclass(frozen=True)
class SkillContext:
    """What the runtime hands to a skill that asks for it: the workspace, the run, the clock, and a call's key."""

    workspace: Workspace
    run_id: str = "local"
    # Skills read the time only through this so that a run can be journaled and replayed.
    clock: Callable[[], float] = time.time
    # Names one side-effecting call (`<run id>:<step sequence>`), the same when resume repeats the call
    # that was in flight, so a skill can apply its effect at most once; None outside durable runs.
    idempotency_key: str | None = None
    # The run's models by role (a RunModels, orgtree_lang/models/roles.py: `.author()`, `.reviewer()`, `.ask(...)`,
    # built on first use), for skills that need one; None when the run was started without them.
    models: Any = None
    # Set by the VM (vm.budget.ModelSpend): a skill's model calls are checked against and charged to the run
    # tree's --max-tokens / --max-cost, and to the calling skill's org tree node. None outside a VM.
    spend: Any = None
    # The workspace's orgtree.toml read once when the run's context is made, for the skills that obey it
    # (code.run, http.fetch, web.search); a copy made with dataclasses.replace shares it.
    config: ConfigSnapshot | None = None  # filled in by __post_init__

    def __post_init__(self) -> None:
        if self.config is None:
            object.__setattr__(self, "config", ConfigSnapshot(self.workspace.root / CONFIG_NAME))

    def state_db(self, *, create: bool = True, timeout: float = 10) -> StateConnection | None:
        """The workspace's state.db, migrated to the newest schema, for a skill that keeps durable records.

        The only way a skill reaches the database: its tables are declared in runtime/schema.py, and writes go
        through `with db.transaction():` (the connection's write lock, then BEGIN IMMEDIATE). The caller
        closes the connection. None when the workspace has no state.db yet and `create` is false."""
        path = state_db_path(self.workspace.root)
        if not create and not path.exists():
            return None
        return open_state_db(path, timeout=timeout)


@dataclass(frozen=True, eq=False)
class Skill:
    """A typed, documented callable registered under a dotted name, with its calls validated both ways."""

    name: str
    description: str
    params: tuple[Param, ...]
    returns: PipeType
    returns_doc: str
    pure: bool
    func: Callable
    origin: str
    takes_context: bool
    idempotent: bool = False  # safe to call again with the same arguments (pure implies it)
    # Waits on the outside world (a model, the network, a sandbox, a timer): the VM runs it on its executor
    # so that other tasks of the run go on meanwhile.
    slow: bool = False
    # Needs from its SkillContext only what can be shipped to another machine (the workspace path, the
    # settings as read at the start, the run id and idempotency key; no models, no spend meter, no
    # driver-held handles), so an executor like Ray may run it on a worker. Implies slow.
    remote: bool = False
    # The share of a CPU one call uses while it runs: an executor that places calls on a cluster (Ray) reserves
    # that much, so a skill that mostly waits (a timer, the network) asks for a little and many wait at once.
    cpu: float = 1.0
    # Nothing outside the run sees the call: it reads (a clock, a file, a random source) and changes nothing, so
    # a durable run may commit its step without an fsync of its own (group commit, docs/durability.md).
    unobserved: bool = False
    # For a skill that runs a .pipe module (a learned one): the module's `use` lines, the capabilities a call exercises.
    # A generated module may call it wherever its block's `use` lines cover these (decompose/validate.py); None for a
    # Python skill, whose capability is its own name.
    uses: tuple[str, ...] | None = None

    @property
    def namespace(self) -> str:
        return self.name.rpartition(".")[0]

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def signature(self) -> str:
        """The skill's .pipe signature, e.g. `text.split(text: str, sep: str? = none) -> list[str]`."""
        parts = []
        for p in self.params:
            text = f"{p.name}: {p.type}"
            if not p.required:
                text += f" = {display(p.default, nested=True)}"
            parts.append(text)
        return f"{self.name}({', '.join(parts)}) -> {self.returns}"

    def input_schema(self) -> dict:
        """A JSON schema for the arguments, as one object keyed by parameter name."""
        properties = {}
        for p in self.params:
            prop = json_schema(p.type)
            if p.doc:
                prop["description"] = p.doc
            if not p.required and _jsonable(p.default):
                prop["default"] = to_plain(p.default)
            properties[p.name] = prop
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = [p.name for p in self.params if p.required]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        if self.description:
            schema["description"] = self.description
        return schema

    def output_schema(self) -> dict:
        schema = json_schema(self.returns)
        if self.returns_doc:
            schema["description"] = self.returns_doc
        return schema

    def bind(self, args: list, kwargs: dict) -> dict[str, Any]:
        """Match positional then keyword arguments to parameters, filling defaults; SkillError if they don't fit."""
        if len(args) > len(self.params):
            names = ", ".join(p.name for p in self.params) or "none"
            raise SkillError(
                f"{self.name} takes at most {len(self.params)} positional argument"
                f"{'s' if len(self.params) != 1 else ''} ({names}), got {len(args)}",
                hint=f"the signature is {self.signature()}",
            )
        bound: dict[str, Any] = {p.name: value for p, value in zip(self.params, args)}
        known = [p.name for p in self.params]
        for key, value in kwargs.items():
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                raise SkillArgumentError(
                    self.name, key,
                    expected="one of " + (", ".join(f"`{n}`" for n in known) or "no arguments"),
                    got=f"unknown keyword `{key}`",
                    hint=f"did you mean `{close[0]}`?" if close else f"the signature is {self.signature()}",
                )
            if key in bound:
                raise SkillArgumentError(
                    self.name, key, expected="one value",
                    got="two (one positional and one by keyword)",
                    hint=f"pass `{key}` either by position or as `{key}=...`, not both",
                )
            bound[key] = value
        for p in self.params:
            if p.name in bound:
                continue
            if p.required:
                raise SkillArgumentError(
                    self.name, p.name, expected=str(p.type), got="nothing (it is required)",
                    hint=f"the signature is {self.signature()}",
                )
            bound[p.name] = p.default
        return {p.name: bound[p.name] for p in self.params}

    def invoke(self, args: list, kwargs: dict, ctx: SkillContext) -> Any:
        """Bind and validate the arguments, call the function, and return its result as a checked .pipe value."""
        bound = self.bind(args, kwargs)
        call: dict[str, Any] = {}
        for p in self.params:
            value = _as_argument(bound[p.name], p.type)
            if not conforms(value, p.type):
                raise SkillArgumentError(self.name, p.name, expected=str(p.type), got=describe_value(value))
            call[p.name] = _path_objects(value, p.type)
        if self.takes_context:
            call["ctx"] = ctx
        result = to_pipe_value(self.func(**call))
        if not conforms(result, self.returns):
            raise SkillError(
                f"skill {self.name} returned {describe_value(result)}, but declares {self.returns}",
                hint="this is a bug in the skill",
            )
        return result

    def __repr__(self) -> str:
        return f"<Skill {self.signature()} from {self.origin}>"


def describe_value(value: Any, limit: int = 40) -> str:
    """`<type> <short display>` for error messages, e.g. `int 3` or `list[str] ["a", "b"]`."""
    shown = display(value, nested=True)
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return f"{T.type_of_value(value)} {shown}"


_PLAIN = frozenset({str, int, float, bool, type(None), RecordValue, BytesValue})


def to_pipe_value(value: Any) -> Any:
    """Convert what a Python function returned into .pipe values (tuples, sets, paths, pydantic models)."""
    if value is None or isinstance(value, (str, bool, int, float, RecordValue, BytesValue)):
        return value
    if type(value) is list and set(map(type, value)) <= _PLAIN:
        return value  # the common case, checked at C speed: a list of plain values needs no copy
    if isinstance(value, (list, tuple)):
        return [to_pipe_value(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): to_pipe_value(v) for k, v in value.items()}
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (bytes, bytearray)):  # a skill hinted `-> bytes` that returned plain Python bytes
        return BytesValue(value)
    if isinstance(value, (set, frozenset)):
        items = [to_pipe_value(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    # pydantic models, recognised by shape so pydantic is not imported just to check.
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):
        return to_pipe_value(dump())
    return value


def _as_argument(value: Any, ptype: PipeType) -> Any:
    """Records passed where a dict is expected become their fields (also inside lists and dicts)."""
    kind = ptype.kind
    if kind == "optional":
        return value if value is None else _as_argument(value, ptype.arg)
    if kind == "dict":
        if isinstance(value, RecordValue):
            value = dict(value.fields)
        if isinstance(value, dict) and not ptype.arg.is_any:
            return {k: _as_argument(v, ptype.arg) for k, v in value.items()}
        return value
    if kind == "list" and isinstance(value, list) and not ptype.arg.is_any:
        return [_as_argument(v, ptype.arg) for v in value]
    return value


def _path_objects(value: Any, ptype: PipeType) -> Any:
    """Strings passed to parameters typed `path` (a Python Path hint) arrive as Path objects."""
    kind = ptype.kind
    if kind == "path" and isinstance(value, str):
        return Path(value)
    if kind == "optional":
        return _path_objects(value, ptype.arg)
    if kind == "list" and isinstance(value, list) and ptype.arg.kind in ("path", "optional", "list"):
        return [_path_objects(v, ptype.arg) for v in value]
    return value


def json_schema(ptype: PipeType) -> dict:
    """The JSON schema of a .pipe type."""
    kind = ptype.kind
    if kind == "any":
        return {}
    if kind == "optional":
        return {"anyOf": [json_schema(ptype.arg), {"type": "null"}]}
    if kind == "list":
        return {"type": "array", "items": json_schema(ptype.arg)}
    if kind == "dict":
        return {"type": "object", "additionalProperties": json_schema(ptype.arg)}
    if kind == "record":
        return {"type": "object", "title": ptype.name}
    if kind == "path":
        return {"type": "string", "format": "path"}
    if kind == "bytes":  # how MCP and JSON outputs carry one (runtime/values.py to_plain)
        return {"type": "object", "title": "bytes", "required": ["media_type", "base64"],
                "properties": {"media_type": {"type": "string"}, "size": {"type": "integer"},
                               "sha256": {"type": "string"}, "base64": {"type": "string", "format": "byte"}}}
    return {"type": {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "none": "null"}[kind]}


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return isinstance(value, RecordValue)
