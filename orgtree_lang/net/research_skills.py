"""The research agent's skills: questions in, a plan out (research.plan); a text and a question in, whether it answers
it and which links to follow out (research.judge); an empirical question in, code to run in the sandbox out
(research.experiment); a task in, the agent's read of the scratchpad out (research.read, a journaled step of its own
that the others take as `read=`); and questions in, findings out (research.ask: stdlib/research.pipe, which the
others are the steps of, as one skill a program calls).

With a model configured for the run each is the author model's answer, taken as the agent `research agent`'s turn
on the scratchpad (memory/turn.py: it reads the pad and the relevant insights first, writes its note after, and the
insights it offers go to the run's reviewer); every call is metered and, as a skill call, journaled. A text is read
through the context tree (`ctx.fit`'s view, a quarter of the model's window), so a page of any length fits. With
no model each step has an offline fallback: every question is a lookup (unless it carries its own code), and a
text's answer is its line sharing the most words with the question.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

from orgtree_lang.memory.skills import summarizer_of
from orgtree_lang.memory.summarize import content_words
from orgtree_lang.net.research_ask import run_research
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill

AGENT = "research agent"
READ_SHARE = 0.25  # of the reading model's window, for the text it judges (the seed's share per level)
FOLLOW = 3  # links a judgment may ask to follow, at most
_CODE = re.compile(r"```(python|sh|bash)[ \t]*\n(.*?)```", re.S)
_WORDS = re.compile(r"[a-z0-9_]{4,}")


@functools.cache
def _schemas() -> dict[str, type]:
    """The answers' pydantic schemas, built on first use (pydantic is not imported by `pipe check`)."""
    from pydantic import BaseModel, Field

    class PlannedQuestion(BaseModel):
        question: str
        kind: str = Field(description='"lookup" (read about it) or "empirical" (run code to find out)')
        queries: list[str] = Field(description="searches to try, best first")

    class Plan(BaseModel):
        plan: list[PlannedQuestion]

    class Judgment(BaseModel):
        relevant: bool = Field(description="true only if the text answers the question, at least in part")
        answer: str = Field(description="the answer as the text gives it, with its numbers and names; empty if none")
        follow: list[str] = Field(default_factory=list, description="links of the text worth reading next")

    class Experiment(BaseModel):
        language: str = Field(description="python, sh or bash")
        source: str = Field(description="a program that prints what answers the question")

    return {"plan": Plan, "judgment": Judgment, "experiment": Experiment}


PLAN_PROMPT = """You plan research for an agent that must write a program. For each question decide whether it is a
lookup (the answer is written somewhere: documentation, notes, data) or empirical (it is found by running code: a
measurement, a computation, a behaviour of a tool), and give up to three search queries for it, best first.
Answer with one JSON object: {"plan": [{"question": "...", "kind": "lookup" or "empirical", "queries": ["..."]}]}"""

JUDGE_PROMPT = """You read a source for a research question and judge it. Answer with one JSON object:
{"relevant": true or false, "answer": "...", "follow": ["url", ...]}. "relevant" only if the source answers the
question at least in part; "answer" states the answer as the source gives it (numbers, names, paths), nothing you
did not read; "follow" lists at most three of the source's links that likely hold the answer, when it does not."""

EXPERIMENT_PROMPT = """You answer an empirical question by an experiment: write a short program that prints what
answers it. It runs in a sandbox with no network and a private scratch folder, with Python 3 and the usual shell
tools. Answer with one JSON object: {"language": "python", "source": "..."}"""


def _model(ctx: SkillContext, task: str, read: dict[str, Any] | None = None):
    """The run's author model as the research agent (its turn taken around each answer), metered; None offline.

    `read` is what research.read returned for this step (a journaled skill call of its own): the turn uses it
    instead of reading the pad again. The note and the insights are keyed by the call's idempotency key, so a
    resumed call that was in flight writes no second note and proposes no insight twice."""
    models = getattr(ctx, "models", None)
    if models is None or not getattr(models, "configured", False):
        return None
    from orgtree_lang.memory.turn import agent_turns
    from orgtree_lang.models.metered import MeteredModel

    model = models.author()
    if ctx.spend is not None:
        model = MeteredModel(model, spend=ctx.spend, what="research")
    try:
        reviewer = models.reviewer()
    except Exception:  # no reviewer model: the agent's insights are not taken
        reviewer = None
    key = ctx.idempotency_key

    def journal(name: str, execute):
        if name == f"{AGENT}: read" and read and "seed" in read:
            return dict(read)
        return execute(f"{key}:{name}" if key else None)

    return agent_turns(model, AGENT, task, ctx.workspace.root, reviewer=reviewer, journal=journal)


