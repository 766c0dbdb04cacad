"""Critical review with scripted models: fresh reviewer conversations, the concern ledger, scope fixed by the spec."""

from __future__ import annotations

import json
import sqlite3

import pytest

from orgtree_lang.models import Message
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.review import (VERDICT_SCHEMA, Concern, ConcernLedger, ReviewError, SelfReviewError, Verdict,
                                 review_loop)
from orgtree_lang.runtime.state_db import state_db_path

pytestmark = pytest.mark.fast

SPEC = "pipeline summarize(text: str) -> str\nReturn a summary of `text` of at most 3 sentences."
V1 = "pipeline summarize(text: str) -> str:\n    return text\n"
V2 = "pipeline summarize(text: str) -> str:\n    return text.first_sentences(3)\n"


def concern(cid, severity="blocking", basis="at most 3 sentences", evidence="returns the whole text",
            fix="truncate", **extra):
    return {"id": cid, "severity": severity, "spec_basis": basis, "evidence": evidence, "suggested_fix": fix,
            **extra}


def verdict(*concerns, summary=""):
    return json.dumps({"concerns": list(concerns), "summary": summary})


def scripted(tmp_path, name, rules, role):
    path = tmp_path / name
    path.write_text(json.dumps({"rules": rules}) if name.endswith(".json") else _yaml(rules))
    return ScriptedModel.from_file(path, role=role)


def _yaml(rules):
    import yaml

    return yaml.safe_dump({"rules": rules})


def reviewer_model(tmp_path, replies, name="reviewer.yaml"):
    return scripted(tmp_path, name, [{"role": "reviewer", "replies": replies}], "reviewer")


def author_model(tmp_path, replies, name="author.json"):
    """An author that answers revision requests with JSON {"artifact": ..., "responses": {...}}."""
    return scripted(tmp_path, name, [{"role": "author", "match": {"contains": "Revise"},
                                      "replies": [json.dumps(r) for r in replies]}], "author")


def revise_with(author, seen=None):
    def revise(artifact, concerns):
        if seen is not None:
            seen.append([c.id for c in concerns])
        listing = "\n".join(f"- {c.id}: {c.evidence}" for c in concerns)
        done = author.complete([Message("user", f"Revise this artifact:\n{artifact}\nConcerns:\n{listing}")],
                               conversation_id="author-conv")
        answer = json.loads(done.text)
        return answer["artifact"], answer["responses"]
    return revise


@pytest.fixture
def ledger(tmp_path):
    with ConcernLedger.for_workspace(tmp_path / "ws") as led:
        yield led


def run(ledger, author, reviewer, revise, **kw):
    kw.setdefault("author_conversation", "author-conv")
    return review_loop("mod/summarize", SPEC, V1, author=author, reviewer=reviewer, revise=revise, ledger=ledger, **kw)


def no_revise(artifact, concerns):  # pragma: no cover - must not be called
    raise AssertionError(f"revise called with {concerns}")


# -- the schema and the ledger ------------------------------------------------------------------------------

def test_verdict_schema_is_shown_and_validates():
    schema = json.loads(VERDICT_SCHEMA)
    assert set(schema["$defs"]["Concern"]["required"]) == {"id", "severity", "spec_basis", "evidence",
                                                           "suggested_fix"}
    assert Verdict.model_validate_json(verdict(concern("c1"))).concerns[0].severity == "blocking"
    with pytest.raises(ValueError, match="used twice"):
        Verdict.model_validate_json(verdict(concern("c1"), concern("c1")))
    with pytest.raises(ValueError):
        Verdict.model_validate_json(verdict(concern("c1", severity="fatal")))


def test_ledger_lives_in_state_db_with_wal(tmp_path, ledger):
    assert ledger.path == state_db_path(tmp_path / "ws") == tmp_path / "ws" / ".orgtree" / "state.db"
    assert ledger.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ledger.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    # The file is shared: another table there is left alone, and a second ledger sees the same rows.
    other = sqlite3.connect(ledger.path)
    other.execute("CREATE TABLE IF NOT EXISTS modules (name TEXT)")
    other.commit()
    ledger.raise_concern("s", 1, Concern(**concern("c1")), "a", "r1")
    with ConcernLedger(ledger.path) as again:
        assert [r["concern_id"] for r in again.history("s")] == ["c1"]
    assert other.execute("SELECT COUNT(*) FROM modules").fetchone()[0] == 0
    with pytest.raises(sqlite3.IntegrityError):
        other.execute("UPDATE concerns SET status = 'maybe'")
    other.close()


