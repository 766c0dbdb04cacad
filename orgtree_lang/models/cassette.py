"""Record/replay: `RecordingModel` saves every request and response to a JSON cassette; `CassetteModel` serves them offline."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from orgtree_lang.models.base import (
    Completion,
    Message,
    Model,
    ModelError,
    Usage,
    first_line,
    last_user_text,
)
from orgtree_lang.runtime.files import write_atomic

CASSETTE_VERSION = 1


def request_hash(messages: list[Message]) -> str:
    """A stable hash of a request's messages (role and content, in order)."""
    # An image counts by its hash and media type; messages without images keep the key they always had.
    canonical = json.dumps([[m.role, m.content, *([[i.media_type, i.sha256] for i in m.images] if m.images else [])]
                            for m in messages], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


class RecordingModel(Model):
    """Wraps a model and saves each request and response to the cassette at `path` (rewritten whole, atomically,
    after every call; an existing cassette is replaced)."""

    def __init__(self, inner: Model, path: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = Path(path)
        self.interactions: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def _complete(self, messages: list[Message], *, schema: type | None,
                  conversation_id: str | None) -> Completion:
        completion = self.inner._complete(messages, schema=schema, conversation_id=conversation_id)
        entry = {
            "hash": request_hash(messages),
            "messages": [m.to_dict() for m in messages],
            "schema": schema.__name__ if schema is not None else None,
            "model": completion.model,
            "conversation_id": completion.conversation_id,
            "scripted": completion.scripted,
            "text": completion.text,
            "usage": completion.usage.to_dict(),
        }
        with self._lock:
            self.interactions.append(entry)
            _write_atomic(self.path, {"version": CASSETTE_VERSION, "model": self.inner.name,
                                      "interactions": self.interactions})
        return completion


class CassetteModel(Model):
    """`replay:FILE`: answers from a recorded cassette by request hash, never calling out. Several recordings of
    the same request are served in order, then the last repeats."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"replay:{path}"
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ModelError(f"cannot read cassette {path}: {exc.strerror}", "config",
                             "record one with --record FILE first") from None
        except json.JSONDecodeError as exc:
            raise ModelError(f"cassette {path} is not valid JSON: {exc.msg} at line {exc.lineno}", "config") from None
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            raise ModelError(f"cassette {path} has no `interactions` list", "config")
        self.recorded_model = data.get("model")
        self._by_hash: dict[str, list[dict[str, Any]]] = {}
        for entry in data["interactions"]:
            self._by_hash.setdefault(entry["hash"], []).append(entry)

    @classmethod
    def from_spec(cls, argument: str, role: str = "author") -> CassetteModel:
        """`replay:FILE`: the cassette in FILE, whatever the role (a cassette records its own model's answers)."""
        return cls(argument)

    def _complete(self, messages: list[Message], *, schema: type | None,
                  conversation_id: str | None) -> Completion:
        key = request_hash(messages)
        with self._lock:
            entries = self._by_hash.get(key)
            if not entries:
                raise ModelError(
                    f"cassette {self.path} has no recorded response for the request "
                    f"{first_line(last_user_text(messages))!r} (hash {key})", "missing_response",
                    "the program or its inputs changed since the recording: record again with --record FILE")
            index = self._served.get(key, 0)
            self._served[key] = index + 1
        entry = entries[min(index, len(entries) - 1)]
        usage = Usage(**{k: entry.get("usage", {}).get(k, 0) for k in ("prompt_tokens", "completion_tokens",
                                                                         "cost", "latency_s")})
        return Completion(text=entry["text"], usage=usage, model=self.name,
                          conversation_id=conversation_id or entry.get("conversation_id"),
                          scripted=bool(entry.get("scripted", False)))
