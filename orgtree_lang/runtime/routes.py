"""Routes: what a route's pipeline must accept, and the `[org] routes` table of a workspace's orgtree.toml."""

from __future__ import annotations

from orgtree_lang.runtime.builtins import MESSAGE_RECORD
from orgtree_lang.runtime.config import ConfigError, config_section
from orgtree_lang.syntax import types as t


def handler_problem(params: list[tuple[str, t.PipeType, bool]]) -> str | None:
    """Why a pipeline with these parameters (name, type, has a default) cannot handle a routed message, or None.

    A route's node is started with the message as its first argument, so that parameter must take a Message
    and every other one needs a default."""
    if not params:
        return "it takes no parameters, so it cannot take the message"
    name, ptype, _ = params[0]
    if not t.is_assignable(t.record(MESSAGE_RECORD), ptype):
        return f"its first parameter `{name}: {ptype}` cannot take a Message"
    required = [p for p, _, has_default in params[1:] if not has_default]
    if required:
        return f"its other parameters need values a message does not give ({', '.join(required)})"
    return None


def config_routes(config) -> dict[str, str]:
    """The `[org] routes` table of orgtree.toml (`config`: the run's ConfigSnapshot, or the file's path): topic ->
    pipeline name (empty without one)."""
    path = config
    routes = config_section("org", path, types={"routes": dict}).get("routes", {})
    for topic, pipeline in routes.items():
        if not isinstance(pipeline, str) or not pipeline.isidentifier():
            raise ConfigError(f"{path}: [org] routes: the route \"{topic}\" must name a pipeline, got {pipeline!r}",
                              hint='write e.g. `billing = "billing_desk"` under [org.routes]')
    return dict(routes)