@skill("research.read", slow=True)
def read(ctx: SkillContext, task: str) -> dict[str, Any]:
    """What the research agent reads before a step on `task`: the scratchpad and the insights relevant to it, within
    their shares of its model's window (docs/scratchpad.md, "An agent's turn").

    A skill call of its own, so a durable run journals the read: a resume or replay does not read again (nor ask a
    summarizer), and the step it is passed to (`read=` of research.plan, research.judge, research.experiment)
    sees what was read then. Without it those steps read for themselves.

    Args:
        task: What the agent is about to work on (the question, or the questions being planned).

    Returns:
        The read (`seed`, the text added to the agent's instructions, and what it was made of); an empty dict when
        no model is configured (offline there is no turn).
    """
    from orgtree_lang.memory.turn import read_turn

    agent = _model(ctx, task)
    if agent is None:
        return {}
    return read_turn(agent.seat, agent.model.name, agent.model)


def _ask(model, system: str, prompt: str, schema: str, what: str):
    import uuid

    from orgtree_lang.models.base import Message, ModelError

    try:
        return model.complete([Message("system", system), Message("user", prompt)], schema=_schemas()[schema],
                              conversation_id=uuid.uuid4().hex).parsed
    except ModelError as err:
        raise SkillError(f"{what}: {err.message}", hint=err.hint) from None


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


