"""Turn typed, documented Python functions into Skills (the `@skill` mark, `make_skill`) and keep them in a registry."""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import inspect
import re
import typing
from dataclasses import replace
from typing import Any, Callable

from orgtree_lang.runtime.docstrings import parse_docstring
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skill_spec import (MISSING, Param, Skill, SkillContext, describe_value, json_schema,
                                             to_pipe_value)
from orgtree_lang.runtime.values import conforms
from orgtree_lang.syntax import types as T

# The skill API plugins import from here (docs/skills.md): the parts a skill is made of live in skill_spec.py.
__all__ = ["MISSING", "PLUGIN_GROUP", "Param", "Skill", "SkillContext", "SkillRegistry", "describe_value",
           "json_schema", "make_skill", "skill", "to_pipe_value"]

PLUGIN_GROUP = "orgtree_lang.skills"
_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_MARK = "__pipe_skill__"



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

