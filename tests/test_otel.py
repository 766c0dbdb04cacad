"""OpenTelemetry export: the span tree of a run (in memory), a real OTLP/HTTP round trip, and a missing extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# CI installs the `test` extra, which holds `otel`: there a missing SDK is a failure, not a skip.
if not os.environ.get("CI"):
    pytest.importorskip("opentelemetry.sdk")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from orgtree_lang.compile.api import compile_source  # noqa: E402
from orgtree_lang.telemetry.otel import OtelExport  # noqa: E402
from orgtree_lang.run.runner import RunOptions, run_program  # noqa: E402
from orgtree_lang.models.roles import RunModels  # noqa: E402
from orgtree_lang.models.scripted import ScriptedModel  # noqa: E402
from orgtree_lang.runtime.errors import PipeRuntimeError  # noqa: E402

PROGRAM = '''use llm
use text

pipeline ask_twice(question: str) -> str:
    first = llm.ask(question)
    return text.upper(first)

pipeline main(question: str) -> str:
    answer = ask_twice(question)
    try:
        llm.ask("nothing matches this")
    except err:
        print(f"caught: {err.message}")
    return answer
'''

RULES = [{"match": {"contains": "capital"}, "reply": "Paris"}]


def _run(tmp_path, registry, source: str, exporter, durable: bool = True, rules: list | None = None):
    rules_file = tmp_path / "model.json"
    rules_file.write_text(json.dumps(rules or RULES))
    program_path = tmp_path / "p.pipe"
    program_path.write_text(source)
    program = compile_source(source, str(program_path), registry).program
    options = RunOptions(inputs={"question": "the capital of France?"}, workspace=tmp_path, registry=registry,
                         models=RunModels(None, author=ScriptedModel.from_file(rules_file)), durable=durable,
                         printer=lambda line: None, otel=OtelExport(exporter=exporter))
    return run_program(program, tmp_path, registry, options, source=source, program_path=program_path)


def _by_name(spans) -> dict:
    found: dict = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


@pytest.mark.parametrize("durable", [True, False])
def test_a_run_becomes_a_tree_of_pipeline_skill_and_model_spans(tmp_path, registry, durable):
    exporter = InMemorySpanExporter()
    machine = _run(tmp_path, registry, PROGRAM, exporter, durable=durable)
    assert machine.state.result == "PARIS"
    spans = exporter.get_finished_spans()
    named = _by_name(spans)
    [run] = named["run main"]
    [main] = named["pipeline main"]
    [helper] = named["pipeline ask_twice"]
    asks = named["skill llm.ask"]
    [upper] = named["skill text.upper"]
    chats = named["chat scripted:" + str(tmp_path / "model.json")]

    assert run.parent is None
    assert main.parent.span_id == run.context.span_id
    assert helper.parent.span_id == main.context.span_id
    assert upper.parent.span_id == helper.context.span_id
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}
    assert run.attributes["orgtree.run.id"] == machine.state.run_id
    assert run.attributes["orgtree.status"] == "done"
    assert run.status.status_code != StatusCode.ERROR

    # The answered call: under the helper pipeline, one model span with GenAI attributes under it.
    answered = next(s for s in asks if s.parent.span_id == helper.context.span_id)
    [chat_ok] = [c for c in chats if c.parent.span_id == answered.context.span_id]
    assert chat_ok.attributes["gen_ai.request.model"].startswith("scripted:")
    assert chat_ok.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat_ok.attributes["gen_ai.usage.output_tokens"] > 0
    assert chat_ok.attributes["orgtree.cost_usd"] == 0.0
    assert chat_ok.status.status_code != StatusCode.ERROR
    assert answered.start_time <= chat_ok.start_time <= chat_ok.end_time <= answered.end_time

    # The failed call (caught in main): the skill span and its model span carry the error.
    failed = next(s for s in asks if s.parent.span_id == main.context.span_id)
    assert failed.status.status_code == StatusCode.ERROR
    assert "no response" in failed.status.description
    [chat_bad] = [c for c in chats if c.parent.span_id == failed.context.span_id]
    assert chat_bad.status.status_code == StatusCode.ERROR
    assert chat_bad.attributes["error.type"] == "ModelError"
    assert len(spans) == 8


def test_an_uncaught_error_marks_its_pipelines_and_the_run(tmp_path, registry):
    source = '''pipeline divide(a: int, b: int) -> float:
    return a / b

pipeline main(question: str) -> float:
    return divide(1, 0)
'''
    exporter = InMemorySpanExporter()
    with pytest.raises(PipeRuntimeError):
        _run(tmp_path, registry, source, exporter)
    named = _by_name(exporter.get_finished_spans())
    [run], [main], [divide] = named["run main"], named["pipeline main"], named["pipeline divide"]
    assert divide.parent.span_id == main.context.span_id
    for span in (run, main, divide):
        assert span.status.status_code == StatusCode.ERROR
        assert "zero" in span.status.description
    assert run.attributes["orgtree.status"] == "failed"


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each POST /v1/traces body as an ExportTraceServiceRequest."""

    received: list

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.received.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def _pipe(args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


def _collected(args, cwd, config: str = ""):
    """Run `pipe ARGS` while a collector listens on 127.0.0.1 ({port} in `args` and `config` is its port, and
    `config` becomes orgtree.toml); returns the process result, the spans received and the requests."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    server.received = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        if config:
            (cwd / "orgtree.toml").write_text(config.replace("{port}", str(server.server_port)))
        result = _pipe([a.replace("{port}", str(server.server_port)) for a in args], cwd)
    finally:
        server.shutdown()
        server.server_close()
    spans = [span for request in server.received for resource in request.resource_spans
             for scope in resource.scope_spans for span in scope.spans]
    return result, spans, server.received


def test_pipe_run_otel_sends_the_spans_to_an_otlp_http_collector(tmp_path):
    (tmp_path / "p.pipe").write_text(PROGRAM)
    (tmp_path / "model.json").write_text(json.dumps(RULES))
    result, spans, received = _collected(
        ["run", "p.pipe", "-i", "question=the capital of France?", "--model", "scripted:model.json", "--otel"],
        tmp_path, '[otel]\nendpoint = "http://127.0.0.1:{port}"\n')
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "PARIS"
    by_id = {span.span_id: span for span in spans}
    names = sorted(span.name for span in spans)
    assert names.count("skill llm.ask") == 2 and "run main" in names and "pipeline ask_twice" in names
    chats = [span for span in spans if span.name.startswith("chat ")]
    assert len(chats) == 2
    for chat in chats:
        path = []
        span = chat
        while span.parent_span_id:
            span = by_id[span.parent_span_id]
            path.append(span.name)
        assert path[0] == "skill llm.ask" and path[-1] == "run main"
    [ok] = [c for c in chats if c.status.code != 2]  # 2: STATUS_CODE_ERROR
    [bad] = [c for c in chats if c.status.code == 2]
    assert "no response" in bad.status.message
    ok_attributes = {a.key: a.value for a in ok.attributes}
    assert ok_attributes["gen_ai.usage.input_tokens"].int_value > 0
    assert ok_attributes["gen_ai.usage.output_tokens"].int_value > 0
    assert ok_attributes["gen_ai.request.model"].string_value == "scripted:model.json"
    assert ok_attributes["orgtree.cost_usd"].double_value == 0.0
    resource = {a.key: a.value.string_value for a in received[0].resource_spans[0].resource.attributes}
    assert resource["service.name"] == "orgtree_lang"


def test_without_the_extra_otel_is_a_clear_error(tmp_path):
    # A bare `opentelemetry` package ahead of the real one on the path hides the SDK, as on a machine without it.
    shadow = tmp_path / "shadow" / "opentelemetry"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (tmp_path / "p.pipe").write_text("pipeline main() -> int:\n    return 1\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "shadow"))
    result = _pipe(["run", "p.pipe", "--otel"], tmp_path, env)
    assert result.returncode == 2
    assert "orgtree-lang[otel]" in result.stderr and "not installed" in result.stderr
    assert _pipe(["run", "p.pipe"], tmp_path, env).returncode == 0


def test_a_collector_that_is_down_costs_one_warning_and_the_run_goes_on(tmp_path):
    import socket

    with socket.socket() as probe:  # a port of this machine where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "p.pipe").write_text("pipeline main() -> int:\n    print(\"ran\")\n    return 1\n")
    result = _pipe(["run", "p.pipe", "--otel-endpoint", f"http://127.0.0.1:{port}"], tmp_path)
    assert (result.returncode, result.stdout) == (0, "ran\n1\n"), result.stderr
    assert result.stderr.splitlines() == [
        f"warning: the OpenTelemetry collector at http://127.0.0.1:{port} did not take this run's spans (nothing "
        "answers there, or it refused them); they are not exported. Start it, or leave out --otel (and [otel] "
        "endpoint)"]


def test_a_collector_that_is_down_is_never_sent_a_batch_so_exit_does_not_wait_for_retries(capsys):
    import socket

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExportResult

    from orgtree_lang.telemetry.otel import _OneWarning

    class CountingExporter(OTLPSpanExporter):
        """The SDK's exporter, counting the batches handed to it (each one retried with backoff when refused)."""

        batches = 0

        def export(self, spans):
            CountingExporter.batches += 1
            return super().export(spans)

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    exporter = _OneWarning(CountingExporter(endpoint=f"{endpoint}/v1/traces", timeout=5), endpoint)
    tracer = TracerProvider().get_tracer("test")
    spans = []
    for name in ("first", "second"):
        with tracer.start_as_current_span(name) as span:
            pass
        spans.append(span)
    assert [exporter.export([span]) for span in spans] == [SpanExportResult.FAILURE] * 2
    assert CountingExporter.batches == 0  # the SDK's retries never start
    assert capsys.readouterr().err.count("warning: the OpenTelemetry collector") == 1


def test_a_bad_endpoint_is_refused_before_the_run(tmp_path):
    (tmp_path / "p.pipe").write_text("pipeline main() -> int:\n    print(\"ran\")\n    return 1\n")
    result = _pipe(["run", "p.pipe", "--otel-endpoint", "127.0.0.1:4318"], tmp_path)
    assert result.returncode == 2
    assert "http://" in result.stderr and "ran" not in result.stdout


def test_an_ambiguous_block_holds_the_decomposers_model_calls_and_the_childs_run(tmp_path):
    examples = Path(__file__).resolve().parent.parent / "examples"
    (tmp_path / "triage.pipe").write_text((examples / "ambiguous_triage.pipe").read_text())
    result, spans, _ = _collected(
        ["run", "triage.pipe", "--model", f"scripted:{examples / 'models' / 'triage_author.yaml'}",
         "--review-model", f"scripted:{examples / 'models' / 'triage_reviewer.yaml'}",
         "--otel-endpoint", "http://127.0.0.1:{port}"], tmp_path)
    assert result.returncode == 0, result.stderr
    [block] = [span for span in spans if span.name == "ambiguous classify"]
    under = [span for span in spans if span.parent_span_id == block.span_id]
    chats = sorted((span for span in under if span.name.startswith("chat ")), key=lambda s: s.start_time_unix_nano)
    # Written, reviewed, revised, reviewed again; then the outputs of the module's first run reviewed.
    assert [span.name.rsplit("/", 1)[-1] for span in chats] == ["triage_author.yaml", "triage_reviewer.yaml"] * 2 + [
        "triage_reviewer.yaml"]
    [child] = [span for span in under if span.name == "pipeline main"]
    assert any(span.parent_span_id == child.span_id and span.name == "skill text.lower" for span in spans)


def test_parallel_branches_each_hold_their_own_skill_and_model_calls(tmp_path, registry):
    source = '''use llm

pipeline main(question: str) -> str:
    parallel:
        a = llm.ask("first: say one word")
        b = llm.ask("second: say many words")
    return f"{a} {b}"
'''
    exporter = InMemorySpanExporter()
    _run(tmp_path, registry, source, exporter, rules=[{"match": {"contains": "first"}, "reply": "one"},
                                                       {"match": {"contains": "second"}, "reply": "many " * 40}])
    spans = exporter.get_finished_spans()
    named = _by_name(spans)
    [main] = named["pipeline main"]
    branches = sorted((s for s in spans if s.name.startswith("branch ")), key=lambda s: s.name)
    assert [b.parent.span_id for b in branches] == [main.context.span_id] * 2
    output_tokens = []
    for branch in branches:
        [ask] = [s for s in named["skill llm.ask"] if s.parent.span_id == branch.context.span_id]
        [chat] = [s for s in spans if s.name.startswith("chat ") and s.parent.span_id == ask.context.span_id]
        output_tokens.append(chat.attributes["gen_ai.usage.output_tokens"])
    assert output_tokens[0] < 5 < 30 < output_tokens[1]


def test_pipe_resume_otel_exports_the_resumed_part(tmp_path):
    (tmp_path / "p.pipe").write_text(PROGRAM)
    (tmp_path / "model.json").write_text(json.dumps(RULES))
    first = _pipe(["run", "p.pipe", "-i", "question=the capital of France?", "--model", "scripted:model.json",
                   "--max-steps", "3", "--json"], tmp_path)
    run_id = json.loads(first.stdout)["run_id"]
    result, spans, _ = _collected(["resume", run_id, "--model", "scripted:model.json", "--max-steps", "1000",
                                   "--otel-endpoint", "http://127.0.0.1:{port}"], tmp_path)
    assert result.returncode == 0, result.stderr
    [run] = [span for span in spans if span.name == "run main"]
    attributes = {a.key: a.value for a in run.attributes}
    assert attributes["orgtree.run.id"].string_value == run_id
    assert attributes["orgtree.resumed"].bool_value is True
    assert attributes["orgtree.status"].string_value == "done"
    # Only what ran after the stop: main's failing llm.ask, not the helper's (taken from the journal then).
    asks = [span for span in spans if span.name == "skill llm.ask"]
    assert len(asks) == 1 and asks[0].status.code == 2
