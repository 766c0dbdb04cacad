"""The table of executors (where slow skill calls run) and how `--executor NAME[:ARGUMENT]` picks one."""

from __future__ import annotations

import importlib

from orgtree_lang.runtime.errors import UsageError

# name -> (module, class). Adding an executor: a module whose class has `from_spec(argument, settings)`,
# `submit` and `close` (vm/executor.py's protocol), and one row here. Imported only when chosen.
EXECUTORS: dict[str, tuple[str, str]] = {
    "threads": ("orgtree_lang.executors.threads", "ThreadExecutor"),
    "ray": ("orgtree_lang.executors.ray_cluster", "RayExecutor"),
}
DEFAULT_EXECUTOR = "threads"


def executor_settings(config) -> dict:
    """The `[executor]` table of orgtree.toml (`config`: the run's ConfigSnapshot, or the file's path): `kind`,
    `address`, `ship_env`, `remote_nodes` (all optional)."""
    from orgtree_lang.runtime.config import config_section

    return config_section("executor", config,
                          types={"kind": str, "address": str, "ship_env": list, "remote_nodes": bool})


def make_executor(spec: str | None = None, settings: dict | None = None):
    """The executor `spec` names (`threads`, `threads:8`, `ray:auto`, ...); when `spec` is empty, the one
    `settings` (the `[executor]` table) names with `kind` and `address`, else the default."""
    settings = settings or {}
    if not spec and settings.get("kind"):
        spec = settings["kind"] + (f":{settings['address']}" if settings.get("address") else "")
    spec = spec or DEFAULT_EXECUTOR
    name, _, argument = spec.partition(":")
    if name not in EXECUTORS:
        raise UsageError(f"unknown executor `{name}` (from `{spec}`)",
                         hint=f"the executors are: {', '.join(sorted(EXECUTORS))}; e.g. --executor threads:8")
    module_name, class_name = EXECUTORS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    try:
        return cls.from_spec(argument or None, settings)
    except ValueError as err:
        raise UsageError(f"executor `{spec}`: {err}") from None
