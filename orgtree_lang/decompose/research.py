"""The author's "needs research" answer (kept in state.db) and what answers it: the research child's findings,
reviewed as insights, for the author's next attempt."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path

_JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.S)


INSTRUCTIONS = """\
If the step cannot be written without facts you do not have (an unknown API, data format or rule), do not
guess: answer instead with one ```json block {"needs_research": {"reasons": ["..."], "questions": ["..."]}}."""


@dataclass
class ResearchNeed:
    reasons: list[str]
    questions: list[str]


def needs_research(answer: str) -> ResearchNeed | None:
    """The structured "needs research" answer in `answer`, if that is what it is."""
    for body in _JSON_FENCE.findall(answer) or [answer]:
        try:
            data = json.loads(body.strip())
        except json.JSONDecodeError:
            continue
        need = data.get("needs_research") if isinstance(data, dict) else None
        if isinstance(need, dict):
            reasons = [str(r) for r in need.get("reasons", []) if str(r).strip()]
            questions = [str(q) for q in need.get("questions", []) if str(q).strip()]
            return ResearchNeed(reasons or ["(no reason given)"], questions)
    return None


def record_need(workspace: Path | str, block: str, spec_hash: str, parent: str, need: ResearchNeed, model: str,
                conversation: str) -> None:
    db = open_state_db(state_db_path(workspace))
    try:
        with Transaction(db):
            db.execute("INSERT INTO research_needs (block, spec_hash, parent, reasons, questions, model, "
                       "conversation, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (block, spec_hash, parent, json.dumps(need.reasons), json.dumps(need.questions), model,
                        conversation, time.time()))
    finally:
        db.close()


def recorded_needs(workspace: Path | str) -> list[dict]:
    """Every recorded need, oldest first."""
    db = open_state_db(state_db_path(workspace))
    try:
        rows = db.execute("SELECT * FROM research_needs ORDER BY seq").fetchall()
        return [{**dict(r), "reasons": json.loads(r["reasons"]), "questions": json.loads(r["questions"])}
                for r in rows]
    finally:
        db.close()


# ---- answering a need: the research child -------------------------------------------------------------------

RESEARCH_MODULE = "research.pipe"  # in orgtree_lang.stdlib: readable, and replaceable by [decompose] research_module


def research_source(path: str = "") -> tuple[str, str]:
    """The research module's (file name, source): `path` when given, else the stdlib's research.pipe."""
    if path:
        return path, Path(path).read_text(encoding="utf-8")
    from importlib import resources

    return RESEARCH_MODULE, resources.files("orgtree_lang.stdlib").joinpath(RESEARCH_MODULE).read_text(
        encoding="utf-8")


def web_allowed(config_path) -> bool:
    """Whether research may search the web: `[web] search` names a provider other than the workspace memory
    (which the memory search covers already)."""
    from orgtree_lang.runtime.config import ConfigError, config_section

    try:
        return config_section("web", config_path, types={"search": str}).get("search", "workspace") != "workspace"
    except ConfigError:
        return False


@dataclass
class Findings:
    """What research gave the author: the accepted findings, how many the reviewer rejected, and notes."""

    accepted: list[str]
    rejected: list[str]
    notes: list[str]

    def message(self, need: ResearchNeed, what: str = "module") -> str:
        """The author's next request: the questions, the reviewed findings, what could not be used, and the ask for
        the `what` it was writing (the module, or the design of the data-driven flow)."""
        lines = ["Research was done for your questions:", *(f"- {q}" for q in need.questions or need.reasons), "",
                 "Findings an independent reviewer accepted (now in the workspace's insights):"]
        lines += [f"- {text}" for text in self.accepted] or ["- (none)"]
        if self.rejected:
            lines += ["", f"{len(self.rejected)} finding(s) were rejected by the reviewer and are not given here."]
        lines += [f"Note: {note}" for note in self.notes]
        lines += ["", f"Now write the {what} in one ```pipe block. If it still cannot be written, say so with a "
                      "needs_research answer naming what is still missing."]
        return "\n".join(lines)


def propose_findings(workspace: Path, result, block_name: str, reviewer) -> Findings:
    """Each finding of the research child's `result` (a Research record) proposed as an insight and reviewed."""
    from orgtree_lang.memory.insights import InsightPool

    accepted, rejected = [], []
    findings = list(result.fields["findings"])
    with InsightPool.for_workspace(workspace) as pool:
        for finding in findings:
            fields = finding.fields
            text = f"{fields['question']} {fields['answer']}"
            proposal = pool.add(text, f"found by research for block `{block_name}` in {fields['source']}",
                                author=f"research for block `{block_name}`", tags=["research", block_name],
                                reviewer=reviewer)
            (accepted if proposal.status == "accepted" else rejected).append(f"{text} (source: {fields['source']})")
    return Findings(accepted, rejected, [str(note) for note in result.fields["notes"]])