@skill("research.plan", slow=True)
def plan(ctx: SkillContext, questions: list[str], read: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A research plan for each question: whether it is a lookup or empirical, and the searches to try.

    With a model configured the run's author model plans, as the research agent; without one every question is a
    lookup searched as it is written, except one that carries its own ```python (or sh) block, which is empirical.

    Args:
        questions: The questions to research.
        read: What research.read returned for them (the agent's journaled read); default: read now.

    Returns:
        One dict per question, in order: `question`, `kind` ("lookup" or "empirical") and `queries` (best first).
    """
    questions = [q for q in questions if q.strip()]
    model = _model(ctx, " ".join(questions), read)
    if model is not None and questions:
        asked = _ask(model, PLAN_PROMPT, "\n".join(f"- {q}" for q in questions), "plan", "research.plan")
        by_question = {p.question.strip(): p for p in asked.plan}
        planned = []
        for index, question in enumerate(questions):
            item = by_question.get(question.strip()) or (asked.plan[index] if index < len(asked.plan) else None)
            kind = item.kind if item is not None and item.kind in ("lookup", "empirical") else "lookup"
            queries = [q for q in (item.queries if item is not None else []) if q.strip()][:3] or [question]
            planned.append({"question": question, "kind": kind, "queries": queries})
        return planned
    return [{"question": q, "kind": "empirical" if _CODE.search(q) else "lookup", "queries": [q]} for q in questions]


@skill("research.judge", slow=True)
def judge(ctx: SkillContext, question: str, text: str, source: str, links: list[str] | None = None,
          kind: str = "text", read: dict[str, Any] | None = None) -> dict[str, Any]:
    """Whether a text (a memory passage, a web page, an experiment's output) answers a research question.

    With a model configured the research agent reads the text through the context tree (a quarter of its window:
    a long page is summarized, its facts kept) and answers; without one the answer is the text's line sharing the
    most content words (of four letters or more) with the question, and the links to follow those sharing a word with it.

    Args:
        question: The research question.
        text: What was read.
        source: Where it came from (a memory node, a URL, an experiment), quoted back to the model.
        links: The text's links (absolute URLs) the research may follow next.
        kind: "text" (read about the question) or "output" (what an experiment written for it printed; offline
            its whole output is the answer).
        read: What research.read returned for the question (the agent's journaled read); default: read now.

    Returns:
        A dict with `relevant` (bool), `answer` (str, "" when none) and `follow` (up to three of `links`).
    """
    links = [link for link in (links or []) if link.strip()]
    model = _model(ctx, question, read)
    if kind not in ("text", "output"):
        raise SkillError(f"research.judge: kind must be \"text\" or \"output\", got {kind!r}")
    if model is None or not text.strip():
        if kind == "output":
            return {"relevant": bool(text.strip()), "answer": text.strip()[-600:], "follow": []}
        return _judged_offline(question, text, links)
    from orgtree_lang.memory.memory import Memory

    with Memory(ctx.workspace.root, vectors=False) as memory:
        document = memory.add(text, name=f"research: {source}"[:200], tags=["research"])
        view = memory.fit([document], model, READ_SHARE, summarizer=summarizer_of(ctx, "research.judge"))
    listed = "\n".join(f"- {link}" for link in links[:40])
    prompt = (f"Question: {question}\n\nSource: {source}\n\n{view.text}"
              + (f"\n\nLinks of the source:\n{listed}" if listed else ""))
    verdict = _ask(model, JUDGE_PROMPT, prompt, "judgment", "research.judge")
    follow = [link for link in verdict.follow if link in links][:FOLLOW]
    answer = verdict.answer.strip() if verdict.relevant else ""
    return {"relevant": bool(answer), "answer": answer, "follow": follow}


def _judged_offline(question: str, text: str, links: list[str]) -> dict[str, Any]:
    wanted = {word for word in content_words(question) if len(word) >= 4}
    best, best_score = "", 0
    for line in text.split("\n"):
        score = sum(1 for word in wanted if word in line.lower())
        if score > best_score:
            best, best_score = line.strip(), score
    follow = [link for link in links if wanted & _words(link.replace("/", " ").replace("-", " "))][:FOLLOW]
    return {"relevant": bool(best), "answer": best[:600], "follow": follow}


@skill("research.experiment", slow=True)
def experiment(ctx: SkillContext, question: str, known: str = "",
               read: dict[str, Any] | None = None) -> dict[str, str]:
    """The code of an experiment that answers an empirical question when run with code.run.

    With a model configured the research agent writes it; without one the question's own ```python (or sh) block
    is the experiment, and a question with none gets an empty source (no experiment).

    Args:
        question: The empirical question.
        known: What the research found so far, for the agent to build on.
        read: What research.read returned for the question (the agent's journaled read); default: read now.

    Returns:
        A dict with `language` (python, sh or bash) and `source` ("" when no experiment can be written).
    """
    model = _model(ctx, question, read)
    if model is None:
        match = _CODE.search(question)
        return {"language": match.group(1), "source": match.group(2)} if match else {"language": "python",
                                                                                       "source": ""}
    prompt = f"Question: {question}" + (f"\n\nWhat is known so far:\n{known}" if known.strip() else "")
    written = _ask(model, EXPERIMENT_PROMPT, prompt, "experiment", "research.experiment")
    language = written.language if written.language in ("python", "sh", "bash") else "python"
    return {"language": language, "source": written.source}


def ask_skill(registry) -> Callable:
    """research.ask for `registry` (stdlib.register adds it last): its calls compile the research module with the
    skills of that registry, which the module's `use` lines name."""

    @skill("research.ask", slow=True)
    def ask(ctx: SkillContext, questions: list[str], web: bool = True, max_reads: int = 8) -> dict[str, Any]:
        """Research questions with the research agent and answer with findings that cite their sources.

        For each question the agent plans (a lookup or an experiment), searches the workspace memory and, with
        `web`, the web provider of `[web]` (pages fetched within `[http] allow`), reads what it finds with the run's
        model (offline: by word overlap), runs an experiment in the sandbox for an empirical question, and stops when
        a source answers it or `max_reads` sources were read. Each finding is proposed as an insight and reviewed by
        the run's review model before it joins the pool. The call is one journaled step of a durable run (a replay
        asks no model), its model calls count against the run's --max-tokens / --max-cost, and the agent takes its
        turns on the scratchpad as `research agent`.

        Args:
            questions: The questions to research.
            web: Search the web provider too, when `[web] search` names one (else the workspace memory only).
            max_reads: Sources read per question before it is given up.

        Returns:
            A dict with `findings` (one dict per answered question: `question`, `answer`, `source` (a URL, a
            memory node or an experiment) and `insight`, the review's decision: accepted, rejected or "not
            proposed: why") and `notes` (what could not be found or used).
        """
        return run_research(ctx, registry, questions, web, max_reads)

    return ask
