"""Shared by the decomposer tests: model answers (a valid triage module, reviewer verdicts), scripted models that
record what they were asked, and one run of a program whose ambiguous blocks a decomposer resolves."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.decomposer import Decomposer, DecomposeSettings
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

# A module for a `classify(report: str) -> label: str` block: bug if the report mentions a crash.
GOOD = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(text.lower(report), "crash"):
        return "bug"
    return "question"
```'''
WRONG_TYPE = "```pipe\npipeline main(report: str) -> int:\n    return 1\n```"
NO_CONCERNS = json.dumps({"concerns": [], "summary": "fits the spec"})
ONE_CONCERN = json.dumps({"concerns": [{"id": "c1", "severity": "blocking", "spec_basis": "bug if it mentions a crash",
                                        "evidence": "`Crash` in capitals is missed", "suggested_fix": "lower-case it"}],
                          "summary": "one problem"})

# A block only research can answer (the ticket API is nowhere in the prompt), the author's first answer to it, and
# the module it writes once the research is done.
TICKETS = '''pipeline main(base: str) -> str:
    ambiguous tickets_url(base: str) -> url: str:
        """The URL (base, then the path) of the ticket API's endpoint that lists the open tickets."""
    return url
'''
NEEDS_RESEARCH = ('```json\n{"needs_research": {"reasons": ["the ticket API is unknown to me"], '
                  '"questions": ["Which endpoint of the ticket API lists open tickets?"]}}\n```')
TICKETS_MODULE = '''```pipe
pipeline main(base: str) -> str:
    return base + "/v2/tickets?state=open"
```'''


@functools.cache
def stdlib_registry():
    """The stdlib skills (no plugins), built once for every decomposer test that does not add its own."""
    return default_registry(plugins=False)


class Recording:
    """A scripted model (rules as in docs/models.md, written to `path`) that keeps every request it is sent."""

    def __init__(self, path: Path, rules: list[dict], role: str) -> None:
        path.write_text(json.dumps(rules))
        self.model = ScriptedModel.from_file(path, role=role)
        self.name = self.model.name
        self.requests: list[list] = []  # the messages of each request, in order
        self.conversations: list = []  # the conversation id each request was asked in

    def complete(self, messages, **kwargs):
        self.requests.append(list(messages))
        self.conversations.append(kwargs.get("conversation_id"))
        return self.model.complete(messages, **kwargs)

    @property
    def prompts(self) -> list[str]:
        """The last message of each request: what the model was asked that time."""
        return [messages[-1].content for messages in self.requests]

    def asked(self, needle: str) -> list[tuple[list, object]]:
        """(messages, conversation id) of each request whose last message contains `needle`."""
        return [(messages, conversation) for messages, conversation in zip(self.requests, self.conversations)
                if needle in messages[-1].content]

    def forget(self) -> None:
        self.requests.clear()
        self.conversations.clear()


def scripted(folder: Path, name: str, rules: list[dict], role: str) -> Recording:
    """A Recording whose rules file is `folder/NAME.json`."""
    return Recording(folder / f"{name}.json", rules, role)


def run_decomposed(workspace: Path, source: str, inputs: dict, author, reviewer, *, file: str = "prog.pipe",
                   registry=None, human=None, **settings):
    """Compile `source`, run its `main` on `inputs` with a decomposer of these models, and return the result.

    Outputs are not reviewed unless `review_outputs` is given: these tests are about writing a module (the
    default, "first", is tested in tests/test_decompose_repair.py)."""
    settings.setdefault("review_outputs", "off")
    registry = registry or stdlib_registry()
    program = compile_source(source, file, registry).program
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=registry, workspace=workspace,
                            parent_file=file, parent_source=source, settings=DecomposeSettings(**settings),
                            human=human)
    machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(workspace)),
                            resolver=decomposer)
    machine.start(None, inputs)
    return machine.run().result


# A module for a `cents(item: str) -> amount: int` block: right for prices with a dot ("3.50", the only kind the
# examples show), an error for "12" (no part after the dot); PRICE_FIXED is its repair.
PRICE_FIRST = '''```pipe
use text

pipeline main(item: str) -> int:
    parts = text.split(item, ".")
    return int(parts[0]) * 100 + int(parts[1])
```'''
PRICE_FIXED = '''```pipe
use text

pipeline main(item: str) -> int:
    parts = text.split(item, ".")
    if len(parts) == 1:
        return int(parts[0]) * 100
    return int(parts[0]) * 100 + int(parts[1])
```'''
