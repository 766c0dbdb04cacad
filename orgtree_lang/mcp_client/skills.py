"""An MCP server's tools as skills `mcp.NAME.TOOL`: JSON schemas mapped to .pipe types, calls sent to the server."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from orgtree_lang.mcp_client.contents import content_value
from orgtree_lang.mcp_client.settings import ServerSpec
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import MISSING, Param, Skill
from orgtree_lang.runtime.records import RecordTypes
from orgtree_lang.runtime.values import conforms, to_plain
from orgtree_lang.syntax import types as T
from orgtree_lang.syntax.types import PipeType

# Arguments of a server's command that are its code: a change to one of them may change its tools.
CODE_SUFFIXES = frozenset({".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".jar", ".sh", ".lua"})
RETRY_AFTER = 30.0  # seconds a server that failed to start is not started again
_SCALARS = {"string": T.STR, "integer": T.INT, "number": T.FLOAT, "boolean": T.BOOL, "null": T.NONE}
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_]")  # .pipe names are ASCII: every other character becomes `_`


def pipe_type(schema: Any) -> PipeType:
    """The .pipe type of a JSON schema: scalars, arrays, objects (a dict), nullable types; `any` for the rest."""
    if not isinstance(schema, dict):
        return T.ANY
    kind = schema.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        inner = pipe_type({**schema, "type": others[0]}) if len(others) == 1 else T.ANY
        return T.optional(inner) if "null" in kind and not inner.is_any else inner
    for key in ("anyOf", "oneOf"):
        choices = schema.get(key)
        if isinstance(choices, list):
            others = [c for c in choices if not (isinstance(c, dict) and c.get("type") == "null")]
            inner = pipe_type(others[0]) if len(others) == 1 else T.ANY
            return T.optional(inner) if len(others) < len(choices) and not inner.is_any else inner
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return T.list_of(pipe_type(schema.get("items")))
    if kind == "object" and schema.get("title") == "bytes" and "base64" in (schema.get("properties") or {}):
        return T.BYTES  # runtime/skill_spec.py json_schema: a bytes value of `pipe mcp serve` (or any server)
    if kind == "object":
        extra = schema.get("additionalProperties")
        return T.dict_of(pipe_type(extra) if isinstance(extra, dict) and not schema.get("properties") else T.ANY)
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return T.STR
    return T.ANY


def _parts(ptype: PipeType):
    """`ptype` and the types inside it (list items, dict values, the inner type of `T?`)."""
    while ptype is not None:
        yield ptype
        ptype = ptype.arg


def _wrapped_result(schema: Any) -> Any:
    """The schema of `result` when an output schema only wraps one value (as SDK servers do for a plain return
    type), else None."""
    if isinstance(schema, dict) and set(schema.get("properties") or {}) == {"result"} \
            and schema.get("required") == ["result"]:
        return schema["properties"]["result"]
    return None


class McpServerSkills:
    """The skills of one `[mcp.servers.NAME]`: its tools, listed once when first needed, called over one session."""

    def __init__(self, spec: ServerSpec, root: Path, *, offline: bool = False, config=None) -> None:
        self.spec = spec
        self.root = Path(root)
        self.config = config  # the orgtree.toml snapshot its [http] allowlist is read from (None: the file)
        self.offline = offline  # take the tool list saved by the last start when there is one (a replay)
        self._failed: tuple[float, SkillError] | None = None
        from orgtree_lang.mcp_client.connection import McpConnection  # asyncio and threads: only for a workspace with servers

        folder = self.root / ".orgtree" / "mcp"
        self.saved = folder / f"{spec.name}.tools.json"
        self.connection = McpConnection(spec, log=folder / f"{spec.name}.log")

    def load(self) -> list[Skill]:
        """The server's tools as skills; a failure is raised again for RETRY_AFTER seconds without another start
        (an editor's language server checks on every keystroke)."""
        from orgtree_lang.runtime.config import CONFIG_NAME

        # A replay takes the saved list as it is; a run takes it when the server and its files are as they were
        # when it was listed (a stdio server's command, each file it names, by mtime), so nothing starts to check.
        tools = self._saved_tools(self.offline or self.spec.url is None)
        if tools is None:
            if self._failed is not None and time.monotonic() - self._failed[0] < RETRY_AFTER:
                raise self._failed[1]
            try:
                check_allowed(self.spec, self.config if self.config is not None else self.root / CONFIG_NAME)
                tools = self.connection.tools()
            except SkillError as err:
                self._failed = (time.monotonic(), err)
                raise
            self._save_tools(tools)
        named, self.warnings = skill_names(tools, self.spec.name)
        for warning in self.warnings:
            _warn(warning)
        return [self.skill(tool, name) for tool, name in named]

    def _save_tools(self, tools: list) -> None:
        from orgtree_lang.runtime.files import write_atomic

        listed = [{"name": t.name, "title": t.title, "description": t.description, "input_schema": t.input_schema,
                   "output_schema": t.output_schema} for t in tools]
        self.saved.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.saved, json.dumps({"server": self.spec.key(), "files": self.files(), "tools": listed},
                                            indent=1))

    def _saved_tools(self, usable: bool) -> list | None:
        """The tools listed when this server (as configured now) last started, or None; unless `usable` (a
        replay), only when the files of its command are unchanged since."""
        from types import SimpleNamespace

        if not usable:
            return None
        try:
            saved = json.loads(self.saved.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("server") != self.spec.key():
            return None
        if not self.offline and saved.get("files") != self.files():
            return None
        return [SimpleNamespace(**tool) for tool in saved.get("tools", [])]

    def files(self) -> list[list]:
        """[path, mtime in ns] of the program and of every argument that names a file, for a stdio server."""
        import shutil

        if not self.spec.command:
            return []
        here = Path(self.spec.cwd) if self.spec.cwd else self.root
        program = shutil.which(self.spec.command[0])
        found = []
        for index, part in enumerate(([program] if program else []) + list(self.spec.command[1:])):
            path = Path(part) if Path(part).is_absolute() else here / part
            try:
                # The program, and code it is given (not a data file it writes, whose mtime says nothing).
                if path.is_file() and (index == 0 or path.suffix in CODE_SUFFIXES or os.access(path, os.X_OK)):
                    found.append([str(path), path.stat().st_mtime_ns])
            except (OSError, ValueError):
                continue
        return found

    def warm(self) -> None:
        """Start the server in the background, for a run about to call its tools (nothing for one not allowed)."""
        from orgtree_lang.runtime.config import CONFIG_NAME

        try:
            check_allowed(self.spec, self.config if self.config is not None else self.root / CONFIG_NAME)
        except SkillError:
            return  # the first call says why
        self.connection.start()

    def skill(self, tool, short_name: str | None = None) -> Skill:
        """The skill of one tool (`short_name`: its name in .pipe, from `skill_names`): parameters from its input
        schema, return type from its output schema (a str of its text when it has none), description from its
        description."""
        schema = tool.input_schema or {}
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        params = [self._param(name, prop, name in required) for name, prop in properties.items()]
        params.sort(key=lambda p: not p.required)  # .pipe, like Python, lists required parameters first
        wrapped = _wrapped_result(tool.output_schema)
        if tool.output_schema is None:
            returns = T.ANY  # its text, or the bytes of its images and resources (mcp_client/contents.py)
        else:
            returns = pipe_type(wrapped if wrapped is not None else tool.output_schema)
        name = f"{self.spec.namespace}.{short_name or pipe_name(tool.name)}"
        summary = (tool.description or tool.title or f"The tool `{tool.name}`.").strip()
        description = f"{summary}\n\nA tool of the MCP server `{self.spec.name}` ({self.spec.describe()})."
        if short_name is not None and short_name != tool.name:
            description += f" Its MCP name is {json.dumps(tool.name)}."
        omitted = {p.name for p in params if not p.required}
        connection, tool_name, skill_name = self.connection, tool.name, name
        # A return type with bytes in it is read from its plain JSON form (decided once, not at each call).
        records = RecordTypes({}) if T.BYTES in _parts(returns) else None

        def call(**arguments: Any) -> Any:
            # Plain JSON on the wire: records as their fields, bytes values as {media_type, size, sha256, base64}.
            sent = {k: to_plain(v) for k, v in arguments.items() if not (k in omitted and v is None)}
            result = connection.call(tool_name, sent)
            value = _value(skill_name, result, tool.output_schema is not None, wrapped is not None)
            return records.from_plain(value, returns) if records is not None else value

        return Skill(name=name, description=description, params=tuple(params), returns=returns,
                     returns_doc="", pure=False, func=call, origin=f"mcp server {self.spec.name}",
                     takes_context=False, slow=True)

    @staticmethod
    def _param(name: str, prop: Any, required: bool) -> Param:
        ptype = pipe_type(prop)
        doc = (prop.get("description") or "") if isinstance(prop, dict) else ""
        if required:
            return Param(name, ptype, MISSING, doc)
        default = prop.get("default") if isinstance(prop, dict) else None
        if default is None or not conforms(default, ptype):
            return Param(name, ptype if ptype.kind in ("optional", "any") else T.optional(ptype), None, doc)
        return Param(name, ptype, default, doc)

    def close(self) -> None:
        self.connection.close()


def pipe_name(tool_name: str) -> str:
    """The .pipe spelling of a tool's name: ASCII letters, digits and `_` (others become `_`), not starting with
    a digit, not a keyword (`if` becomes `if_`); "" when nothing of the name is left."""
    from orgtree_lang.syntax.words import KEYWORDS, RESERVED

    name = _NOT_A_NAME.sub("_", tool_name)
    if not name.strip("_"):
        return ""
    if name[0].isdigit():
        name = "_" + name
    return name + "_" if name in KEYWORDS or name in RESERVED else name


def skill_names(tools: list, server: str) -> tuple[list[tuple[Any, str]], list[str]]:
    """Each usable tool with its .pipe name, and a warning for each tool renamed or skipped: a name with nothing
    usable in it (`""`, `"日本"`) is skipped, a name that is not a .pipe name is renamed, and of tools whose names
    become the same, one whose name needed no change (else the first) keeps it and the others are skipped. A server's odd tool never breaks the others."""
    named: list[tuple[Any, str]] = []
    taken: dict[str, str] = {}
    warnings = []
    mapped = [(tool, str(tool.name), pipe_name(str(tool.name))) for tool in tools]
    # A tool whose name needs no change keeps it, whatever comes first; renamed ones take what is left, in order.
    mapped.sort(key=lambda entry: entry[1] != entry[2])
    for tool, original, name in mapped:
        shown = json.dumps(original, ensure_ascii=False)
        if not name:
            warnings.append(f"MCP server `{server}`: the tool {shown} is skipped: its name has no letter or digit "
                            f"a .pipe name can hold (ASCII letters, digits and `_`)")
        elif name in taken:
            warnings.append(f"MCP server `{server}`: the tool {shown} is skipped: as a .pipe name it would be "
                            f"`mcp.{server}.{name}`, which the tool {json.dumps(taken[name], ensure_ascii=False)} "
                            f"already has")
        else:
            taken[name] = original
            named.append((tool, name))
            if name != original:
                warnings.append(f"MCP server `{server}`: the tool {shown} is called `mcp.{server}.{name}` in .pipe")
    return named, warnings


def _warn(message: str) -> None:
    import sys

    print(f"warning: {message}", file=sys.stderr)


def _value(skill: str, result, structured: bool, wrapped: bool) -> Any:
    """What a tool call gives the program: its structured content when it declares an output schema (the
    `result` inside it when that only wraps one value), else its text; an error result is a SkillError."""
    texts = [getattr(block, "text", "") or "" for block in result.content if getattr(block, "type", None) == "text"]
    if result.is_error:
        message = "\n".join(texts).strip() or "no message"
        raise SkillError(f"{skill}: the tool failed: {message}",
                         hint="the message is the MCP server's; check the arguments against `pipe skills " + skill + "`")
    if structured:
        content = result.structured_content
        if content is None and len(texts) == 1:
            try:
                content = json.loads(texts[0])
            except ValueError:
                content = texts[0]
        return content.get("result") if wrapped and isinstance(content, dict) else content
    return content_value(skill, result.content)


def add_servers(registry, root: Path | str, *, offline: bool = False, config=None) -> None:
    """Make every `[mcp.servers.NAME]` of the workspace's orgtree.toml a lazy namespace `mcp.NAME` of `registry`:
    nothing starts until a program's check or run, or `pipe skills`, asks for one of its tools. `offline` (a
    replay, which calls no tool) takes the tools listed at a server's last start instead of starting it.
    `config` is the run's orgtree.toml snapshot (runtime.config.ConfigSnapshot); None reads the file."""
    from orgtree_lang.mcp_client.settings import server_specs
    from orgtree_lang.runtime.config import CONFIG_NAME, ConfigSnapshot

    config = config if config is not None else ConfigSnapshot(Path(root) / CONFIG_NAME)
    if not config.exists():
        return
    for spec in server_specs(config):
        source = McpServerSkills(spec, Path(root), offline=offline, config=config)
        # The files' mtimes are part of the key: a compiled program is not reused once the server's code changed.
        registry.add_lazy(spec.namespace, spec.key() + repr(source.files()), source.load,
                          warm=None if offline else source.warm)


def check_allowed(spec: ServerSpec, config) -> None:
    """SkillError unless the server's URL is on the workspace's `[http] allow` list (a stdio server needs none)."""
    if spec.url is None:
        return
    from orgtree_lang.sandbox.allowlist import HttpPolicy, UrlRefused

    try:
        HttpPolicy.from_config(config).check(spec.url)
    except UrlRefused:
        parts = urlsplit(spec.url)
        raise SkillError(f"MCP server `{spec.name}`: {spec.url} is not on the workspace's URL allowlist",
                         hint=f"if the server is trusted, add \"{parts.scheme}://{parts.netloc}\" to `allow` in the "
                              f"[http] table of {config}") from None
