"""`openai/NAME` with an --api-base: chat completions over plain HTTP (the stdlib), with no litellm import.

An OpenAI-compatible server (vLLM, llama.cpp, LM Studio, Ollama's /v1, a proxy) needs one POST to
`{api_base}/chat/completions`; importing litellm to make it costs seconds at every `pipe run`. Retries, error
kinds and hints are the litellm backend's; prices and context windows come from litellm's model map file.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from typing import Any

from orgtree_lang.models.base import Completion, Message, Model, ModelError, Usage
from orgtree_lang.models.litellm_backend import key_variable, with_retries
from orgtree_lang.models.price_map import call_cost

PREFIX = "openai/"


def speaks_openai_http(spec: str, api_base: str | None) -> bool:
    """Whether a model spec is served by this backend: an `openai/` model at an explicit endpoint."""
    return bool(api_base) and spec.startswith(PREFIX) and len(spec) > len(PREFIX)


class OpenAIHTTPModel(Model):
    """A model behind an OpenAI-compatible /chat/completions endpoint. Rate limits, timeouts, 5xx errors and a
    refused connection are retried up to `max_retries` times with exponential backoff, as LiteLLMModel does."""

    def __init__(self, name: str, api_base: str, api_key: str | None = None, timeout: float = 120,
                 max_retries: int = 3, backoff_s: float = 1.0, max_backoff_s: float = 30.0) -> None:
        self.name = name
        self.api_base = api_base.rstrip("/")
        self.api_key = api_key or os.environ.get(key_variable(name)) or None  # a local server may need none
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.attempts = 0

    def _complete(self, messages: list[Message], *, schema: type | None,
                  conversation_id: str | None) -> Completion:
        body = json.dumps({"model": self.name[len(PREFIX):],
                           "messages": [m.to_dict() for m in messages]}).encode("utf-8")
        response, latency = with_retries(self, lambda: self._post(body))
        choices = response.get("choices") or []
        message = (choices[0] or {}).get("message") or {} if choices else {}
        usage = response.get("usage") or {}
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        return Completion(
            text=message.get("content") or "",
            usage=Usage(prompt_tokens=prompt, completion_tokens=completion,
                        cost=call_cost(self.name, prompt, completion), latency_s=latency),
            model=self.name, conversation_id=conversation_id or uuid.uuid4().hex, scripted=False)

    def _post(self, body: bytes) -> dict[str, Any]:
        import urllib.error
        import urllib.request

        url = f"{self.api_base}/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as exc:
            raise self._status_error(exc.code, *_error_body(exc)) from None
        except (TimeoutError, socket.timeout):
            raise ModelError(f"{self.name} at {self.api_base} did not answer in time: no answer within "
                             f"{self.timeout:g} s", "timeout", "raise the timeout or check the endpoint") from None
        except urllib.error.URLError as exc:
            raise self._connection_error(exc.reason) from None
        except (ConnectionError, OSError) as exc:
            raise self._connection_error(exc) from None
        try:
            data = json.loads(raw)
        except ValueError:
            raise ModelError(f"{self.name} at {self.api_base} answered with something that is not JSON: "
                             f"{raw[:120]!r}", "server", "check that --api-base is an OpenAI-compatible endpoint "
                             "(it usually ends in /v1)") from None
        if not isinstance(data, dict):
            raise ModelError(f"{self.name} at {self.api_base} answered with JSON that is not a chat completion",
                             "server", "check that --api-base is an OpenAI-compatible endpoint")
        return data

    def _status_error(self, status: int, detail: str, code: str = "") -> ModelError:
        where = f" at {self.api_base}"
        lowered = f"{detail} {code}".lower()
        if status in (400, 413) and any(sign in lowered for sign in ("context length", "context_length",
                                                                     "context window", "too many tokens")):
            return ModelError(f"the request is too long for {self.name}'s context window: {detail}",
                              "context_overflow", "shorten the prompt or choose a model with a larger context window")
        if status in (401, 403):
            return ModelError(f"{self.name}{where} rejected the API key: {detail}", "auth",
                              f"set a valid key in the {key_variable(self.name)} environment variable")
        if status == 404:
            return ModelError(f"model {self.name} was not found{where}: {detail}", "not_found",
                              "check the model name (provider/model, e.g. openai/gpt-4o-mini) and --api-base")
        if status == 429:
            return ModelError(f"{self.name}{where} is rate limiting requests: {detail}", "rate_limit",
                              "wait and retry, or lower the request rate")
        if status == 408:
            return ModelError(f"{self.name}{where} did not answer in time: {detail}", "timeout",
                              "raise the timeout or check the endpoint")
        if status >= 500:
            return ModelError(f"{self.name}{where} had a server error ({status}): {detail}", "server",
                              "the provider is failing; retry later")
        return ModelError(f"{self.name}{where} refused the request ({status}): {detail}", "config")

    def _connection_error(self, reason: Any) -> ModelError:
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return ModelError(f"{self.name} at {self.api_base} did not answer in time: no answer within "
                              f"{self.timeout:g} s", "timeout", "raise the timeout or check the endpoint")
        if isinstance(reason, ConnectionRefusedError):
            why = "connection refused"
        elif isinstance(reason, socket.gaierror):
            why = f"host name not found: {reason.strerror or reason}"
        else:
            why = getattr(reason, "strerror", None) or str(reason)
        return ModelError(f"nothing answers at {self.api_base} ({why}): no request reached {self.name}",
                          "unreachable", "start the server there, or point --api-base at one that runs")


def _error_body(exc: Any) -> tuple[str, str]:
    """(message, code) of an OpenAI-style error body ({"error": {"message": ..., "code": ...}}), else the body's
    first line (or the HTTP reason) and no code."""
    try:
        raw = exc.read().decode("utf-8", "replace").strip()
    except Exception:
        raw = ""
    text, code = "", ""
    try:
        error = json.loads(raw).get("error")
        if isinstance(error, dict):
            text, code = str(error.get("message") or ""), str(error.get("code") or "")
        elif error:
            text = str(error)
    except (ValueError, AttributeError):
        pass
    lines = (text or raw or str(getattr(exc, "reason", "") or exc)).strip().splitlines() or [""]
    line = lines[0]
    return (line if len(line) <= 300 else line[:299] + "…"), code
