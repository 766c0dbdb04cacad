"""Model skills: ask the run's author model a question, extract typed data, summarize, and classify text.

They use the model the run was started with (--model, PIPE_MODEL or orgtree.toml), through `ctx.models`.
None of them is pure: a durable run journals every answer, so resume and replay make no model call.
Each takes `images`: bytes values of an image/* media type that the model is shown with the request.
"""

from __future__ import annotations

import json
import re
from typing import Any

from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill
from orgtree_lang.stdlib.llm_schema import schema_model

NO_MODEL_HINT = "pass --model SPEC to `pipe run` (or set PIPE_MODEL, or add [model] name to orgtree.toml)"


def _images(name: str, images: list[BytesValue]) -> tuple[BytesValue, ...]:
    """The images a call shows its model; any other bytes value is refused, naming its media type."""
    for number, image in enumerate(images, 1):
        if not image.is_image:
            raise SkillError(f"{name}: image {number} is {image.media_type}, not an image/* value a model can be shown",
                             hint="read it with a media type such as image/png (fs.read_bytes(path, media_type=...)), "
                                  "or pass its text in the prompt")
    return tuple(images)


def _models(ctx: SkillContext, name: str):
    models = getattr(ctx, "models", None)
    if models is None or not getattr(models, "configured", True):
        raise SkillError(f"{name} needs a model, and this run has none configured", hint=NO_MODEL_HINT)
    return models


@skill("llm.ask", slow=True)
def ask(ctx: SkillContext, prompt: str, system: str = "", images: list[BytesValue] = []) -> str:
    """The author model's answer to a prompt, as text.

    Example: `llm.ask("What does this chart show?", images=[fs.read_bytes("chart.png")])`

    Args:
        prompt: What to ask; the whole request the model sees besides `system` and `images`.
        system: Optional instructions that frame the answer (a role, a format, a length).
        images: Pictures to show the model with the prompt: bytes values of an image/* media type.

    Returns:
        The model's answer, unchanged.
    """
    if not prompt.strip():
        raise SkillError("llm.ask: the prompt is empty", hint="pass the question as the first argument")
    shown = _images("llm.ask", images)
    return _models(ctx, "llm.ask").ask("llm.ask", system or "Answer the request.", prompt,
                                         spend=ctx.spend, images=shown)


@skill("llm.extract", slow=True)
def extract(ctx: SkillContext, text: str, schema: dict[str, Any],
            images: list[BytesValue] = []) -> dict[str, Any]:
    """Structured data taken from a text by the author model, validated against a schema.

    The schema is either the fields and their .pipe types, `{"name": "str", "age": "int?", "tags": "list[str]"}`
    (every field must be present; `T?` may be none), or a JSON schema object with `properties`. The answer is
    validated strictly (no extra fields, no "3" for an int); an answer that does not fit is sent back to the
    model once with the problem, then the call fails with the validation message.

    Args:
        text: The text to take the data from.
        schema: The fields to extract: field name to .pipe type, or a JSON schema object.
        images: Pictures to take the data from as well (a scanned form, a receipt): image/* bytes values.

    Returns:
        A dict with exactly the schema's fields.
    """
    shown = _images("llm.extract", images)
    model_class = schema_model(schema)
    shape = json.dumps(model_class.model_json_schema(), sort_keys=True)
    system = ("You extract structured data from a text. Answer with one JSON object and nothing else, matching "
              f"this JSON schema exactly (no other fields):\n{shape}")
    parsed = _models(ctx, "llm.extract").ask("llm.extract", system, f"The text:\n\n{text}", schema=model_class,
                                                   spend=ctx.spend, images=shown)
    return parsed.model_dump()


@skill("llm.summarize", slow=True)
def summarize(ctx: SkillContext, text: str, max_words: int = 60,
              images: list[BytesValue] = []) -> str:
    """A summary of a text written by the author model, at most `max_words` words long.

    A longer answer is sent back once with its word count; if it is still too long the call fails.

    Args:
        text: The text to summarize.
        max_words: The most words the summary may have; at least 1.
        images: Pictures that belong to the text: image/* bytes values.

    Returns:
        The summary.
    """
    if max_words < 1:
        raise SkillError(f"llm.summarize: max_words must be at least 1, got {max_words}")
    shown = _images("llm.summarize", images)

    def fits(done) -> tuple[str, str | None]:
        summary = done.text.strip()
        words = len(summary.split())
        return summary, None if words <= max_words else f"the summary has {words} words, the limit is {max_words}"

    system = f"Summarize the text in at most {max_words} words. Answer with the summary only."
    return _models(ctx, "llm.summarize").ask("llm.summarize", system, text, check=fits, spend=ctx.spend,
                                               images=shown)


@skill("llm.classify", slow=True)
def classify(ctx: SkillContext, text: str, labels: list[str], images: list[BytesValue] = []) -> str:
    """The one label, out of a given list, that the author model picks for a text.

    The answer must be one of the labels (case, quotes and a final period are ignored); any other answer
    is sent back once, then the call fails.

    Args:
        text: The text to classify.
        labels: The labels to choose from; at least two, all different.
        images: Pictures to classify with the text (a photo of the defect): image/* bytes values.

    Returns:
        One of `labels`, spelled exactly as given.
    """
    if len(labels) < 2 or len(set(labels)) != len(labels) or any(not label.strip() for label in labels):
        raise SkillError(f"llm.classify: needs at least two different, non-blank labels, got {labels!r}",
                         hint='e.g. llm.classify(report, ["bug", "feature", "question"])')
    shown = _images("llm.classify", images)
    by_key = {_label_key(label): label for label in labels}
    listing = ", ".join(labels)

    def one_label(done) -> tuple[str | None, str | None]:
        label = by_key.get(_label_key(done.text))
        return label, None if label else f"{done.text.strip()[:80]!r} is not one of the labels: {listing}"

    system = f"Classify the text. Answer with exactly one of these labels and nothing else: {listing}"
    return _models(ctx, "llm.classify").ask("llm.classify", system, text, check=one_label,
                                              spend=ctx.spend, images=shown)


def _label_key(text: str) -> str:
    return re.sub(r"^[\s\"'`*]+|[\s\"'`*.]+$", "", text).casefold()