def test_ledger_transitions(ledger):
    assert ledger.raise_concern("s", 1, Concern(**concern("c1")), "a", "r1") == "open"
    assert ledger.raise_concern("s", 1, Concern(**concern("c2", basis="")), "a", "r1") == "out_of_scope"
    assert ledger.raise_concern("s", 1, Concern(**concern("c3", severity="minor")), "a", "r1") == "open"
    assert [r["concern_id"] for r in ledger.open_blocking("s")] == ["c1"]
    ledger.resolve("s", "c1", "truncated")
    with pytest.raises(ReviewError, match="needs a rationale"):
        ledger.reject("s", "c3", "  ")
    ledger.reject("s", "c3", "style only")
    with pytest.raises(ReviewError, match="not open"):
        ledger.resolve("s", "c1", "again")
    with pytest.raises(ReviewError, match="no concern 'zz'"):
        ledger.resolve("s", "zz", "?")
    assert ledger.counts("s") == {"open": 0, "resolved": 1, "rejected": 1, "out_of_scope": 1}
    # Re-raised while settled: stays as is, unless the reviewer says it is still present.
    assert ledger.raise_concern("s", 2, Concern(**concern("c1")), "a", "r2") == "resolved"
    assert ledger.raise_concern("s", 2, Concern(**concern("c2", basis="")), "a", "r2") == "out_of_scope"
    assert ledger.raise_concern("s", 3, Concern(**concern("c1", still_present=True)), "a", "r3") == "open"
    row = {r["concern_id"]: r for r in ledger.history("s")}["c1"]
    assert (row["status"], row["round"], row["reviewer_conversation"], row["rationale"]) == ("open", 3, "r3", "")
    assert [e["event"] for e in ledger.events("s") if e["concern_id"] == "c1"] == [
        "raised", "resolved", "raised_again_unchanged", "reopened"]
    assert {r["rationale"] for r in ledger.history("s") if r["status"] == "out_of_scope"} == {
        "the spec does not require this"}
    with pytest.raises(SelfReviewError):
        ledger.raise_concern("s", 3, Concern(**concern("c9")), "same", "same")
    assert ledger.counts("other") == {"open": 0, "resolved": 0, "rejected": 0, "out_of_scope": 0}


# -- the loop -----------------------------------------------------------------------------------------------

def test_accepted_first_round(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(summary="fine")])
    author = author_model(tmp_path, [{}])
    out = run(ledger, author, reviewer, no_revise)
    assert (out.accepted, out.rounds, out.artifact, out.summary) == (True, 1, V1, "fine")
    assert out.counts == {"open": 0, "resolved": 0, "rejected": 0, "out_of_scope": 0}
    assert out.author_conversation == "author-conv" and len(out.reviewer_conversations) == 1
    assert out.reviewer_model.startswith("scripted:") and reviewer.calls == 1 and author.calls == 0
    [row] = ledger.rounds("mod/summarize")
    assert row["reviewer_conversation"] == out.reviewer_conversations[0] != "author-conv"


def test_blocking_concern_resolved_after_revision(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1")), verdict()])
    author = author_model(tmp_path, [{"artifact": V2, "responses": {"c1": "resolved: keeps 3 sentences"}}])
    seen = []
    out = run(ledger, author, reviewer, revise_with(author, seen))
    assert (out.accepted, out.rounds, out.artifact) == (True, 2, V2)
    assert seen == [["c1"]]
    [row] = ledger.history("mod/summarize")
    assert (row["status"], row["rationale"], row["round"]) == ("resolved", "keeps 3 sentences", 1)
    assert out.counts["resolved"] == 1


def test_reviewer_sees_only_spec_artifact_and_open_concerns(tmp_path, ledger):
    class Spy(ScriptedModel):
        def _complete(self, messages, *, schema, conversation_id):
            requests.append((messages, conversation_id))
            return super()._complete(messages, schema=schema, conversation_id=conversation_id)
    requests = []
    base = reviewer_model(tmp_path, [verdict(concern("c1"), concern("m1", severity="minor")), verdict()])
    reviewer = Spy(base.rules, base.name, "reviewer")
    author = author_model(tmp_path, [{"artifact": V2, "responses": {"c1": "resolved: SECRET-AUTHOR-NOTE"}}])
    run(ledger, author, reviewer, revise_with(author))
    (first, conv1), (second, conv2) = requests
    assert [m.role for m in first] == ["system", "user"] and VERDICT_SCHEMA in first[0].content
    assert SPEC in first[1].content and V1 in first[1].content
    assert V2 in second[1].content and "Revise" not in second[1].content
    assert "SECRET-AUTHOR-NOTE" not in "".join(m.content for m in second)
    # Still open in round 2: the minor concern (shown); the resolved one is only named as a settled id.
    assert '"id": "m1"' in second[1].content and '"id": "c1"' not in second[1].content
    assert "already settled" in second[1].content
    assert len({conv1, conv2, "author-conv"}) == 3
    # m1 was not repeated in round 2, so it is taken as fixed.
    assert {r["concern_id"]: r["status"] for r in ledger.history("mod/summarize")} == {"c1": "resolved",
                                                                                       "m1": "resolved"}


def test_out_of_scope_concern_is_recorded_and_not_sent_to_revise(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1"), concern("x1", basis="", evidence="no caching")),
                                         verdict()])
    author = author_model(tmp_path, [{"artifact": V2, "responses": {"c1": "resolved: fixed", "x1": "resolved: ?"}}])
    seen = []
    out = run(ledger, author, reviewer, revise_with(author, seen))
    assert out.accepted and seen == [["c1"]]
    rows = {r["concern_id"]: r for r in ledger.history("mod/summarize")}
    assert (rows["x1"]["status"], rows["x1"]["rationale"]) == ("out_of_scope", "the spec does not require this")
    assert out.counts == {"open": 0, "resolved": 1, "rejected": 0, "out_of_scope": 1}


