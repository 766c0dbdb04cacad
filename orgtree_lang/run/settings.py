"""RunSettings: a workspace's orgtree.toml read once into typed sections, handed to everything a run assembles."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.config import CONFIG_NAME, ConfigError, ConfigSnapshot, config_section


@dataclass(frozen=True, eq=False)
class RunSettings:
    """The settings of one run (and of its resume, retry, replay, fork, `pipe test` and `pipe mcp serve` calls).

    `load(root)` reads the file once; each section is parsed from that text the first time it is asked for, so a
    run that never needs a table never fails on a bad one (a run with no `ambiguous` block ignores a broken
    `[decompose]`, as before). Errors are the sections' own ConfigErrors: the file, the line when tomllib gives
    one, the table and key, what was expected and what was found. Nothing else opens orgtree.toml during a run:
    collaborators get the section they need, and skills the same snapshot (`SkillContext.config`)."""

    root: Path
    file: ConfigSnapshot = field(repr=False)

    @classmethod
    def load(cls, root: Path | str) -> RunSettings:
        root = Path(root).expanduser().resolve()
        return cls(root, ConfigSnapshot(root / CONFIG_NAME))

    @property
    def path(self) -> Path:
        return self.file.path

    def table(self, name: str, types: dict[str, type | tuple[type, ...]] | None = None) -> dict[str, Any]:
        """The raw table `[name]` (empty if absent), each key in `types` checked (for tables with no typed section)."""
        return config_section(name, self.file, types=types)

    # ---- typed sections, each owned by the layer that obeys it --------------------------------
    @cached_property
    def model(self):
        """`[model]`: models.select.ModelSettings (name, review, timeout, context windows)."""
        from orgtree_lang.models.select import ModelSettings

        return ModelSettings.from_config(self.file)

    @cached_property
    def decompose(self):
        """`[decompose]`: decompose.decomposer.DecomposeSettings."""
        from orgtree_lang.decompose.decomposer import DecomposeSettings

        return DecomposeSettings.from_config(self.file)

    @cached_property
    def memory(self):
        """`[memory]`: memory.settings.MemorySettings (who writes the context tree's summaries, agents' searches)."""
        from orgtree_lang.memory.settings import MemorySettings

        return MemorySettings.from_config(self.file)

    @cached_property
    def executor(self) -> dict[str, Any]:
        """`[executor]`: kind, address, ship_env, remote_nodes (executors/table.py)."""
        from orgtree_lang.executors.table import executor_settings

        return executor_settings(self.file)

    def trace(self, level: str | None = None):
        """`[trace]` as vm.trace.TraceSettings, with `level` (a --trace-level flag) winning over the file's."""
        from orgtree_lang.vm.trace import TraceSettings

        return TraceSettings.from_config(self.file, level)

    @cached_property
    def durable(self) -> dict[str, float]:
        """`[durable]`: group commit's bounds, {"steps": N, "seconds": S}."""
        from orgtree_lang.durable.journal import GROUP_SECONDS, GROUP_STEPS

        section = self.table("durable", {"group_steps": int, "group_ms": (int, float)})
        steps, ms = section.get("group_steps", GROUP_STEPS), section.get("group_ms", GROUP_SECONDS * 1000)
        if steps < 1 or ms < 0:
            raise ConfigError(f"{self.path}: [durable] group_steps must be 1 or more and group_ms 0 or more, got "
                              f"{steps!r} and {ms!r} (group_steps = 1 fsyncs every step)")
        return {"steps": steps, "seconds": ms / 1000}

    @cached_property
    def inline_bytes(self) -> int:
        """`[blobs] inline_bytes`: a journal stores larger values in the workspace's blob store."""
        from orgtree_lang.runtime.blobs import INLINE_BYTES

        return self.table("blobs", {"inline_bytes": int}).get("inline_bytes", INLINE_BYTES)

    @cached_property
    def routes(self) -> dict[str, str]:
        """`[org.routes]`: topic -> pipeline."""
        from orgtree_lang.runtime.routes import config_routes

        return config_routes(self.file)

    def otel(self, flag: bool = False, endpoint: str | None = None):
        """`[otel]` with the --otel / --otel-endpoint flags: a telemetry.otel.OtelExport, or None."""
        from orgtree_lang.telemetry.otel import OtelExport

        return OtelExport.chosen(self.file, flag, endpoint)

    @cached_property
    def writable_sources(self) -> bool:
        """`[fs] writable_sources`: whether runs may write the workspace's program sources."""
        return self.table("fs", {"writable_sources": bool}).get("writable_sources", False)

    @cached_property
    def skills(self) -> dict[str, Any]:
        """`[skills]`: promote_after, removal_evidence (the skill pool's thresholds)."""
        return self.table("skills", {"promote_after": int, "removal_evidence": int})

    @cached_property
    def mcp_servers(self) -> list:
        """`[mcp.servers.NAME]` tables as mcp_client.settings.ServerSpec."""
        from orgtree_lang.mcp_client.settings import server_specs

        return server_specs(self.file) if self.file.exists() else []

    @cached_property
    def mcp_exposed(self) -> list[str]:
        """`[mcp] expose`: the pipelines `pipe mcp serve` offers."""
        from orgtree_lang.mcp_client.settings import exposed

        return exposed(self.file)

    @cached_property
    def sandbox(self):
        """`[sandbox]`: sandbox.settings.SandboxSettings."""
        from orgtree_lang.sandbox.settings import SandboxSettings

        return SandboxSettings.from_config(self.file)

    @cached_property
    def http(self):
        """`[http]`: sandbox.allowlist.HttpPolicy."""
        from orgtree_lang.sandbox.allowlist import HttpPolicy

        return HttpPolicy.from_config(self.file)

    @cached_property
    def web_search(self) -> str:
        """`[web] search`: the provider web.search uses ("workspace" unless the file names another)."""
        return self.table("web", {"search": str, "url": str}).get("search", "workspace")
