"""Turn typed, documented Python functions into Skills, validate their calls, and keep them in a registry."""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import inspect
import re
import time
import typing
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any, Callable

from orgtree_lang.runtime.config import CONFIG_NAME, ConfigSnapshot
from orgtree_lang.runtime.docstrings import parse_docstring
from orgtree_lang.runtime.errors import SkillArgumentError, SkillError
from orgtree_lang.runtime.state_db import StateConnection, open_state_db, state_db_path
from orgtree_lang.runtime.values import RecordValue, conforms, display, to_plain
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.syntax import types as T
from orgtree_lang.syntax.types import PipeType

PLUGIN_GROUP = "orgtree_lang.skills"
_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_MARK = "__pipe_skill__"


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


_PLAIN = frozenset({str, int, float, bool, type(None), RecordValue})


def to_pipe_value(value: Any) -> Any:
    """Convert what a Python function returned into .pipe values (tuples, sets, paths, pydantic models)."""
    if value is None or isinstance(value, (str, bool, int, float, RecordValue)):
        return value
    if type(value) is list and set(map(type, value)) <= _PLAIN:
        return value  # the common case, checked at C speed: a list of plain values needs no copy
    if isinstance(value, (list, tuple)):
        return [to_pipe_value(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): to_pipe_value(v) for k, v in value.items()}
    if isinstance(value, PurePath):
        return str(value)
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
    return {"type": {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "none": "null"}[kind]}


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return isinstance(value, RecordValue)


def skill(name: str | Callable | None = None, *, pure: bool = False, idempotent: bool = False,
          slow: bool = False, remote: bool = False, unobserved: bool = False, cpu: float = 1.0) -> Any:
    """Mark a typed, documented function as a skill; the registry picks it up, nothing is registered here.

    Use as `@skill`, `@skill()` or `@skill("text.split", pure=True)`. The name defaults to
    `<last part of the module>.<function name>`. `slow=True` says the skill waits on the outside world
    (a model, the network, a sandbox, a timer): parallel branches overlap such calls. `remote=True` (implies
    slow) says it may run on another machine: it uses no model, spend meter or other driver-held part of
    its context (see docs/ray.md); `cpu` is the share of a CPU a call uses while it runs (0.1 for a skill
    that mostly waits), which a cluster reserves for it. `unobserved=True` says nothing outside the run sees
    a call (it only reads or draws a value): a durable run groups its commits.
    """
    if callable(name):
        return skill()(name)

    def mark(func: Callable) -> Callable:
        built = make_skill(func, name=name, pure=pure, idempotent=idempotent, slow=slow, remote=remote,
                           unobserved=unobserved, cpu=cpu,
                           origin=func.__module__)
        setattr(func, _MARK, built)
        return func

    return mark


def make_skill(
    func: Callable,
    *,
    name: str | None = None,
    pure: bool = False,
    idempotent: bool = False,
    slow: bool = False,
    remote: bool = False,
    unobserved: bool = False,
    cpu: float = 1.0,
    origin: str = "local",
) -> Skill:
    """Build a Skill from a function's type hints and Google-style docstring; TypeError if either is missing."""
    if not callable(func) or not hasattr(func, "__name__"):
        raise TypeError(f"a skill must be a function, got {type(func).__name__}")
    if isinstance(cpu, bool) or not isinstance(cpu, (int, float)) or not 0 < cpu <= 64:
        raise TypeError(f"skill {name or func.__name__}: cpu must be a share of CPUs above 0 (like 0.1 or 1), "
                        f"got {cpu!r}")
    label = f"{getattr(func, '__module__', '?')}.{func.__qualname__}"
    skill_name = name or f"{(func.__module__ or '').rpartition('.')[2] or 'local'}.{func.__name__}"
    if not _NAME.match(skill_name):
        raise TypeError(
            f"skill name {skill_name!r} for {label} must be dotted identifiers like `text.split`"
        )
    doc = parse_docstring(inspect.getdoc(func))
    if not doc.summary:
        raise TypeError(f"skill {skill_name} ({label}) has no docstring; say what it does in one line")
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:  # unresolvable forward references, typos in annotations
        raise TypeError(f"skill {skill_name} ({label}): cannot read its type hints: {exc}") from exc
    params: list[Param] = []
    takes_context = False
    for p in inspect.signature(func).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise TypeError(
                f"skill {skill_name} ({label}): parameter `{p.name}` must be an ordinary named parameter "
                "(no *args, **kwargs or positional-only parameters)"
            )
        if p.name not in hints:
            raise TypeError(f"skill {skill_name} ({label}): parameter `{p.name}` has no type hint")
        hint = hints[p.name]
        if hint is SkillContext:
            if p.name != "ctx":
                raise TypeError(f"skill {skill_name} ({label}): the SkillContext parameter must be named `ctx`")
            takes_context = True
            continue
        ptype = T.from_python(hint)
        default = MISSING if p.default is p.empty else p.default
        if default is not MISSING and not conforms(to_pipe_value(default), ptype):
            raise TypeError(
                f"skill {skill_name} ({label}): default {default!r} of `{p.name}` is not a {ptype}"
            )
        params.append(Param(p.name, ptype, default, doc.params.get(p.name, "")))
    if "return" not in hints:
        raise TypeError(f"skill {skill_name} ({label}) has no return type hint")
    return Skill(
        name=skill_name,
        description=doc.description,
        params=tuple(params),
        returns=T.from_python(hints["return"]),
        returns_doc=doc.returns,
        pure=pure,
        func=func,
        origin=origin,
        takes_context=takes_context,
        idempotent=idempotent or pure,
        slow=slow or remote,
        remote=remote,
        unobserved=unobserved or pure,
        cpu=float(cpu),
    )


