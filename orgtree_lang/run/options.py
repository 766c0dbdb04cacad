"""RunOptions: how to run a program, in the one typed form that goes from `pipe`'s arguments to assemble()."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.vm.budget import Budget


@dataclass(frozen=True)
class RunChoices:
    """What a command line chose that is settled against the workspace's orgtree.toml (run/assemble.py `settle`):
    the models (--model, --review-model, --api-base, --record, --model-timeout, --context-window; else PIPE_MODEL
    and `[model]`)
    and the OpenTelemetry export (--otel, --otel-endpoint; else `[otel]`). Options that carry choices also get a
    decomposer for a program with `ambiguous` blocks, as `pipe run` always has."""

    model: str | None = None
    review_model: str | None = None
    api_base: str | None = None
    record: str | None = None
    model_timeout: float | None = None
    context_window: int | None = None
    review_context_window: int | None = None
    otel: bool = False
    otel_endpoint: str | None = None


@dataclass
class RunOptions:
    """How to run a program; every field has a sensible default for `pipe run`."""

    entry: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    workspace: Path | None = None  # defaults to the program's folder
    budget: Budget = field(default_factory=Budget)
    trace: Path | None = None  # defaults to <workspace>/.orgtree/runs/<id>/trace.jsonl
    trace_level: str | None = None  # off, calls or steps (vm/trace.py); None: [trace] level in orgtree.toml, or calls
    printer: Callable[[str], None] | None = None
    progress: Callable[..., None] | None = None  # (state, span), about once a second on long runs
    notice: Callable[..., None] | None = None  # (text, kind="note"): what a run tells its user on the side
    choices: RunChoices | None = None  # the command line's models and export; None: only the fields below
    decomposer: Any = None  # None: made by assemble() when `choices` are given and the program has ambiguous blocks
    models: Any = None  # RunModels (models/roles.py) for skills that need a model (llm.*, insight reviews)
    registry: Any = None
    run_id: str | None = None
    use_cache: bool = True
    durable: bool = False  # journal every side-effecting step and checkpoint the state (what `pipe run` does)
    durability: str = "power"  # power: group commit, survives power loss (docs/durability.md); process: kill -9
    tree: bool = True  # record the org tree (pipeline, skill and ambiguous nodes) in the workspace's state.db
    tree_listener: Callable[..., None] | None = None  # (event, node) as pipeline and ambiguous nodes open and close
    executor: str | None = None  # where slow skill calls run (`threads`, `threads:8`; executors/table.py)
    otel: Any = None  # telemetry.otel.OtelExport: send the run's spans to an OpenTelemetry collector (docs/otel.md)
    settings: Any = None  # run.settings.RunSettings, the workspace's orgtree.toml read once; None: read at the start

    def tell(self, text: str, kind: str = "note") -> None:
        """Pass `text` to whoever listens for notices (the CLI prints them on stderr)."""
        if self.notice is not None:
            self.notice(text, kind)
