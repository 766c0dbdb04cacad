"""Both OpenAI-compatible backends end to end against a real HTTP server on 127.0.0.1: LiteLLMModel and the plain-HTTP
OpenAIHTTPModel (`openai/...` with an --api-base, no litellm import) give the same usage, retries and error kinds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pydantic
import pytest

from orgtree_lang.models import Message, ModelError
from orgtree_lang.models.litellm_backend import LiteLLMModel
from orgtree_lang.models.openai_http import OpenAIHTTPModel
from orgtree_lang.models.select import model_from_spec


class FakeProvider:
    """A chat-completions server; `script` is a list of (status, body or None, delay) served in order, then ok."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict | None, float]] = []
        self.requests: list[dict] = []
        self.reply = "hello from the server"
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                provider.requests.append({"path": self.path, "body": body,
                                          "auth": self.headers.get("Authorization")})
                status, payload, delay = provider.script.pop(0) if provider.script else (200, None, 0)
                if delay:
                    time.sleep(delay)
                if payload is None:
                    payload = {"id": "cmpl-1", "object": "chat.completion", "created": 1,
                               "model": body.get("model"),
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": provider.reply}}],
                               "usage": {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def error(status: int, message: str, code: str | None = None, type_: str = "invalid_request_error"):
    return (status, {"error": {"message": message, "type": type_, "param": None, "code": code}}, 0)


@pytest.fixture
def provider():
    server = FakeProvider()
    yield server
    server.close()


BACKENDS = {"litellm": LiteLLMModel, "http": OpenAIHTTPModel}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request):
    return BACKENDS[request.param]


@pytest.fixture
def model(backend):
    def build(provider: FakeProvider, **kw):
        options = {"api_base": provider.base, "api_key": "sk-test", "timeout": 5, "max_retries": 3,
                   "backoff_s": 0.01}
        options.update(kw)
        return backend("openai/test-model", **options)

    return build


ASK = [Message("system", "Be brief."), Message("user", "Say hello")]


def test_success_with_usage(provider, model):
    done = model(provider).complete(ASK, conversation_id="conv-1")
    assert done.text == "hello from the server"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (17, 5)
    assert done.usage.cost == 0.0 and done.usage.latency_s > 0
    assert done.scripted is False and done.model == "openai/test-model" and done.conversation_id == "conv-1"
    (request,) = provider.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "test-model"
    assert request["body"]["messages"] == [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": "Say hello"}]


def test_schema_output_is_parsed_and_validated(provider, model):
    class Answer(pydantic.BaseModel):
        greeting: str

    provider.reply = '```json\n{"greeting": "hi"}\n```'
    assert model(provider).complete(ASK, schema=Answer).parsed == Answer(greeting="hi")


def test_rate_limit_then_success_is_retried(provider, model):
    provider.script = [error(429, "Rate limit reached", "rate_limit_exceeded", "requests")]
    m = model(provider)
    assert m.complete(ASK).text == "hello from the server"
    assert len(provider.requests) == 2 and m.attempts == 2


def test_server_errors_give_up_after_bounded_retries(provider, model):
    provider.script = [error(500, "internal failure", type_="server_error")] * 10
    with pytest.raises(ModelError) as err:
        model(provider, max_retries=2).complete(ASK)
    assert err.value.kind == "server"
    assert "after 3 attempts" in str(err.value)
    assert len(provider.requests) == 3  # bounded by the count of attempts, not a clock (litellm's import is seconds)


def test_timeout(provider, model):
    provider.script = [(200, None, 2.0)]
    with pytest.raises(ModelError) as err:
        model(provider, timeout=0.5, max_retries=0).complete(ASK)
    assert err.value.kind == "timeout"
    assert len(provider.requests) == 1


def test_bad_key_is_auth_with_a_hint_about_the_variable(provider, model):
    provider.script = [error(401, "Incorrect API key provided: sk-test", "invalid_api_key")]
    with pytest.raises(ModelError) as err:
        model(provider).complete(ASK)
    assert err.value.kind == "auth"
    assert "OPENAI_API_KEY" in err.value.hint
    assert len(provider.requests) == 1  # not retried


def test_unknown_model_is_not_found(provider, model):
    provider.script = [error(404, "The model `test-model` does not exist", "model_not_found")]
    with pytest.raises(ModelError) as err:
        model(provider).complete(ASK)
    assert err.value.kind == "not_found"
    assert "openai/test-model" in str(err.value)
    assert len(provider.requests) == 1


def test_context_overflow(provider, model):
    provider.script = [error(400, "This model's maximum context length is 8192 tokens. However, your messages "
                                  "resulted in 9000 tokens.", "context_length_exceeded")]
    with pytest.raises(ModelError) as err:
        model(provider).complete(ASK)
    assert err.value.kind == "context_overflow"
    assert len(provider.requests) == 1


def test_empty_answer(provider, model):
    provider.reply = ""
    with pytest.raises(ModelError) as err:
        model(provider).complete(ASK)
    assert err.value.kind == "empty"


def test_model_from_spec_speaks_plain_http_to_an_openai_model_at_an_api_base(provider):
    m = model_from_spec("openai/test-model", api_base=provider.base, api_key="sk-test", timeout=5)
    assert isinstance(m, OpenAIHTTPModel)
    assert m.complete(ASK).text == "hello from the server"


def test_model_from_spec_keeps_litellm_for_other_providers_and_for_openai_without_an_api_base(provider):
    assert isinstance(model_from_spec("anthropic/claude-x", api_base=provider.base, timeout=5), LiteLLMModel)
    assert isinstance(model_from_spec("openai/gpt-4o-mini", timeout=5), LiteLLMModel)


def test_the_plain_http_backend_answers_without_importing_litellm(provider):
    script = ("import sys\n"
              "from orgtree_lang.models import Message\n"
              "from orgtree_lang.models.select import model_from_spec\n"
              f"m = model_from_spec('openai/test-model', api_base={provider.base!r}, timeout=5)\n"
              "done = m.complete([Message('user', 'Say hello')])\n"
              "print(done.text, done.usage.prompt_tokens, 'litellm' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["hello", "from", "the", "server", "17", "False"]
    assert provider.requests[-1]["auth"] is None  # no key set: a local server is asked without one


def test_a_known_model_at_an_api_base_is_priced_from_litellms_map(provider, backend):
    m = backend("openai/gpt-4o-mini", api_base=provider.base, api_key="sk-test", timeout=5, max_retries=0)
    done = m.complete(ASK)
    litellm = pytest.importorskip("litellm")
    price = litellm.model_cost["gpt-4o-mini"]
    expected = 17 * price["input_cost_per_token"] + 5 * price["output_cost_per_token"]
    assert done.usage.cost == pytest.approx(expected) and done.usage.cost > 0


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then let go)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_api_base_nothing_listens_on_says_so_instead_of_a_server_error(backend):
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    m = backend("openai/test-model", api_base=base, api_key="sk-test", timeout=5, max_retries=1,
                     backoff_s=0.01)
    with pytest.raises(ModelError) as err:
        m.complete(ASK)
    assert err.value.kind == "unreachable"
    assert err.value.message.startswith(f"nothing answers at {base} (connection refused)")
    assert "server error" not in err.value.message and "500" not in err.value.message
    assert "retry later" not in (err.value.hint or "") and "--api-base" in err.value.hint
    assert m.attempts == 2  # retried like a 5xx: a server may be starting
