"""The table of executors (where slow skill calls run) and how `--executor NAME[:ARGUMENT]` picks one."""

from __future__ import annotations

import importlib

from orgtree_lang.runtime.errors import UsageError

# name -> (module, class). Adding an executor: a module whose class has `from_spec(argument)`, `submit`
# and `close` (vm/executor.py's protocol), and one row here. Imported only when chosen.
EXECUTORS: dict[str, tuple[str, str]] = {
    "threads": ("orgtree_lang.engine.threads", "ThreadExecutor"),
}
DEFAULT_EXECUTOR = "threads"


def make_executor(spec: str | None = None):
    """The executor `spec` names (`threads`, `threads:8`, ...); the default when `spec` is empty."""
    spec = spec or DEFAULT_EXECUTOR
    name, _, argument = spec.partition(":")
    if name not in EXECUTORS:
        raise UsageError(f"unknown executor `{name}` (from `{spec}`)",
                         hint=f"the executors are: {', '.join(sorted(EXECUTORS))}; e.g. --executor threads:8")
    module_name, class_name = EXECUTORS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    try:
        return cls.from_spec(argument or None)
    except ValueError as err:
        raise UsageError(f"executor `{spec}`: {err}") from None
