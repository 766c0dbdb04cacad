"""RunModels: the author and reviewer models a run is configured with, each built on first use, shared by its skills."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orgtree_lang.models.backends import is_offline
from orgtree_lang.models.base import Completion, Message, Model, ModelError
from orgtree_lang.runtime.errors import SkillError

NO_MODEL_HINT = ("pass --model (and --review-model), set PIPE_MODEL (PIPE_REVIEW_MODEL), "
                 "or add [model] name (and review) to orgtree.toml")


class RunModels:
    """The run's models by role, for skills that need one (llm.*, an insight's reviewer, a summarizer).

    Specs are resolved like the decomposer's (`--model`, `PIPE_MODEL`, `[model] name`; `--review-model`,
    `PIPE_REVIEW_MODEL`, `[model] review`, else the author's); a model is built only when first asked for,
    so a run that never needs one never imports a provider library. `extra` (e.g. api_base) goes to provider
    models only; `record` (a cassette path) wraps each built model in a RecordingModel (the reviewer's file
    gets `.reviewer` before the suffix). `author=`/`reviewer=` give ready models (tests, embedding).
    """

    def __init__(self, author_spec: str | None, review_spec: str | None = None, *,
                 extra: dict[str, Any] | None = None, record: Path | str | None = None,
                 author: Model | None = None, reviewer: Model | None = None) -> None:
        self.author_spec = author_spec or (author.name if author is not None else None)
        self.review_spec = review_spec or self.author_spec or (reviewer.name if reviewer is not None else None)
        self.extra = dict(extra or {})
        self.record = Path(record) if record else None
        self._built: dict[str, Model] = {}
        if author is not None:
            self._built["author"] = author
        if reviewer is not None:
            self._built["reviewer"] = reviewer
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, model: str | None = None, review_model: str | None = None, *,
                    api_base: str | None = None, record: str | None = None, timeout: float | None = None,
                    config_path: Path = Path("orgtree.toml")) -> RunModels:
        """The models named by the arguments, else the environment, else orgtree.toml (nothing built yet).
        `timeout` (seconds per call) is resolved the same way: PIPE_MODEL_TIMEOUT, `[model] timeout`, 120."""
        from orgtree_lang.models.select import resolve_model_spec, resolve_model_timeout, resolve_review_model_spec

        author = resolve_model_spec(model, config_path=config_path)
        review = resolve_review_model_spec(review_model, author, config_path=config_path)
        extra: dict[str, Any] = {"timeout": resolve_model_timeout(timeout, config_path=config_path)}
        if api_base:
            extra["api_base"] = api_base
        return cls(author, review, extra=extra, record=record)

    @property
    def configured(self) -> bool:
        """True when an author model is configured (the reviewer defaults to it)."""
        return bool(self.author_spec)

    def author(self) -> Model:
        return self._get("author", self.author_spec, "")

    def reviewer(self) -> Model:
        return self._get("reviewer", self.review_spec, ".reviewer")

    def named(self, spec: str, *, role: str = "author") -> Model:
        """A model of this run by its spec (e.g. `[memory] summary_model`), built once with the run's endpoint and
        timeout; a cassette gets `.<role>` before its suffix."""
        return self._get(role, spec, f".{role}", key=f"{role}:{spec}")

    def _get(self, role: str, spec: str | None, cassette_suffix: str, *, key: str | None = None) -> Model:
        key = key or role
        with self._lock:
            if key in self._built:
                return self._built[key]
            if not spec:
                raise ModelError(f"no {role} model is configured", "config", NO_MODEL_HINT)
            from orgtree_lang.models.select import model_from_spec

            live = not is_offline(spec)
            model = model_from_spec(spec, role=role, **(self.extra if live else {}))
            if self.record is not None:
                from orgtree_lang.models.cassette import RecordingModel

                model = RecordingModel(model, self.record.with_name(
                    f"{self.record.stem}{cassette_suffix}{self.record.suffix}"))
            self._built[key] = model
            return model

    def __repr__(self) -> str:
        return f"RunModels(author={self.author_spec!r}, reviewer={self.review_spec!r})"

    def ask(self, skill: str, system: str, prompt: str, *, schema: type | None = None,
            check: Callable[[Completion], tuple[Any, str | None]] | None = None, retries: int = 1,
            spend: Any = None) -> Any:
        """One answer from the author model for the skill named `skill`, in a fresh conversation.

        With `schema` (a pydantic class) the answer is validated into `.parsed`. `check(completion)` returns
        (value, problem); a problem, or an answer that does not fit the schema, is sent back to the model in the
        same conversation up to `retries` times, then raised as SkillError("<skill>: ..."). Any other model
        failure is a SkillError with the model layer's message and hint. Returns check's value, else the
        parsed object (with a schema) or the text. `spend` (the skill context's ModelSpend) checks each call
        against the run tree's token and cost budgets and charges it.
        """
        try:
            model = self.author()
        except ModelError as err:
            raise SkillError(f"{skill} needs a model, but {err.message}", hint=err.hint or NO_MODEL_HINT) from None
        import uuid

        if spend is not None:
            from orgtree_lang.models.metered import MeteredModel

            model = MeteredModel(model, spend=spend, what=skill)
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