class SkillRegistry:
    """The skills a run may call, by dotted name, each with the package it came from."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}
        self._plugins: list[str] = []
        self._default_origin = "local"
        # Namespaces whose skills are found only when first asked for (an MCP server's tools): namespace ->
        # (what identifies the source for the compile cache, a loader returning its Skills).
        self._lazy: dict[str, tuple[str, Callable[[], list[Skill]]]] = {}
        self._lazy_keys: dict[str, str] = {}
        self._warm: dict[str, Callable[[], None]] = {}
        self._from_lazy: set[str] = set()

    def add_lazy(self, namespace: str, key: str, load: Callable[[], list[Skill]],
                 warm: Callable[[], None] | None = None) -> None:
        """Skills under `namespace` that `load()` makes on first use: a lookup, a listing of the namespace or
        `load_lazy`. Until then the namespace is known (a `use` line may name it) and nothing is loaded; `key`
        stands for the skills in the fingerprint, so whether they were loaded yet never changes it. `warm()`,
        when given, begins in the background what the skills' first call will need (`warm_lazy`)."""
        if not _NAME.match(namespace + ".x"):
            raise TypeError(f"namespace {namespace!r} must be dotted identifiers like `mcp.files`")
        self._lazy[namespace] = (key, load)
        self._lazy_keys[namespace] = key
        if warm is not None:
            self._warm[namespace] = warm

    def warm_lazy(self, namespaces) -> None:
        """Begin, in the background, what the lazy namespaces among `namespaces` (those a program uses, or a
        prefix of one) need for their first call, such as starting an MCP server; each at most once."""
        for name in namespaces:
            for ns in [n for n in self._warm if n == name or n.startswith(name + ".") or name.startswith(n + ".")]:
                self._warm.pop(ns)()

    def load_lazy(self, namespace: str | None = None) -> None:
        """Load the lazy namespaces under `namespace` (all of them when None); a loader's error propagates, and
        a namespace that failed is tried again next time."""
        for ns in [n for n in self._lazy if namespace is None or n == namespace or n.startswith(namespace + ".")
                   or namespace.startswith(n + ".")]:
            _, load = self._lazy[ns]
            skills = load()
            del self._lazy[ns]
            for built in skills:
                self.register(built, origin=built.origin)
                self._from_lazy.add(built.name)

    def lazy_namespaces(self, *, loaded: bool = False) -> list[str]:
        """The lazy namespaces not loaded yet (with `loaded`, those loaded already too)."""
        return sorted(self._lazy_keys if loaded else self._lazy)

    def register(self, obj: Any, *, name: str | None = None, origin: str | None = None) -> Skill:
        """Add a @skill function, a plain typed function or a Skill; ValueError if the name is taken.

        `origin` defaults to "local", or to the plugin's distribution name while its hook runs.
        """
        origin = origin or self._default_origin
        if isinstance(obj, Skill):
            built = replace(obj, name=name or obj.name, origin=origin)
            if not _NAME.match(built.name):
                raise TypeError(f"skill name {built.name!r} must be dotted identifiers like `text.split`")
        elif isinstance(getattr(obj, _MARK, None), Skill):
            marked: Skill = getattr(obj, _MARK)
            built = replace(marked, origin=origin) if name is None else make_skill(
                obj, name=name, pure=marked.pure, idempotent=marked.idempotent, slow=marked.slow,
                remote=marked.remote, unobserved=marked.unobserved, cpu=marked.cpu, origin=origin
            )
        else:
            built = make_skill(obj, name=name, origin=origin)
        existing = self._skills.get(built.name)
        if existing is not None:
            raise ValueError(
                f"skill `{built.name}` from {built.origin} is already registered by {existing.origin}"
            )
        self._skills[built.name] = built
        return built

    def register_module(self, module: Any, origin: str | None = None) -> None:
        """Register every @skill function defined in (not merely imported into) a Python module."""
        marked = [
            obj for obj in vars(module).values()
            if isinstance(getattr(obj, _MARK, None), Skill) and getattr(obj, "__module__", None) == module.__name__
        ]
        for func in sorted(marked, key=lambda f: getattr(f, _MARK).name):
            self.register(func, origin=origin)

    def get(self, name: str) -> Skill | None:
        found = self._skills.get(name)
        if found is None and self._lazy:
            namespace = name.rpartition(".")[0]
            if namespace in self._lazy:
                self.load_lazy(namespace)
                return self._skills.get(name)
        return found

    def names(self) -> list[str]:
        """The names of the skills registered so far (lazy namespaces not yet loaded add none)."""
        return sorted(self._skills)

    def namespaces(self) -> set[str]:
        """Every dotted prefix with skills under it: `a.b.c` gives both `a` and `a.b`."""
        result: set[str] = set()
        for name in self._skills:
            parts = name.split(".")
            for i in range(1, len(parts)):
                result.add(".".join(parts[:i]))
        for namespace in self._lazy:
            parts = namespace.split(".")
            result.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        return result

    def in_namespace(self, ns: str) -> list[Skill]:
        """The skills under a namespace, nested ones included, sorted by name."""
        prefix = ns.rstrip(".") + "."
        if self._lazy:
            self.load_lazy(ns.rstrip("."))
        return [self._skills[n] for n in self.names() if n.startswith(prefix)]

    def suggest(self, name: str) -> str | None:
        """The registered name closest to `name`, for "did you mean" hints."""
        close = difflib.get_close_matches(name, list(self._skills), n=1, cutoff=0.6)
        if close:
            return close[0]
        # `text.spilt` → a close function name within the same namespace
        ns, _, last = name.rpartition(".")
        same_ns = {n.rpartition(".")[2]: n for n in self._skills if n.rpartition(".")[0] == ns}
        close = difflib.get_close_matches(last, list(same_ns), n=1, cutoff=0.6)
        return same_ns[close[0]] if close else None

    def fingerprint(self) -> str:
        """A sha256 over every skill's signature and purity; changes whenever what the checker sees changes."""
        digest = hashlib.sha256()
        for n in self.names():
            if n in self._from_lazy:
                continue  # stood for by its namespace's key below, loaded or not
            s = self._skills[n]
            digest.update(f"{s.signature()} pure={s.pure}\n".encode())
        for namespace, key in sorted(self._lazy_keys.items()):
            digest.update(f"lazy {namespace} {key}\n".encode())
        return digest.hexdigest()

    def load_plugins(self, group: str = PLUGIN_GROUP) -> list[str]:
        """Call the `register(registry)` hook of every installed entry point in `group`; returns their names."""
        loaded: list[str] = []
        points = sorted(importlib.metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))
        for ep in points:
            key = f"{group}:{ep.name}={ep.value}"
            if key in self._plugins:
                continue
            dist = getattr(ep, "dist", None)
            origin = getattr(dist, "name", None) or ep.module
            try:
                hook = ep.load()
                if not callable(hook):
                    raise TypeError(f"{ep.value} is a {type(hook).__name__}, not a register(registry) function")
                self._default_origin = origin
                hook(self)
            except Exception as exc:
                raise SkillError(
                    f"skill plugin `{ep.name}` ({ep.value}, from {origin}) failed to load: "
                    f"{type(exc).__name__}: {exc}",
                    hint="fix or uninstall the plugin, or set PIPE_NO_PLUGINS=1 to run without plugins",
                ) from exc
            finally:
                self._default_origin = "local"
            self._plugins.append(key)
            loaded.append(ep.name)
        return loaded

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> typing.Iterator[Skill]:
        return iter(self._skills[n] for n in self.names())

    def __repr__(self) -> str:
        return f"<SkillRegistry {len(self)} skills>"

