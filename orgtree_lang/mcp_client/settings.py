"""The `[mcp]` table of orgtree.toml: the MCP servers a workspace may call, and which pipelines `pipe mcp serve` exposes."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from orgtree_lang.runtime.config import ConfigError, ConfigSnapshot, read_config

NAMESPACE = "mcp"
_SERVER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYS = {"command", "url", "env", "cwd", "timeout", "startup_timeout"}
INSTALL_HINT = "install the extra: pip install 'orgtree-lang[mcp]'"
EXAMPLE = '[mcp.servers.files]\ncommand = ["python", "files_server.py"]'


@dataclass(frozen=True)
class ServerSpec:
    """One `[mcp.servers.NAME]` table: a command to start (stdio) or a URL (streamable HTTP), and its time limits."""

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    timeout: float = 60.0  # seconds one tool call may take
    startup_timeout: float = 30.0  # seconds to start the server and list its tools

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE}.{self.name}"

    def describe(self) -> str:
        return f"`{shlex.join(self.command)}`" if self.command else f"<{self.url}>"

    def key(self) -> str:
        """What identifies the server for the compile cache."""
        return repr((self.command, self.url, self.env, self.cwd))


def server_specs(config: Path | str | ConfigSnapshot) -> list[ServerSpec]:
    """Every `[mcp.servers.NAME]` of the file, checked; ConfigError naming the table and the fix otherwise."""
    table = read_config(config).get("mcp", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{config}: [mcp] must be a table")
    servers = table.get("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{config}: [mcp.servers] must be a table of servers, e.g.\n{EXAMPLE}")
    root = Path(str(config)).resolve().parent
    return [_spec(name, entry, config, root) for name, entry in sorted(servers.items())]


def _spec(name: str, entry, config, root: Path) -> ServerSpec:
    where = f"{config}: [mcp.servers.{name}]"
    if not _SERVER_NAME.match(name):
        raise ConfigError(f"{where}: a server name must be letters, digits and `_` (it becomes `mcp.{name}.TOOL`)")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table with `command` or `url`, e.g.\n{EXAMPLE}")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key `{unknown[0]}`; the keys are {', '.join(sorted(_KEYS))}")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where} needs exactly one of `command` (a list: the program and its arguments, for a "
                          f"server on stdio) or `url` (a streamable HTTP server), e.g.\n{EXAMPLE}")
    if command is not None and (not isinstance(command, list) or not command
                                or not all(isinstance(c, str) for c in command)):
        raise ConfigError(f"{where}: command must be a non-empty list of strings, got {command!r}",
                          hint='e.g. command = ["python", "server.py"]')
    if url is not None and (not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https")):
        raise ConfigError(f"{where}: url must be an http:// or https:// URL, got {url!r}")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(f"{where}: env must be a table of strings")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{where}: cwd must be a string (a folder, relative to the workspace)")
    limits = {}
    for key in ("timeout", "startup_timeout"):
        value = entry.get(key, ServerSpec.__dataclass_fields__[key].default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"{where}: {key} must be a positive number of seconds, got {value!r}")
        limits[key] = float(value)
    return ServerSpec(name, tuple(command or ()), url, tuple(sorted(env.items())),
                      str(root / cwd) if cwd is not None else str(root), **limits)


def exposed(config: Path | str | ConfigSnapshot) -> list[str]:
    """`[mcp] expose`: the pipelines `pipe mcp serve` offers when given none (`FILE` or `FILE:PIPELINE`)."""
    table = read_config(config).get("mcp", {})
    listed = table.get("expose", []) if isinstance(table, dict) else []
    if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
        raise ConfigError(f"{config}: [mcp] expose must be a list of strings like \"tools/triage.pipe\" or "
                          f"\"tools/triage.pipe:label\"")
    return listed