def test_only_out_of_scope_blocking_concerns_accept_at_once(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("x1", basis=""))])
    out = run(ledger, author_model(tmp_path, [{}]), reviewer, no_revise)
    assert out.accepted and out.rounds == 1 and out.counts["out_of_scope"] == 1


def test_rejected_with_rationale(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1")), verdict()])
    author = author_model(tmp_path, [{"artifact": V1, "responses": {"c1": "rejected: the input is one sentence"}}])
    out = run(ledger, author, reviewer, revise_with(author))
    assert out.accepted and out.rounds == 2
    [row] = ledger.history("mod/summarize")
    assert (row["status"], row["rationale"]) == ("rejected", "the input is one sentence")


def test_rejected_concern_reopened_when_still_present(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1")), verdict(concern("c1", still_present=True)),
                                         verdict()])
    author = author_model(tmp_path, [{"artifact": V1, "responses": {"c1": "rejected: disagree"}},
                                     {"artifact": V2, "responses": {"c1": "resolved: truncates now"}}])
    out = run(ledger, author, reviewer, revise_with(author))
    assert out.accepted and out.rounds == 3
    [row] = ledger.history("mod/summarize")
    assert (row["status"], row["round"], row["reviewer_conversation"]) == ("resolved", 2, out.reviewer_conversations[1])
    assert [e["event"] for e in ledger.events("mod/summarize")] == ["raised", "rejected", "reopened", "resolved"]


