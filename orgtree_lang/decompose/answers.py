"""The author's side of one writing: ask until an answer passes its checks, its problems sent back in the same
conversation, and a "needs research" answer researched instead of counted as a repair (the design's and the
module's answers alike)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.decompose.research import needs_research, record_need
from orgtree_lang.runtime.errors import PipeRuntimeError

# check(answer) -> (the accepted value, the problems: empty when the answer is accepted)
Check = Callable[[str], tuple[Any, list[str]]]


@dataclass
class AuthorTurns:
    """The author's conversation of one writing, and what each of its answers is recorded with."""

    author: Any
    conversation: str
    attempts: Any  # decompose.attempts.AttemptLog
    block: str  # the block's name
    digest: str  # its spec hash
    where: str  # `<parent file>:<line>` of the block, recorded with a research need
    workspace: Path
    tries: int  # answers per ask: 1 + [decompose] max_repairs
    max_research: int
    research: Callable[[Any, str], str] | None = None  # (need, what) -> the next request, after research
    messages: list = field(default_factory=list)

    def until_valid(self, what: str, phase: str, check: Check, hint: str, answers: list[str] | None = None):
        """Ask until `check` accepts an answer, at most `tries` answers besides researched ones; the accepted value.

        `what` names what is asked for in the messages ("module", "design"); every answer goes to the attempt log
        under `phase`, and to `answers` when given."""
        from orgtree_lang.models.base import Message

        problems: list[str] = []
        tries, attempt, researched = self.tries, 0, 0
        while attempt < tries:
            attempt += 1
            answer = self.author.complete(self.messages, conversation_id=self.conversation).text
            self.messages.append(Message("assistant", answer))
            if answers is not None:
                answers.append(answer)
            need = needs_research(answer)
            if need is not None:
                self._record(attempt, phase, answer, ["needs research"])
                record_need(self.workspace, self.block, self.digest, self.where, need, self.author.name,
                            self.conversation)
                if self.research is None or researched >= self.max_research:
                    raise PipeRuntimeError(
                        f"ambiguous block `{self.block}` needs research before it can be written: "
                        f"{'; '.join(need.reasons)}", kind="ambiguous", catchable=False,
                        hint="answer these questions in the block's docstring and run again: "
                             f"{' | '.join(need.questions) or '(none given)'}")
                researched, tries = researched + 1, tries + 1  # a researched answer is not a repair
                self.messages.append(Message("user", self.research(need, what)))
                continue
            value, problems = check(answer)
            self._record(attempt, phase, answer, problems)
            if not problems:
                return value
            self.messages.append(Message("user", f"The {what} is not accepted yet:\n" + "\n\n".join(problems) +
                                         f"\nReply with the corrected {what} in one ```pipe block."))
        raise PipeRuntimeError(
            f"no valid {what} for ambiguous block `{self.block}` after {tries} attempts; the last problems: "
            f"{' | '.join(p.splitlines()[0] for p in problems)}", kind="ambiguous", catchable=False, hint=hint)

    def _record(self, attempt: int, phase: str, answer: str, problems: list[str]) -> None:
        self.attempts.record(self.block, self.digest, attempt, phase, self.author.name, self.conversation, answer,
                             problems)


_RESOLUTION = re.compile(r"^\s*[-*]?\s*`?([A-Za-z0-9_.-]+)`?\s*:\s*(resolved|rejected)\s*:\s*(.+)$", re.I | re.M)


def resolutions(answer: str, concerns) -> dict[str, str]:
    """The author's `ID: resolved|rejected: why` lines; a concern it did not mention counts as resolved."""
    found = {m.group(1): f"{m.group(2).lower()}: {m.group(3).strip()}" for m in _RESOLUTION.finditer(answer)}
    return {c.id: found.get(c.id, "resolved: the revised module addresses it") for c in concerns}
