"""Export a run as OpenTelemetry spans (run → pipeline calls → skill calls → model calls) over OTLP/HTTP."""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.config import ConfigError, config_section
from orgtree_lang.vm import events
from orgtree_lang.vm.observe import RunObserver, hearing
from orgtree_lang.vm.trace import summarize

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
EXPORT_SECONDS = 5
MISSING_EXTRA = ("OpenTelemetry export needs the `otel` extra, which is not installed: "
                 "pip install 'orgtree-lang[otel]' (opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http)")


@dataclass(frozen=True)
class OtelExport:
    """Where a run's spans go: an OTLP/HTTP collector's base `endpoint` (spans are POSTed to
    `{endpoint}/v1/traces`), or a ready SpanExporter (`exporter`, as tests pass the SDK's in-memory one)."""

    endpoint: str = DEFAULT_ENDPOINT
    exporter: Any = None

    @classmethod
    def chosen(cls, config: Path, flag: bool, endpoint: str | None) -> OtelExport | None:
        """The export `pipe run` asked for: --otel-endpoint URL, else --otel or an `[otel] endpoint` in
        orgtree.toml (the flag with no table sends to DEFAULT_ENDPOINT); None when neither asks."""
        table = config_section("otel", config, types={"endpoint": str})
        unknown = sorted(set(table) - {"endpoint"})
        if unknown:
            raise ConfigError(f"{config}: [otel] has no setting {', '.join(unknown)}; its one setting is endpoint")
        chosen = endpoint or table.get("endpoint") or (DEFAULT_ENDPOINT if flag else None)
        if chosen is None:
            return None
        if not chosen.startswith(("http://", "https://")):
            raise ConfigError(f"the OTLP endpoint must be an http:// or https:// URL, got {chosen!r} "
                              f"(for example {DEFAULT_ENDPOINT})")
        return cls(chosen.rstrip("/"))

    def observer(self, run_id: str) -> SpanObserver:
        """An observer sending this run's spans (raises ImportError naming the extra when it is missing)."""
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
        except ImportError as err:
            raise ImportError(MISSING_EXTRA) from err
        provider = TracerProvider(resource=Resource.create({"service.name": "orgtree_lang", "orgtree.run.id": run_id}))
        if self.exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        else:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError as err:
                raise ImportError(MISSING_EXTRA) from err
            # A collector that is down must not hold the finished run for long: a few seconds of retries.
            exporter = OTLPSpanExporter(endpoint=f"{self.endpoint}/v1/traces", timeout=EXPORT_SECONDS)
            provider.add_span_processor(BatchSpanProcessor(_OneWarning(exporter, self.endpoint)))
        return SpanObserver(provider)


# The SDK's exporter logs every retry and every failed batch here; _OneWarning says it once instead.
SDK_EXPORT_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


