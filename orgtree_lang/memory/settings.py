"""`[memory]` of orgtree.toml in, MemorySettings out: who writes the context tree's summaries, and how agents search."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.memory.summarize import SUMMARY_WORKERS, ExtractiveSummarizer, ModelSummarizer, ThreadedCalls

SUMMARIZERS = ("model", "extractive")


@dataclass(frozen=True)
class MemorySettings:
    """How the memory is read. `summarizer = "model"` (the default) has a model write the summaries whenever the run
    has one configured (`summary_model`, else the author's); "extractive" keeps the offline sentence picker.
    `vectors = false` makes the agents' searches (scratchpad, insights, reuse) keyword-only."""

    summarizer: str = "model"
    summary_model: str = ""
    summary_workers: int = SUMMARY_WORKERS
    vectors: bool = True

    @classmethod
    def from_config(cls, path: Any = "orgtree.toml") -> MemorySettings:
        from orgtree_lang.runtime.config import ConfigError, config_section

        section = config_section("memory", path, types={"summarizer": str, "summary_model": str,
                                                        "summary_workers": int, "vectors": bool})
        if section.get("summarizer", "model") not in SUMMARIZERS:
            raise ConfigError(f"{path}: [memory] summarizer must be one of {', '.join(SUMMARIZERS)}, got "
                              f"{section['summarizer']!r}")
        if section.get("summary_workers", 1) < 1:
            raise ConfigError(f"{path}: [memory] summary_workers must be 1 or more, got {section['summary_workers']!r}")
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})

    @classmethod
    def for_workspace(cls, root: Path | str) -> MemorySettings:
        return cls.from_config(Path(root) / "orgtree.toml")

    def summarizer_for(self, models: Any, *, spend: Any = None, what: str = "summaries of the context tree",
                       submit: Any = None, journal: Any = None):
        """The summarizer a run uses: a ModelSummarizer on the run's models (a RunModels, or a Model) when the
        settings ask for one and a model is configured, metered against `spend`; else the extractive one."""
        model = self.summary_model_of(models)
        if model is None:
            return ExtractiveSummarizer()
        return ModelSummarizer(model, calls=ThreadedCalls(self.summary_workers, submit=submit, spend=spend, what=what),
                               journal=journal)

    def summary_model_of(self, models: Any):
        """The model that writes summaries, or None when they are extractive (asked for, or no model configured)."""
        if self.summarizer == "extractive" or models is None:
            return None
        if hasattr(models, "complete"):  # a Model already
            return models
        if not getattr(models, "configured", False) and not self.summary_model:
            return None
        return models.named(self.summary_model, role="summarizer") if self.summary_model else models.author()
