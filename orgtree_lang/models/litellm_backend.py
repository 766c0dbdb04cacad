"""The litellm backend: every real provider and any OpenAI-compatible endpoint, with retries and clear errors."""

from __future__ import annotations

import os
import time
import uuid
from typing import Any, Callable

from orgtree_lang.models.base import Completion, Message, Model, ModelError, Usage

RETRIED = ("rate_limit", "timeout", "server", "unreachable")
KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY",
            "mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY", "deepseek": "DEEPSEEK_API_KEY",
            "openrouter": "OPENROUTER_API_KEY", "cohere": "COHERE_API_KEY", "together_ai": "TOGETHERAI_API_KEY"}


def import_litellm():
    """Import litellm (slow: ~2.5 s) with its price map read locally, never from the network."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    try:
        import litellm
    except ImportError:
        raise ModelError("the litellm package is not installed", "config",
                         "pip install litellm, or use a scripted:FILE or replay:FILE model") from None
    litellm.suppress_debug_info = True
    return litellm


def key_variable(model_name: str) -> str:
    """The environment variable that usually holds the API key for `model_name`'s provider."""
    provider = model_name.split("/", 1)[0] if "/" in model_name else "openai"
    return KEY_VARS.get(provider, f"{provider.upper()}_API_KEY")


def _detail(exc: Exception) -> str:
    text = str(getattr(exc, "message", None) or exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:299] + "…"


def map_error(exc: Exception, model_name: str, api_base: str | None) -> ModelError:
    """Translate a litellm exception into a ModelError with a kind and a hint."""
    from litellm import exceptions as e

    where = f" at {api_base}" if api_base else ""
    detail = _detail(exc)
    if isinstance(exc, e.ContextWindowExceededError):
        return ModelError(f"the request is too long for {model_name}'s context window: {detail}",
                          "context_overflow", "shorten the prompt or choose a model with a larger context window")
    if isinstance(exc, (e.AuthenticationError, e.PermissionDeniedError)):
        return ModelError(f"{model_name}{where} rejected the API key: {detail}", "auth",
                          f"set a valid key in the {key_variable(model_name)} environment variable")
    if isinstance(exc, e.NotFoundError):
        return ModelError(f"model {model_name} was not found{where}: {detail}", "not_found",
                          "check the model name (provider/model, e.g. openai/gpt-4o-mini) and --api-base")
    if isinstance(exc, e.RateLimitError):
        return ModelError(f"{model_name}{where} is rate limiting requests: {detail}", "rate_limit",
                          "wait and retry, or lower the request rate")
    if isinstance(exc, e.Timeout):
        return ModelError(f"{model_name}{where} did not answer in time: {detail}", "timeout",
                          "raise the timeout or check the endpoint")
    unreachable = _unreachable(exc)
    if unreachable is not None:  # litellm reports a refused connection as a 500 from the provider
        url, reason = unreachable
        url = api_base or url or f"the endpoint of {model_name}"
        return ModelError(f"nothing answers at {url} ({reason}): no request reached {model_name}", "unreachable",
                          "start the server there, or point --api-base at one that runs" if api_base
                          else "check the network, or name an endpoint that runs with --api-base")
    status = getattr(exc, "status_code", None)
    if isinstance(exc, (e.InternalServerError, e.ServiceUnavailableError, e.BadGatewayError)) or (
            isinstance(status, int) and status >= 500):
        return ModelError(f"{model_name}{where} had a server error ({status or 'no status'}): {detail}", "server",
                          "the provider is failing; retry later")
    if isinstance(exc, e.APIConnectionError):
        return ModelError(f"cannot reach {model_name}{where}: {detail}", "server",
                          "check --api-base and that the endpoint is running")
    if isinstance(exc, e.BadRequestError) and "LLM Provider NOT provided" in str(exc):
        return ModelError(f"unknown model or provider {model_name!r}", "not_found",
                          "name the model as provider/model, e.g. openai/gpt-4o-mini or anthropic/claude-sonnet-4-5")
    return ModelError(f"{model_name}{where} refused the request: {detail}", "config")


def _unreachable(exc: Exception) -> tuple[str | None, str] | None:
    """(URL, why) when `exc` or an exception under it says no connection was made (refused, unknown host,
    unreachable network), else None. A timeout is not this: something may have been listening."""
    import socket

    chain: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    url = next((str(request.url) for request in map(_request, chain) if getattr(request, "url", None)), None)
    for cause in reversed(chain):  # the OSError at the bottom says it best
        if isinstance(cause, ConnectionRefusedError):
            return url, "connection refused"
        if isinstance(cause, socket.gaierror):
            return url, f"host name not found: {cause.strerror or cause}"
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError) and cause.errno is not None:
            return url, cause.strerror or str(cause)
    if any(type(cause).__name__ == "ConnectError" for cause in chain):  # httpx's, with no OSError beneath
        return url, _detail(next(c for c in chain if type(c).__name__ == "ConnectError"))
    return None


def _request(exc: BaseException):
    try:
        return exc.request  # httpx's raises RuntimeError where no request was set
    except Exception:
        return None


def with_retries(model, send: Callable[[], Any]) -> tuple[Any, float]:
    """`send()`'s answer and the seconds its successful attempt took. A ModelError of a RETRIED kind is tried
    again up to `model.max_retries` times, waiting `model.backoff_s` doubling up to `model.max_backoff_s`;
    every attempt counts in `model.attempts`."""
    for attempt in range(model.max_retries + 1):
        started = time.monotonic()
        model.attempts += 1
        try:
            return send(), time.monotonic() - started
        except ModelError as error:
            if error.kind not in RETRIED or attempt == model.max_retries:
                if error.kind in RETRIED and attempt:
                    error.message = f"{error.message} (after {attempt + 1} attempts)"
                raise
            time.sleep(min(model.backoff_s * 2 ** attempt, model.max_backoff_s))
    raise AssertionError("unreachable: the last attempt returns or raises")


class LiteLLMModel(Model):
    """A model reached through litellm. Rate limits, timeouts and 5xx errors are retried up to `max_retries`
    times with exponential backoff (`backoff_s`, doubling, capped at `max_backoff_s`)."""

    def __init__(self, name: str, api_base: str | None = None, api_key: str | None = None, timeout: float = 120,
                 max_retries: int = 3, backoff_s: float = 1.0, max_backoff_s: float = 30.0) -> None:
        self.name = name
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.attempts = 0  # calls made to the provider, retries included

    def _complete(self, messages: list[Message], *, schema: type | None,
                  conversation_id: str | None) -> Completion:
        litellm = import_litellm()
        kwargs = {"model": self.name, "messages": [m.to_dict() for m in messages], "timeout": self.timeout,
                  "max_retries": 0, "num_retries": 0}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key

        def send():
            try:
                return litellm.completion(**kwargs)
            except Exception as exc:  # litellm raises its own exception family; map_error sorts them
                raise map_error(exc, self.name, self.api_base) from None

        response, latency = with_retries(self, send)
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # models without a price in litellm's map cost 0 here
            cost = 0.0
        return Completion(
            text=text,
            usage=Usage(prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                        cost=cost, latency_s=latency),
            model=self.name, conversation_id=conversation_id or uuid.uuid4().hex, scripted=False)
