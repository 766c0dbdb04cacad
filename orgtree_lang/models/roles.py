"""RunModels: the author and reviewer model specs a run is configured with, each built on first use."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from orgtree_lang.models.base import Model, ModelError


class RunModels:
    """The run's models by role, for skills that need one (an insight's reviewer, a summarizer).

    Specs are resolved like the decomposer's (`--model`, `PIPE_MODEL`, `[model] name`; `--review-model`,
    `PIPE_REVIEW_MODEL`, `[model] review`, else the author's); a model is built only when first asked for,
    so a run that never needs one never imports a provider library.
    """

    def __init__(self, author_spec: str | None, review_spec: str | None = None, *,
                 extra: dict[str, Any] | None = None) -> None:
        self.author_spec = author_spec or None
        self.review_spec = review_spec or author_spec or None
        self.extra = dict(extra or {})
        self._built: dict[str, Model] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, model: str | None = None, review_model: str | None = None, *,
                    api_base: str | None = None, config_path: Path = Path("orgtree.toml")) -> RunModels:
        """The models named by the arguments, else the environment, else orgtree.toml (nothing built yet)."""
        from orgtree_lang.models.select import resolve_model_spec, resolve_review_model_spec

        author = resolve_model_spec(model, config_path=config_path)
        review = resolve_review_model_spec(review_model, author, config_path=config_path)
        return cls(author, review, extra={"api_base": api_base} if api_base else None)

    def author(self) -> Model:
        return self._get("author", self.author_spec)

    def reviewer(self) -> Model:
        return self._get("reviewer", self.review_spec)

    def _get(self, role: str, spec: str | None) -> Model:
        if not spec:
            raise ModelError(f"no {role} model is configured",
                             "config", "pass --model (and --review-model), set PIPE_MODEL (PIPE_REVIEW_MODEL), "
                                       "or add [model] name (and review) to orgtree.toml")
        with self._lock:
            if role not in self._built:
                from orgtree_lang.models.select import model_from_spec

                live = not spec.startswith(("scripted:", "replay:"))
                self._built[role] = model_from_spec(spec, role=role, **(self.extra if live else {}))
            return self._built[role]

    def __repr__(self) -> str:
        return f"RunModels(author={self.author_spec!r}, reviewer={self.review_spec!r})"
