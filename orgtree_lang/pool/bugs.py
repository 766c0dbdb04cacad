"""Review a bug report: a reviewer that is not the reporter reads it with the skill's history and fixes, modifies
or removes the skill. Removal needs failed calls from the history as evidence; every decision is recorded."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from orgtree_lang.pool.answers import BugDecision, ask_structured, schema_text
from orgtree_lang.pool.history import Call, History
from orgtree_lang.pool.store import BugReport, PoolError, PoolStore
from orgtree_lang.review.errors import ReviewError, SelfReviewError

HISTORY_LIMIT = 50
MAX_REPAIRS = 2

BUG_REVIEWER_SYSTEM = f"""You review a bug report about a skill in a shared pool of skills. You did not write the \
report. Read it together with the skill's documentation and its call history, then decide:
- "fix": the skill is a .pipe module and you can correct it: give the whole corrected module in `module` (it keeps \
the same `main` signature and is checked and reviewed again before it replaces the old one);
- "modify": the skill works but is easy to misuse: give in `usage_note` the clarification of when, where and how to \
use it (it is added to its description);
- "remove": the skill is broken. Only with evidence: list in `evidence` the ids of failed calls in the history that \
match the report. Without such failures a removal is refused.
Explain your decision in `reasoning`, referring to the report and the history. Answer with one JSON object and \
nothing else, matching this JSON schema:

