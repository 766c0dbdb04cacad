"""`scripted:FILE`: deterministic answers from a YAML or JSON file of rules, for tests and offline examples."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.models.base import Completion, Message, Model, ModelError, Usage, first_line, last_user_text
from orgtree_lang.models.tokens import count_tokens

IMAGE_TOKENS = 85

RULE_KEYS = {"role", "match", "reply", "replies", "repeat"}
MATCH_KEYS = {"contains", "regex"}


@dataclass
class Rule:
    """One rule: which requests it answers (role, text rules on the last user message) and its replies."""

    index: int
    replies: list[str]
    role: str | None = None
    contains: list[str] = field(default_factory=list)
    regex: re.Pattern | None = None
    repeat: bool = True
    served: int = 0

    def matches(self, role: str, text: str) -> bool:
        if self.role is not None and self.role != role:
            return False
        if not self.repeat and self.served >= len(self.replies):
            return False
        if any(needle not in text for needle in self.contains):
            return False
        return self.regex is None or self.regex.search(text) is not None

    def next_reply(self) -> str:
        reply = self.replies[min(self.served, len(self.replies) - 1)]
        self.served += 1
        return reply


def _bad(path: str, where: str, what: str) -> ModelError:
    return ModelError(f"scripted model file {path}: {where}: {what}", "config",
                      "see docs/models.md for the scripted file format")


def _parse_rule(path: str, index: int, raw: Any) -> Rule:
    where = f"rule {index + 1}"
    if not isinstance(raw, dict):
        raise _bad(path, where, "a rule must be a mapping")
    unknown = set(raw) - RULE_KEYS
    if unknown:
        raise _bad(path, where, f"unknown key(s) {', '.join(sorted(unknown))}")
    if ("reply" in raw) == ("replies" in raw):
        raise _bad(path, where, "give exactly one of `reply` or `replies`")
    replies = [raw["reply"]] if "reply" in raw else raw["replies"]
    if not isinstance(replies, list) or not replies or not all(isinstance(r, str) for r in replies):
        raise _bad(path, where, "`reply` must be a string and `replies` a non-empty list of strings")
    match = raw.get("match") or {}
    if not isinstance(match, dict) or set(match) - MATCH_KEYS:
        raise _bad(path, where, "`match` takes only `contains` and `regex`")
    contains = match.get("contains", [])
    contains = [contains] if isinstance(contains, str) else contains
    if not isinstance(contains, list) or not all(isinstance(c, str) for c in contains):
        raise _bad(path, where, "`match.contains` must be a string or a list of strings")
    regex = None
    if "regex" in match:
        try:
            regex = re.compile(match["regex"], re.M)
        except (re.error, TypeError) as exc:
            raise _bad(path, where, f"bad `match.regex`: {exc}") from None
    role = raw.get("role")
    if role is not None and not isinstance(role, str):
        raise _bad(path, where, "`role` must be a string")
    repeat = raw.get("repeat", True)
    if not isinstance(repeat, bool):
        raise _bad(path, where, "`repeat` must be true or false")
    return Rule(index, list(replies), role, contains, regex, repeat)


def load_rules(path: Path, label: str) -> list[Rule]:
    """Read and check a scripted file: a list of rules, or a mapping with a `rules` list."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"cannot read scripted model file {label}: {exc.strerror}", "config") from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:
        raise _bad(label, "not valid YAML/JSON", str(exc).splitlines()[0]) from None
    if isinstance(data, dict):
        data = data.get("rules")
    if not isinstance(data, list):
        raise _bad(label, "top level", "expected a list of rules (or a mapping with a `rules` list)")
    return [_parse_rule(label, i, raw) for i, raw in enumerate(data)]


class ScriptedModel(Model):
    """Answers from rules, first match wins; a rule's `replies` are served in order, then the last repeats
    (with `repeat: false` the rule stops matching once its replies are used up)."""

    def __init__(self, rules: list[Rule], name: str, role: str = "author") -> None:
        self.rules = rules
        self.name = name
        self.role = role
        self.calls = 0
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path, role: str = "author") -> ScriptedModel:
        label = str(path)
        return cls(load_rules(Path(path), label), f"scripted:{label}", role)

    @classmethod
    def from_spec(cls, argument: str, role: str = "author") -> ScriptedModel:
        """`scripted:FILE`: the rules in FILE."""
        return cls.from_file(argument, role)

    def _complete(self, messages: list[Message], *, schema: type | None,
                  conversation_id: str | None) -> Completion:
        text = last_user_text(messages)
        with self._lock:
            rule = next((r for r in self.rules if r.matches(self.role, text)), None)
            if rule is None:
                raise ModelError(
                    f"{self.name} has no response for this {self.role} request: {first_line(text)!r}",
                    "missing_response", f"add a rule to {self.name.split(':', 1)[1]} that matches it")
            reply = rule.next_reply()
            self.calls += 1
            number = self.calls
        # An image counts as OpenAI's low-detail image does: 85 tokens.
        prompt = sum(count_tokens(m.content) + IMAGE_TOKENS * len(m.images) for m in messages)
        usage = Usage(prompt_tokens=prompt, completion_tokens=count_tokens(reply))
        return Completion(text=reply, usage=usage, model=self.name,
                          conversation_id=conversation_id or f"{self.name}#{number}", scripted=True)
