"""The `Model` interface: messages in, text (or output validated against a pydantic schema) out, with usage."""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from orgtree_lang.runtime.errors import PipeError

ERROR_KINDS = ("auth", "not_found", "rate_limit", "timeout", "server", "unreachable", "context_overflow", "empty",
               "invalid_output", "missing_response", "config")


class ModelError(PipeError):
    """A model call failed; `kind` is one of ERROR_KINDS, `hint` says how to fix it."""

    def __init__(self, message: str, kind: str, hint: str | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown ModelError kind {kind!r}")
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.hint = hint

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Message:
    """One chat message: role is "system", "user" or "assistant"; a user message may show images (bytes values
    with an image/* media type, runtime/artifacts.py), sent after its text as OpenAI `image_url` content parts."""

    role: str
    content: str
    images: tuple = ()

    def to_dict(self) -> dict[str, Any]:
        if not self.images:
            return {"role": self.role, "content": self.content}
        parts: list[dict[str, Any]] = [{"type": "text", "text": self.content}]
        parts += [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in self.images]
        return {"role": self.role, "content": parts}


@dataclass(frozen=True)
class Usage:
    """What one call cost: tokens in and out, money (USD, 0 when unknown) and wall-clock seconds."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Completion:
    """A model's answer: the raw text, its usage, and `parsed` (a validated schema instance) when one was asked for."""

    text: str
    usage: Usage
    model: str
    conversation_id: str | None = None
    scripted: bool = False
    parsed: Any = field(default=None, compare=False)


_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n?[ \t]*```", re.S)


def parse_structured(text: str, schema: type, model: str = "model") -> Any:
    """Parse `text` as JSON (a ```json fence is tolerated) and validate it against the pydantic `schema`."""
    import pydantic

    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise ModelError(f"{model} returned an empty answer where {schema.__name__} JSON was expected",
                         "invalid_output")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{model} did not return valid JSON for {schema.__name__}: {exc.msg} "
                         f"at line {exc.lineno} column {exc.colno}", "invalid_output",
                         "the answer must be one JSON object, optionally inside a ```json fence") from None
    try:
        return schema.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise ModelError(f"{model} returned JSON that does not fit {schema.__name__}: {problems}",
                         "invalid_output") from None


class Model(ABC):
    """A chat model. Subclasses implement `_complete`; `complete` adds schema validation."""

    name: str

    def complete(self, messages: list[Message], *, schema: type | None = None,
                 conversation_id: str | None = None) -> Completion:
        """Answer `messages`; with a pydantic `schema`, the answer is parsed and validated into `.parsed`.

        A blank answer is ModelError(kind="empty"); JSON that does not fit `schema` is kind="invalid_output".
        """
        if not messages:
            raise ModelError(f"{self.name}: a request needs at least one message", "config")
        completion = self._complete(list(messages), schema=schema, conversation_id=conversation_id)
        if not completion.text.strip():
            raise ModelError(f"{self.name} returned an empty answer to {first_line(last_user_text(messages))!r}",
                             "empty", "retry, or check the model's settings (max tokens, content filters)")
        if schema is not None:
            completion.parsed = parse_structured(completion.text, schema, self.name)
        return completion

    @abstractmethod
    def _complete(self, messages: list[Message], *, schema: type | None,
                  conversation_id: str | None) -> Completion:
        """Return the raw completion for `messages` (no schema validation)."""


def last_user_text(messages: list[Message]) -> str:
    """The content of the last user message ("" when there is none)."""
    for message in reversed(messages):
        if message.role == "user":
            return message.content
    return ""


def first_line(text: str, limit: int = 80) -> str:
    """The first non-blank line of `text`, shortened to `limit` characters, for error messages."""
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