def test_max_rounds_fails_clearly_and_keeps_the_ledger(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1"))])  # repeats forever
    author = author_model(tmp_path, [{"artifact": V1, "responses": {}}])  # answers nothing: c1 stays open
    with pytest.raises(ReviewError, match=r"not accepted after 3 round\(s\): 1 blocking concern\(s\) still "
                                          r"open: c1 \(at most 3 sentences\): returns the whole text") as err:
        run(ledger, author, reviewer, revise_with(author))
    assert [c["concern_id"] for c in err.value.open_concerns] == ["c1"]
    assert err.value.outcome.accepted is False and err.value.outcome.rounds == 3
    assert reviewer.calls == 3 and author.calls == 2
    [row] = ledger.history("mod/summarize")
    assert (row["status"], row["round"]) == ("open", 3)
    assert len(ledger.rounds("mod/summarize")) == 3


def test_malformed_reviewer_json_then_valid(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, ["not json at all", verdict(concern("c1", severity="bogus")), verdict()])
    # first round: malformed, retry also malformed -> error; so use a separate file for the good case
    good = reviewer_model(tmp_path, ['{"concerns": [{"id": "c1"}]}', verdict()], name="good.yaml")
    out = run(ledger, author_model(tmp_path, [{}]), good, no_revise)
    assert out.accepted and out.rounds == 1 and good.calls == 2
    with pytest.raises(ReviewError, match="malformed concerns twice") as err:
        run(ledger, author_model(tmp_path, [{}]), reviewer, no_revise)
    assert "did not return valid JSON" in str(err.value) and "does not fit Verdict" in str(err.value)


def test_retry_shows_the_validation_error_in_the_same_conversation(tmp_path, ledger):
    path = tmp_path / "r.yaml"
    path.write_text(_yaml([{"role": "reviewer", "match": {"contains": "could not be used"}, "reply": verdict()},
                           {"role": "reviewer", "reply": "```json\n{\"concerns\": \"none\"}\n```"}]))
    reviewer = ScriptedModel.from_file(path, role="reviewer")
    out = run(ledger, author_model(tmp_path, [{}]), reviewer, no_revise)
    assert out.accepted and reviewer.calls == 2


def test_malformed_twice_keeps_what_was_recorded(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1")), "{", "[]"])
    author = author_model(tmp_path, [{"artifact": V2, "responses": {"c1": "resolved: done"}}])
    with pytest.raises(ReviewError, match="round 2: the reviewer .* returned malformed concerns twice"):
        run(ledger, author, reviewer, revise_with(author))
    [row] = ledger.history("mod/summarize")
    assert row["status"] == "resolved"
    assert len(ledger.rounds("mod/summarize")) == 1


def test_self_review_refused(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict()])
    with pytest.raises(SelfReviewError, match="author's conversation 'author-conv'"):
        run(ledger, author_model(tmp_path, [{}]), reviewer, no_revise,
            new_reviewer_conversation=lambda: "author-conv")
    assert reviewer.calls == 0 and ledger.rounds("mod/summarize") == []


def test_a_reviewer_conversation_is_never_reused(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1")), verdict()])
    author = author_model(tmp_path, [{"artifact": V2, "responses": {"c1": "resolved: ok"}}])
    with pytest.raises(SelfReviewError, match="reuse reviewer conversation 'rev'"):
        run(ledger, author, reviewer, revise_with(author), new_reviewer_conversation=lambda: "rev")


def test_same_model_may_review_in_a_fresh_conversation(tmp_path, ledger):
    path = tmp_path / "both.yaml"
    path.write_text(_yaml([{"match": {"contains": "Review round"}, "replies": [verdict(concern("c1")), verdict()]},
                           {"match": {"contains": "Revise"},
                            "reply": json.dumps({"artifact": V2, "responses": {"c1": "resolved: ok"}})}]))
    model = ScriptedModel.from_file(path)
    out = run(ledger, model, model, revise_with(model))
    assert out.accepted and "author-conv" not in out.reviewer_conversations


def test_every_round_uses_a_distinct_fresh_conversation(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1")), verdict(concern("c2", evidence="empty input")),
                                         verdict()])
    author = author_model(tmp_path, [{"artifact": V2, "responses": {"c1": "resolved: a"}},
                                     {"artifact": V2 + "# handles empty\n", "responses": {"c2": "resolved: b"}}])
    out = run(ledger, author, reviewer, revise_with(author))
    assert out.accepted and out.rounds == 3
    rounds = ledger.rounds("mod/summarize")
    convs = [r["reviewer_conversation"] for r in rounds]
    assert convs == out.reviewer_conversations and len(set(convs)) == 3
    assert all(r["author_conversation"] == "author-conv" for r in rounds)
    rows = ledger.history("mod/summarize")
    assert len({r["reviewer_conversation"] for r in rows}) == 2
    assert all(r["reviewer_conversation"] != r["author_conversation"] == "author-conv" for r in rows)
    # A later review of the same subject continues the round numbers and never reuses a conversation.
    again = run(ledger, author, reviewer_model(tmp_path, [verdict()], name="r2.yaml"), no_revise)
    assert ledger.rounds("mod/summarize")[-1]["round"] == 4
    assert not set(again.reviewer_conversations) & set(convs)


def test_generated_author_conversation(tmp_path, ledger):
    out = review_loop("s", SPEC, V1, author=author_model(tmp_path, [{}]),
                      reviewer=reviewer_model(tmp_path, [verdict()]), revise=no_revise, ledger=ledger)
    assert out.author_conversation and out.author_conversation not in out.reviewer_conversations


def test_bad_author_answers_are_clear(tmp_path, ledger):
    reviewer = reviewer_model(tmp_path, [verdict(concern("c1")), verdict()])
    with pytest.raises(ReviewError, match="must be 'resolved: RATIONALE' or 'rejected: RATIONALE', got 'fixed'"):
        run(ledger, None, reviewer, lambda a, c: (V2, {"c1": "fixed"}))
    assert ledger.open_blocking("mod/summarize")[0]["concern_id"] == "c1"
    with pytest.raises(ReviewError, match="needs a rationale"):
        run(ledger, None, reviewer_model(tmp_path, [verdict(concern("c1"))], name="r3.yaml"),
            lambda a, c: (V2, {"c1": "rejected"}))
    with pytest.raises(ReviewError, match="max_rounds must be at least 1"):
        run(ledger, None, reviewer, no_revise, max_rounds=0)


def test_the_verdict_example_in_docs_review_md_validates():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "review.md").read_text(encoding="utf-8")
    example = doc.split("```json\n", 1)[1].split("```", 1)[0]
    assert Verdict.model_validate_json(example).concerns[0].id == "c1"