{schema_text(BugDecision)}
"""


def _fresh() -> str:
    return uuid.uuid4().hex


def review_bug(root: Path | str, bug_id: int, *, reviewer, registry, history: History, fix_reviewer=None,
               min_failures: int = 1, new_conversation: Callable[[], str] = _fresh) -> dict:
    """Have `reviewer` decide report `bug_id` in a fresh conversation; apply and record the decision.

    Returns the recorded decision (a dict with `decision`, `outcome` applied|refused, `reasoning`, `detail`).
    Raises SelfReviewError if the conversation would be the reporter's (or one that already reviewed it),
    PoolError for an unknown or already decided report, ModelError from the model.
    """
    store = PoolStore.for_workspace(root)
    try:
        bug = store.bug(bug_id)
        if bug.status != "open":
            raise PoolError(f"bug report #{bug.id} is already decided ({bug.status})",
                            hint=f"`pipe skills bugs {bug.skill}` shows its decisions")
        conversation = new_conversation()
        if conversation == bug.reporter_conversation:
            raise SelfReviewError(f"refused: bug report #{bug.id} would be reviewed in its reporter's conversation "
                                  f"{conversation!r}; a report is never reviewed by the agent that filed it",
                                  hint="every review runs in a fresh conversation")
        if conversation in store.conversations_of(bug.id):
            raise SelfReviewError(f"refused: conversation {conversation!r} already reviewed bug report #{bug.id}; "
                                  "every review needs a fresh one")
        skill = registry.get(bug.skill)
        if skill is None:
            raise PoolError(f"bug report #{bug.id} is about `{bug.skill}`, which is not in the pool",
                            hint="`pipe skills` lists the skills")
        try:
            calls = history(bug.skill, HISTORY_LIMIT)
        except RuntimeError:
            calls = []
        from orgtree_lang.memory.turn import agent_turns
        from orgtree_lang.models.base import Message

        # The bug reviewer is an agent of the workspace: it takes its turn on the scratchpad around its answers.
        reviewer = agent_turns(reviewer, f"bug reviewer of {bug.skill}", f"{bug.skill} {bug.use_case}", root,
                               reviewer=fix_reviewer or reviewer)
        messages = [Message("system", BUG_REVIEWER_SYSTEM),
                    Message("user", _request(bug, skill, calls, Path(root)))]
        decision = ask_structured(reviewer, messages, BugDecision, conversation, f"review of bug report #{bug.id}")
        messages.append(Message("assistant", decision.model_dump_json()))
        common = dict(evidence=decision.evidence, reviewer_model=getattr(reviewer, "name", ""),
                      reviewer_conversation=conversation)
        if decision.decision == "modify":
            seq = store.record_decision(bug, "modify", "applied", decision.reasoning, detail=decision.usage_note,
                                        new_status="modified", note=decision.usage_note, **common)
        elif decision.decision == "remove":
            refusal = _removal_refusal(decision, calls, bug.skill, min_failures)
            if refusal:
                seq = store.record_decision(bug, "remove", "refused", decision.reasoning, detail=refusal, **common)
            else:
                seq = store.record_decision(bug, "remove", "applied", decision.reasoning,
                                            detail=f"removed with {len(decision.evidence)} call(s) as evidence",
                                            new_status="removed", remove=True, **common)
        else:
            outcome, detail = _fix(Path(root), bug, decision, reviewer, fix_reviewer or reviewer, registry,
                                   messages, conversation)
            seq = store.record_decision(bug, "fix", outcome, decision.reasoning, detail=detail,
                                        new_status="fixed" if outcome == "applied" else None, **common)
        return next(row for row in store.decisions(bug.id) if row["seq"] == seq)
    finally:
        store.close()


def _request(bug: BugReport, skill, calls: list[Call], root: Path) -> str:
    from orgtree_lang.pool.learned import LearnedStore, NAMESPACE

    parts = [f"## Bug report #{bug.id} about `{bug.skill}` (filed by {bug.reporter})",
             f"Use case: {bug.use_case}", f"Expected: {bug.expected}", f"Observed: {bug.observed}"]
    if bug.notes:
        parts.append(f"Notes: {bug.notes}")
    parts += ["", "## The skill", skill.signature(), skill.description.strip() or "(no description)",
              f"(from {skill.origin})"]
    if bug.skill.startswith(NAMESPACE + "."):
        module = LearnedStore(root).get(bug.skill.split(".", 1)[1])
        if module is not None:
            parts += ["", "Its module (a fix replaces it):", "```pipe", module.body.rstrip(), "```"]
    parts += ["", f"## Its call history, newest first ({len(calls)} call(s))"]
    parts += [call.line() for call in calls] or ["(no calls recorded)"]
    return "\n".join(parts)


def _removal_refusal(decision: BugDecision, calls: list[Call], skill: str, min_failures: int) -> str:
    """Why a removal is refused ("" when the evidence is enough): cited calls must be failures of this skill."""
    by_id = {call.id: call for call in calls}
    unknown = [e for e in decision.evidence if e not in by_id]
    not_failed = [e for e in decision.evidence if e in by_id and not by_id[e].failed]
    failures = [e for e in decision.evidence if e in by_id and by_id[e].failed]
    if len(failures) >= min_failures:
        return ""
    problems = [f"{len(failures)} failed call(s) of {skill} cited, at least {min_failures} needed"]
    if unknown:
        problems.append(f"not calls of {skill} in its history: {', '.join('#' + e for e in unknown)}")
    if not_failed:
        problems.append(f"calls that did not fail: {', '.join('#' + e for e in not_failed)}")
    if not calls:
        problems.append("the history holds no call of it")
    return "removal refused: " + "; ".join(problems)


def _fix(root: Path, bug: BugReport, decision: BugDecision, author, reviewer, registry, messages: list,
         conversation: str) -> tuple[str, str]:
    """Check, review and save a corrected learned module; ("applied"|"refused", what happened)."""
    from orgtree_lang.pool.learned import NAMESPACE, LearnedStore

    if not bug.skill.startswith(NAMESPACE + "."):
        skill = registry.get(bug.skill)
        return "refused", (f"fix refused: {bug.skill} is a Python skill (from {skill.origin}); a reviewer can fix "
                           f"only .pipe skills ({NAMESPACE}.*). It stays as it is; choose modify or remove")
    learned = LearnedStore(root)
    module = learned.get(bug.skill.split(".", 1)[1])
    if module is None:
        return "refused", f"fix refused: the module of {bug.skill} is missing from {learned.folder}"
    from orgtree_lang.decompose.spec import required_signature
    from orgtree_lang.pool.promote import learned_spec
    from orgtree_lang.review.ledger import ConcernLedger
    from orgtree_lang.review.reviewer import review_loop

    spec = learned_spec(module)
    try:
        body = _valid_fix(decision.module, spec, registry, author, messages, conversation)
    except PoolError as err:
        return "refused", f"fix refused: {err.message}"
    spec_text = (f"The skill {bug.skill}:\n{module.doc}\n\nIt must declare exactly:\n{required_signature(spec)}\n\n"
                 f"It must no longer show bug #{bug.id}: when {bug.use_case}, expected {bug.expected}, "
                 f"observed {bug.observed}")

    def revise(artifact: str, concerns) -> tuple[str, dict[str, str]]:
        from orgtree_lang.models.base import Message

        listing = "\n".join(f"- {c.id}: {c.evidence} Suggested: {c.suggested_fix}" for c in concerns)
        messages.append(Message("user", f"A reviewer raised these concerns about your fix:\n{listing}\n"
                                        "Reply with the revised module in one ```pipe block."))
        answer = author.complete(messages, conversation_id=conversation).text
        messages.append(Message("assistant", answer))
        return _valid_fix(answer, spec, registry, author, messages, conversation), \
            {c.id: "resolved: revised" for c in concerns}

    try:
        with ConcernLedger.for_workspace(root) as ledger:
            outcome = review_loop(f"skill-fix:{bug.skill}:bug{bug.id}", spec_text, body, author=author,
                                  reviewer=reviewer, revise=revise, ledger=ledger, max_rounds=2,
                                  author_conversation=conversation)
    except (ReviewError, PoolError) as err:
        return "refused", f"fix refused: the corrected module was not accepted: {err}"
    learned.save(module.name, outcome.artifact, module.doc,
                 {**{k: v for k, v in module.provenance.items() if k not in ("name", "doc")},
                  "fixed-for-bug": str(bug.id), "fix-review-rounds": str(outcome.rounds)}, registry)
    return "applied", f"replaced {module.path.name} after {outcome.rounds} review round(s); the old one is in history/"


def _valid_fix(answer: str, spec, registry, author, messages: list, conversation: str) -> str:
    """The corrected module once it passes check and signature validation; repairs go back to the fixer."""
    from orgtree_lang.decompose.extract import ExtractError, extract_module
    from orgtree_lang.decompose.validate import validate_module
    from orgtree_lang.models.base import Message

    problems: list[str] = []
    for attempt in range(MAX_REPAIRS + 1):
        if attempt:
            messages.append(Message("user", "The module is not accepted yet:\n" + "\n\n".join(problems) +
                                    "\nReply with the corrected module in one ```pipe block."))
            answer = author.complete(messages, conversation_id=conversation).text
            messages.append(Message("assistant", answer))
        try:
            body = extract_module(answer)
        except ExtractError as err:
            problems = [str(err)]
            continue
        result = validate_module(body, spec, registry, f"{spec.name}.pipe")
        if result.ok:
            return body
        problems = result.problems
    raise PoolError(f"no valid corrected module after {MAX_REPAIRS + 1} attempts: "
                    + " | ".join(p.splitlines()[0] for p in problems))
