"""A step's inputs as the journal keeps them: the hash a resume compares, and a short view of each argument that a
refusal shows when the hashes differ."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from orgtree_lang.runtime.values import encode

PREVIEW_CHARS = 60  # of each argument's JSON text: enough to tell values apart, small beside the step's row
_DIGEST_CHARS = 12  # of an argument's own hash: tells it changed when the change is past its preview


@dataclass(frozen=True)
class StepInputs:
    """The hash of a step's arguments and, as JSON text, each argument's preview and hash (the `inputs` column)."""

    digest: str
    shown: str


def step_inputs(args: list[Any], kwargs: dict[str, Any]) -> StepInputs:
    """The inputs of one step. The digest is the hash of `[args, kwargs]` encoded as JSON, as journals always
    had it; it is assembled from each argument's text, which is encoded once and also gives the previews."""
    positional = [_text(value) for value in args]
    named = {name: _text(value) for name, value in kwargs.items()}
    if len(kwargs) == 1 and next(iter(kwargs)).startswith("$"):
        keywords = json.dumps(encode(kwargs), separators=(",", ":"), ensure_ascii=False)  # encode wraps it
    else:
        keywords = "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{v}" for k, v in named.items()) + "}"
    whole = f"[[{','.join(positional)}],{keywords}]"
    shown = json.dumps({"args": [_view(text) for text in positional],
                        "kwargs": {name: _view(text) for name, text in named.items()}}, ensure_ascii=False)
    return StepInputs(hashlib.sha256(whole.encode("utf-8")).hexdigest()[:32], shown)


def input_hash(args: list[Any], kwargs: dict[str, Any]) -> str:
    """A stable hash of a step's inputs (positional and keyword arguments, in order): what a resume compares,
    asked for every step; `step_inputs` gives the same digest with the previews, for the steps recorded."""
    text = json.dumps([encode(args), encode(kwargs)], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def differences(journaled: str | None, now: StepInputs) -> list[str]:
    """Lines naming each argument whose value differs between the journal's `inputs` and `now`, old and new.

    Empty when the journal keeps no inputs (written before it did) or shows no difference."""
    if not journaled:
        return []
    old, new = json.loads(journaled), json.loads(now.shown)
    lines = []
    if len(old["args"]) != len(new["args"]):
        lines.append(f"  the journal has {len(old['args'])} positional argument(s), this code gives "
                     f"{len(new['args'])}")
    pairs = [(f"argument {n}", a, b) for n, (a, b) in enumerate(zip(old["args"], new["args"]), 1)]
    pairs += [(f"argument `{name}`", old["kwargs"].get(name), new["kwargs"].get(name))
              for name in dict.fromkeys([*old["kwargs"], *new["kwargs"]])]
    for label, before, after in pairs:
        if before == after:
            continue
        lines.append(f"  {label} differs:")
        lines.append(f"      the journal has: {_shown(before)}")
        lines.append(f"      this code gives: {_shown(after)}")
        if before and after and before[:2] == after[:2]:
            lines.append(f"      (the same length, and the same first {PREVIEW_CHARS} characters: they differ after)")
    return lines


def _text(value: Any) -> str:
    return json.dumps(encode(value), separators=(",", ":"), ensure_ascii=False)


def _view(text: str) -> list:
    """[preview, length] of one argument's JSON text, and its hash when the preview is not the whole of it."""
    if len(text) <= PREVIEW_CHARS:
        return [text, len(text)]
    return [text[:PREVIEW_CHARS], len(text), hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]]


def _shown(view: list | None) -> str:
    if view is None:
        return "(not given)"
    preview, length = view[:2]
    if length <= PREVIEW_CHARS:
        return preview
    return f"{preview}… ({length:,} characters in all)"
