"""The models one run may use (its author and its reviewer), built lazily from their specs and shared by its skills."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orgtree_lang.models.base import Completion, Message, Model, ModelError
from orgtree_lang.runtime.errors import SkillError

NO_MODEL_HINT = "pass --model SPEC to `pipe run` (or set PIPE_MODEL, or add [model] name to orgtree.toml)"


class RunModels:
    """The run's author model (llm.* skills, the decomposer) and reviewer model, each made on first use.

    `author_spec` and `review_spec` are what --model / PIPE_MODEL / orgtree.toml chose (None: not configured).
    `api_base` applies to provider models; `record` (a cassette path) wraps them in a RecordingModel.
    """

    def __init__(self, author_spec: str | None, review_spec: str | None = None, *, api_base: str | None = None,
                 record: Path | str | None = None, author: Model | None = None,
                 reviewer: Model | None = None) -> None:
        self.author_spec = author_spec or (author.name if author is not None else None)
        self.review_spec = review_spec or self.author_spec
        self.api_base = api_base
        self.record = Path(record) if record else None
        self._made: dict[str, Model] = {}
        if author is not None:
            self._made["author"] = author
        if reviewer is not None:
            self._made["reviewer"] = reviewer
        self._lock = threading.Lock()

    @classmethod
    def from_choice(cls, model: str | None = None, review_model: str | None = None, *,
                    api_base: str | None = None, record: str | None = None) -> RunModels:
        """The models --model / --review-model name, else PIPE_MODEL / PIPE_REVIEW_MODEL, else orgtree.toml."""
        from orgtree_lang.models.select import resolve_model_spec, resolve_review_model_spec

        author = resolve_model_spec(model)
        review = resolve_review_model_spec(review_model, author) if author or review_model else None
        return cls(author, review, api_base=api_base, record=record)

    @property
    def configured(self) -> bool:
        return bool(self.author_spec)

    def author(self) -> Model:
        """The author model; ModelError(kind="config") naming --model when none is configured."""
        return self._model("author", self.author_spec, "")

    def reviewer(self) -> Model:
        """The reviewer model (the author's spec when no other is chosen), built with role="reviewer"."""
        return self._model("reviewer", self.review_spec, ".reviewer")

    def _model(self, role: str, spec: str | None, cassette_suffix: str) -> Model:
        with self._lock:
            if role in self._made:
                return self._made[role]
            if not spec:
                raise ModelError("no model is configured", "config", NO_MODEL_HINT)
            from orgtree_lang.models.select import model_from_spec

            provider = not spec.startswith(("scripted:", "replay:"))
            extra = {"api_base": self.api_base} if provider and self.api_base else {}
            model = model_from_spec(spec, role=role, **extra)
            if self.record is not None:
                from orgtree_lang.models.cassette import RecordingModel

                path = self.record.with_name(f"{self.record.stem}{cassette_suffix}{self.record.suffix}")
                model = RecordingModel(model, path)
            self._made[role] = model
            return model

    def ask(self, skill: str, system: str, prompt: str, *, schema: type | None = None,
            check: Callable[[Completion], tuple[Any, str | None]] | None = None, retries: int = 1) -> Any:
        """One answer from the author model for the skill named `skill`, in a fresh conversation.

        With `schema` (a pydantic class) the answer is validated into `.parsed`. `check(completion)` returns
        (value, problem); a problem, or an answer that does not fit the schema, is sent back to the model in the
        same conversation up to `retries` times, then raised as SkillError("<skill>: ..."). Any other model
        failure is a SkillError with the model layer's message and hint. Returns check's value, else the
        parsed object (with a schema) or the text.
        """
        try:
            model = self.author()
        except ModelError as err:
            raise SkillError(f"{skill} needs a model, but {err.message}", hint=err.hint or NO_MODEL_HINT) from None
        import uuid

        conversation = uuid.uuid4().hex
        messages = [Message("system", system), Message("user", prompt)]
        problem = ""
        for _attempt in range(retries + 1):
            try:
                done = model.complete(messages, schema=schema, conversation_id=conversation)
            except ModelError as err:
                if err.kind != "invalid_output":
                    raise SkillError(f"{skill}: {err.message}", hint=err.hint) from None
                problem, answer = err.message, ""
            else:
                if check is None:
                    return done.parsed if schema is not None else done.text
                value, problem = check(done)
                if not problem:
                    return value
                answer = done.text
            messages += [Message("assistant", answer or "(an answer that could not be used)"),
                         Message("user", f"That answer cannot be used: {problem}\nAnswer again, following the "
                                         "instructions exactly.")]
        raise SkillError(f"{skill}: the model's answer could not be used after {retries + 1} attempts: {problem}",
                         hint="make the request more precise, or use a more capable model with --model")
