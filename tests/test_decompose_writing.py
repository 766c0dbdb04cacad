"""One writing of a module (decompose/writing.py, decompose/answers.py): the design and the module share one repair
loop, a "needs research" answer to the design request is researched like one to the code request, and the design
request counts in the first prompt's budget."""

from __future__ import annotations

import pytest
from decompose_testing import NEEDS_RESEARCH, NO_CONCERNS, TICKETS, TICKETS_MODULE, Recording, run_decomposed

from orgtree_lang.decompose.answers import AuthorTurns
from orgtree_lang.decompose.attempts import AttemptLog
from orgtree_lang.decompose.design import DESIGN_REQUEST
from orgtree_lang.decompose.research import recorded_needs
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.memory.memory import Memory
from orgtree_lang.models import tokens, window
from orgtree_lang.models.base import Completion, Message, Usage
from orgtree_lang.runtime.errors import PipeRuntimeError

DESIGN = '''```pipe
examples:
    tickets_url("https://t.test") -> "https://t.test/v2/tickets?state=open"
expect url != base, "a path is added"
```'''


def run(tmp_path, author_rules, **settings):
    author = Recording(tmp_path / "a.json", author_rules, "author")
    reviewer = Recording(tmp_path / "r.json", [{"reply": NO_CONCERNS}], "reviewer")
    return run_decomposed(tmp_path, TICKETS, {"base": "https://tickets.test"}, author, reviewer, file="tickets.pipe",
                          data_driven=True, **settings), author


def phases(tmp_path) -> list[tuple[str, bool]]:
    rows = AttemptLog(tmp_path).db.execute("SELECT phase, accepted FROM decompose_attempts ORDER BY seq")
    return [(row["phase"], bool(row["accepted"])) for row in rows]


def test_a_needs_research_answer_to_the_design_request_is_researched_and_the_design_asked_again(tmp_path):
    with Memory(tmp_path, vectors=False) as memory:
        memory.add("# Ticket API\nThe endpoint GET /v2/tickets?state=open lists open tickets of the ticket API.\n",
                   name="ticket-api.md")
    rules = [{"match": {"contains": "Now write the design"}, "reply": DESIGN},
             {"match": {"contains": "The design is settled"}, "reply": TICKETS_MODULE},
             {"reply": NEEDS_RESEARCH}]
    result, author = run(tmp_path, rules, protocol=False)
    assert result == "https://tickets.test/v2/tickets?state=open"
    retry = author.requests[1][-1].content
    assert "Which endpoint of the ticket API lists open tickets?" in retry
    assert "GET /v2/tickets?state=open lists open tickets" in retry and "Now write the design" in retry
    assert len(recorded_needs(tmp_path)) == 1
    # The researched answer is recorded, and is not counted as a repair of the design.
    assert phases(tmp_path) == [("design", False), ("design", True), ("write", True)]
    (saved,) = ModuleStore(tmp_path).all()
    assert saved.provenance["examples"].startswith("1 (0 from the program, 1 from the design")


def test_a_design_need_left_after_the_research_budget_fails_with_the_questions(tmp_path):
    with pytest.raises(PipeRuntimeError, match="needs research before it can be written") as err:
        run(tmp_path, [{"reply": NEEDS_RESEARCH}], protocol=False, max_research=0)
    assert "Which endpoint of the ticket API lists open tickets?" in err.value.hint
    assert phases(tmp_path) == [("design", False)] and not ModuleStore(tmp_path).all()


def test_the_design_request_counts_in_the_first_prompts_budget(tmp_path, monkeypatch):
    # Measure the first request at full size, then give the author a window whose share is one token less: the
    # request must be shortened to leave the design step room.
    rules = [{"match": {"contains": "First, the design"}, "reply": DESIGN}, {"reply": TICKETS_MODULE}]
    (tmp_path / "roomy").mkdir()
    _, roomy = run(tmp_path / "roomy", rules, protocol=False)
    first = roomy.requests[0][1].content
    full = tokens.count_tokens(first, roomy.name)
    budget = full - 1  # the request alone fits; with the design step, as it was sent, it does not
    (tmp_path / "tight").mkdir()
    # A 5% share of a window 20 times the budget (the language card needs room of its own); a scripted model is
    # named after its file.
    monkeypatch.setitem(window._overrides, f"scripted:{tmp_path / 'tight' / 'a.json'}", budget * 20)
    _, tight = run(tmp_path / "tight", rules, protocol=False, context_share=0.05)
    sent = tight.requests[0][1].content
    assert DESIGN_REQUEST in sent and tokens.count_tokens(sent, tight.name) <= budget
    (saved,) = ModuleStore(tmp_path / "tight").all()
    used, allowed = saved.provenance["prompt-tokens"].split(" allowed")[0].split(" of ")
    assert int(allowed) == budget and int(used) <= budget


class Answers:
    """An author answering from a list, recording what it was asked."""

    name = "list-author"

    def __init__(self, *answers: str) -> None:
        self.answers, self.asked = list(answers), []

    def complete(self, messages, conversation_id=None, **kwargs):
        self.asked.append(messages[-1].content)
        return Completion(text=self.answers.pop(0), usage=Usage(1, 1), model=self.name,
                          conversation_id=conversation_id or "c")


def turns(tmp_path, author, tries: int = 2) -> AuthorTurns:
    return AuthorTurns(author, "conv", AttemptLog(tmp_path), "step", "hash", "p.pipe:3", tmp_path, tries, 0,
                       messages=[Message("user", "first request")])


def test_one_loop_sends_each_problem_back_naming_what_was_asked_for(tmp_path):
    author = Answers("bad", "good")
    value = turns(tmp_path, author).until_valid("design", "design",
                                                lambda answer: (answer, [] if answer == "good" else ["too vague"]),
                                                "a hint")
    assert value == "good"
    assert author.asked[1] == "The design is not accepted yet:\ntoo vague\nReply with the corrected design in one " \
                              "```pipe block."
    assert phases(tmp_path) == [("design", False), ("design", True)]


def test_one_loop_gives_up_after_its_tries_with_the_last_problems(tmp_path):
    with pytest.raises(PipeRuntimeError) as err:
        turns(tmp_path, Answers("a", "b")).until_valid("module", "write", lambda answer: (None, [f"no {answer}\n."]),
                                                       "write it yourself")
    assert err.value.message == "no valid module for ambiguous block `step` after 2 attempts; the last problems: no b"
    assert err.value.hint == "write it yourself" and not err.value.catchable