class _Silenced(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


PROBE_SECONDS = 1.0  # how long the first export waits for the collector's port to accept a connection


def _reachable(endpoint: str, timeout: float = PROBE_SECONDS) -> bool:
    """Whether something accepts TCP connections at the endpoint's host and port."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


class _OneWarning:
    """A SpanExporter in front of the OTLP one: when the collector does not take a batch, one warning on stderr,
    and no more tries for the rest of the process (the SDK's own retry and failure lines are silenced).

    Before the first batch it checks that the collector's port accepts a connection at all: the SDK retries a
    refused connection with backoff for its whole timeout, which held every run's exit for seconds."""

    def __init__(self, inner, endpoint: str) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.down = False
        self.probed = False
        sdk = logging.getLogger(SDK_EXPORT_LOGGER)
        if not any(isinstance(f, _Silenced) for f in sdk.filters):
            sdk.addFilter(_Silenced())

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        if self.down:
            return SpanExportResult.FAILURE
        reachable = self.probed or _reachable(self.endpoint)
        self.probed = True
        result = self.inner.export(spans) if reachable else SpanExportResult.FAILURE
        if result != SpanExportResult.SUCCESS:
            self.down = True
            print(f"warning: the OpenTelemetry collector at {self.endpoint} did not take this run's spans (nothing "
                  "answers there, or it refused them); they are not exported. Start it, or leave out --otel (and "
                  "[otel] endpoint)", file=sys.stderr, flush=True)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True if self.down else self.inner.force_flush(timeout_millis)


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


class SpanObserver(RunObserver):
    """Turns what the machines of one run tree report into spans, shared by the top machine and its children.

    Spans are keyed by org tree node id (`run/main/fetch@3`), as the org tree is. A skill call is reported when
    it ends, so its span is made then with its real start; the model calls made inside it (reported as they
    end, with the skill call's ModelSpend) wait until then to become its children. An ambiguous block's span is
    open while it is resolved, so the decomposer's model calls become its children at once."""

    def __init__(self, provider) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

        self.provider = provider
        self.tracer = provider.get_tracer("orgtree_lang")
        self._kind, self._status, self._code, self._context = SpanKind, Status, StatusCode, set_span_in_context
        self.root = None
        self.root_run: str | None = None
        self.spans: dict[str, Any] = {}  # node id -> open span (pipeline calls, ambiguous blocks)
        self.blocks: set[str] = set()  # the node ids of the ambiguous blocks being resolved now
        self.waiting: dict[Any, list[tuple]] = {}  # a skill's ModelSpend -> its model calls until the skill ends
        self.lock = threading.Lock()  # slow skills call models on executor threads

    def _open(self, name: str, parent, attributes: dict, start: int | None = None):
        context = self._context(parent) if parent is not None else None
        return self.tracer.start_span(name, context=context, attributes=attributes, start_time=start,
                                      kind=self._kind.INTERNAL)

    def _fail(self, span, message: str) -> None:
        span.set_status(self._status(self._code.ERROR, message))

    # ---- the run ------------------------------------------------------------------------------
    def _begin(self, state) -> None:
        """Open the run's span: the entry frame is made (and reported) before the loop starts."""
        if self.root is None and self.root_run is None:
            self.root_run = state.run_id
            self.root = self._open(f"run {state.entry}", None, {"orgtree.run.id": state.run_id,
                                                                 "orgtree.entry": state.entry})

    @hearing(events.RunStarted)
    def run_started(self, event: events.RunStarted) -> None:
        state, fresh = event.state, event.fresh
        self._begin(state)
        if state.run_id == self.root_run and self.root is not None:
            self.root.set_attribute("orgtree.resumed", not fresh)

    @hearing(events.RunStopped)
    def run_stopped(self, event: events.RunStopped) -> None:
        state, error = event.state, event.error
        for frame in reversed(state.frames):
            span = self.spans.pop(f"{state.run_id}/{frame.node}", None)
            if span is not None:
                if error is not None:
                    self._fail(span, error.message)
                span.end()
        if state.run_id != self.root_run or self.root is None:
            return
        self.root.set_attribute("orgtree.status", state.status)
        self.root.set_attribute("orgtree.steps", state.steps)
        self.root.set_attribute("orgtree.skill_calls", state.skill_calls)
        if error is not None:
            self._fail(self.root, error.message)
        self.root.end()
        self.root = None

    # ---- pipeline calls -----------------------------------------------------------------------
    def _pipeline(self, state, frame, parent) -> None:
        node_id = f"{state.run_id}/{frame.node}"
        self.spans[node_id] = self._open(f"pipeline {frame.pipeline}", parent, {
            "orgtree.node": node_id, "orgtree.pipeline": frame.pipeline})

    @hearing(events.PipelineEntered)
    def pipeline_entered(self, event: events.PipelineEntered) -> None:
        state, frame, parent_node = event.state, event.frame, event.parent_node
        self._begin(state)
        self._pipeline(state, frame, self.spans.get(parent_node, self.root) if parent_node else self.root)

    @hearing(events.FramesAttached)
    def frames_attached(self, event: events.FramesAttached) -> None:
        state, parent_node = event.state, event.parent_node
        self._begin(state)
        parent = self.spans.get(parent_node, self.root) if parent_node else self.root
        for frame in state.frames:
            self._pipeline(state, frame, parent)
            parent = self.spans[f"{state.run_id}/{frame.node}"]

    @hearing(events.PipelineCalled)
    def pipeline_called(self, event: events.PipelineCalled) -> None:
        state, caller, frame = event.state, event.caller, event.frame
        self._pipeline(state, frame, self.spans.get(f"{state.run_id}/{caller.node}", self.root))

    @hearing(events.PipelineReturned)
    def pipeline_returned(self, event: events.PipelineReturned) -> None:
        state, frame, value = event.state, event.frame, event.value
        span = self.spans.pop(f"{state.run_id}/{frame.node}", None)
        if span is not None:
            span.set_attribute("orgtree.output", summarize(value))
            span.end()

    @hearing(events.FrameUnwound)
    def frame_unwound(self, event: events.FrameUnwound) -> None:
        state, frame, error = event.state, event.frame, event.error
        span = self.spans.pop(f"{state.run_id}/{frame.node}", None)
        if span is not None:
            self._fail(span, error.message)
            span.end()

    # ---- skills and model calls ---------------------------------------------------------------
    @hearing(events.SkillCalled)
    def skill_called(self, event: events.SkillCalled) -> None:
        now = time.time()
        start = now - (time.perf_counter() - event.started)
        node_id = f"{event.state.run_id}/{event.frame.node}"
        attributes = {"orgtree.skill": event.name, "orgtree.pipeline": event.frame.pipeline,
                      "orgtree.outcome": event.outcome}
        if event.where:
            attributes["orgtree.ran_on"] = event.where  # a Ray node (docs/ray.md)
        span = self._open(f"skill {event.name}", self.spans.get(node_id, self.root), attributes, _ns(start))
        if event.outcome != "ok":
            self._fail(span, event.failure or "the skill failed")
        with self.lock:
            calls = self.waiting.pop(event.spend, []) if event.spend is not None else []
        for call in calls:
            self._model_span(span, *call)
        span.end(_ns(now))

    @hearing(events.ModelCallEnded)
    def model_call_ended(self, event: events.ModelCallEnded) -> None:
        call = (event.model, event.input_tokens, event.output_tokens, event.cost, event.started, time.time(),
                event.error)
        block = getattr(event.spend, "node", None)
        if block in self.blocks:
            self._model_span(self.spans[block], *call)
            return
        with self.lock:
            self.waiting.setdefault(event.spend, []).append(call)

    def _model_span(self, parent, model, input_tokens, output_tokens, cost, started, ended, error) -> None:
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.response.model": model,
                      "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens,
                      "orgtree.cost_usd": cost}
        span = self._open(f"chat {model}", parent, attributes, _ns(started))
        if error is not None:
            span.set_attribute("error.type", type(error).__name__)
            self._fail(span, str(getattr(error, "message", error)))
        span.end(_ns(ended))

    # ---- parallel branches (org/scheduler.py) --------------------------------------------------
    @hearing(events.TaskStarted)
    def task_started(self, event: events.TaskStarted) -> None:
        state, task, frame = event.state, event.task, event.frame
        if task.kind == "spawn":
            return  # its pipeline call is its span
        node_id = f"{state.run_id}/{task.node}"
        self.spans[node_id] = self._open(task.label, self.spans.get(f"{state.run_id}/{frame.node}", self.root),
                                         {"orgtree.node": node_id, "orgtree.task": task.id})

    @hearing(events.TaskEnded)
    def task_ended(self, event: events.TaskEnded) -> None:
        state, task = event.state, event.task
        error = task.error["message"] if task.error else ("cancelled" if task.status == "cancelled" else None)
        if task.status != "done":  # the pipelines a failed branch was in end with it
            for frame in reversed(task.frames[1:] if task.kind == "branch" else task.frames):
                self._end(f"{state.run_id}/{frame.node}", error)
        if task.kind != "spawn":
            self._end(f"{state.run_id}/{task.node}", error)

    def _end(self, node_id: str, error: str | None) -> None:
        span = self.spans.pop(node_id, None)
        if span is not None:
            if error is not None:
                self._fail(span, error)
            span.end()

    # ---- ambiguous blocks ---------------------------------------------------------------------
    @hearing(events.BlockStarted)
    def block_started(self, event: events.BlockStarted) -> None:
        state, frame, spec, node_id = event.state, event.frame, event.spec, event.node_id
        self.spans[node_id] = self._open(f"ambiguous {spec.name}", self.spans.get(f"{state.run_id}/{frame.node}",
                                                                                  self.root),
                                         {"orgtree.node": node_id, "orgtree.block": spec.name})
        self.blocks.add(node_id)

    @hearing(events.BlockEnded)
    def block_ended(self, event: events.BlockEnded) -> None:
        node_id, error = event.node_id, event.error
        self.blocks.discard(node_id)
        span = self.spans.pop(node_id, None)
        if span is not None:
            if error is not None:
                self._fail(span, error.message)
            span.end()

    def close(self) -> None:
        """End what is still open (a paused run) and send every span before the process exits."""
        for span in reversed(list(self.spans.values())):
            span.end()
        self.spans.clear()
        if self.root is not None:
            self.root.end()
            self.root = None
        self.provider.shutdown()
