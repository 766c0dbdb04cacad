"""RunModels: the author and reviewer models a run is configured with, each built on first use, shared by its skills."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orgtree_lang.models.backends import is_offline
from orgtree_lang.models.base import Completion, Message, Model, ModelError
from orgtree_lang.models.window import guess_notice, window_of
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
                 author: Model | None = None, reviewer: Model | None = None,
                 windows: dict[str, int | None] | None = None, notice: Callable[[str], None] | None = None) -> None:
        self.author_spec = author_spec or (author.name if author is not None else None)
        self.review_spec = review_spec or self.author_spec or (reviewer.name if reviewer is not None else None)
        self.extra = dict(extra or {})
        self.record = Path(record) if record else None
        # The context window configured per role ("author", "reviewer"); None: the spec or litellm's map decides.
        self.windows = {role: tokens for role, tokens in (windows or {}).items() if tokens}
        # Told once per model whose window is only a guess (pipe run prints it); None: nobody is told.
        self.notice = notice
        self._told: set[str] = set()
        self._built: dict[str, Model] = {}
        if author is not None:
            self._built["author"] = author
        if reviewer is not None:
            self._built["reviewer"] = reviewer
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, model: str | None = None, review_model: str | None = None, *,
                    api_base: str | None = None, record: str | None = None, timeout: float | None = None,
                    context_window: int | None = None, review_context_window: int | None = None,
                    notice: Callable[[str], None] | None = None,
                    config_path: Path = Path("orgtree.toml")) -> RunModels:
        """The models named by the arguments, else the environment, else orgtree.toml (nothing built yet).
        `timeout` (seconds per call) is resolved the same way: PIPE_MODEL_TIMEOUT, `[model] timeout`, 120; so are
        the context windows (PIPE_CONTEXT_WINDOW, `[model] context_window`; the reviewer's defaults to the author's
        when both are the same model)."""
        from orgtree_lang.models.select import (resolve_context_window, resolve_model_spec, resolve_model_timeout,
                                                resolve_review_model_spec)

        author = resolve_model_spec(model, config_path=config_path)
        review = resolve_review_model_spec(review_model, author, config_path=config_path)
        extra: dict[str, Any] = {"timeout": resolve_model_timeout(timeout, config_path=config_path)}
        if api_base:
            extra["api_base"] = api_base
        author_window = resolve_context_window(context_window, config_path=config_path)
        review_window = resolve_context_window(review_context_window, config_path=config_path, role="reviewer")
        if review_window is None and review == author:
            review_window = author_window
        return cls(author, review, extra=extra, record=record,
                   windows={"author": author_window, "reviewer": review_window}, notice=notice)

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
            window = self.windows.get(role) if key == role else None
            model = model_from_spec(spec, role=role, context_window=window, **(self.extra if live else {}))
            if live and self.notice is not None and spec not in self._told and window_of(model).guessed:
                self._told.add(spec)
                self.notice(guess_notice(spec, role))
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
            spend: Any = None, images: tuple = ()) -> Any:
        """One answer from the author model for the skill named `skill`, in a fresh conversation.

        With `schema` (a pydantic class) the answer is validated into `.parsed`. `check(completion)` returns
        (value, problem); a problem, or an answer that does not fit the schema, is sent back to the model in the
        same conversation up to `retries` times, then raised as SkillError("<skill>: ..."). Any other model
        failure is a SkillError with the model layer's message and hint. Returns check's value, else the
        parsed object (with a schema) or the text. `spend` (the skill context's ModelSpend) checks each call
        against the run tree's token and cost budgets and charges it. `images` (bytes values of image/* types) are
        shown to the model with the prompt.
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
        messages = [Message("system", system), Message("user", prompt, tuple(images))]
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
