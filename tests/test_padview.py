"""pad.context: the newest notes verbatim in 5% of the window, the rest summarized in at most 10%, cached."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orgtree_lang.memory import BudgetError, Memory
from orgtree_lang.memory.padview import BLOCK_NOTES, SUMMARY_HEADING, pad_context
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.memory.tokenizer import Tokenizer

WORDS = ("parser lexer grammar token budget summary cache review insight lock turn plan agent note test bench "
         "fixture golden decomposer ledger concern module workspace journal resume replay").split()
TOKENS = Tokenizer("gpt-4o")


def fill(pad, count, seed=7, longest=60):
    rnd = random.Random(seed)
    for i in range(count):
        pad.note(f"agent{i % 5}", " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, longest))) + ".")


def quick_fill(pad, count, seed, longest):
    """The same kind of notes without a lock turn and an fsync each (the budgets do not depend on how they came)."""
    rnd = random.Random(seed)
    pad.db.execute("PRAGMA synchronous=OFF")
    for i in range(count):
        pad._append(i + 1, f"agent{i % 5}", "plan",
                    " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, longest))) + ".")


@pytest.fixture
def workspace(root):
    with Scratchpad.for_workspace(root) as pad, Memory(root, index=False) as memory:
        yield pad, memory


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A scratchpad with 400 notes (about 14,000 tokens), shared by the budget tests."""
    root = tmp_path_factory.mktemp("busy")
    with Scratchpad.for_workspace(root) as pad, Memory(root, index=False) as memory:
        fill(pad, 400)
        yield pad, memory


@pytest.mark.parametrize("window", [2_000, 8_000, 32_000, 400_000])
def test_the_newest_notes_fill_5_percent_and_the_summary_at_most_10(busy, window):
    pad, memory = busy
    view = pad_context(pad, memory, "agent0", f"gpt-4o:{window}")
    assert view.verbatim_budget == window // 20 and view.summary_budget == window // 10
    assert view.verbatim_tokens <= view.verbatim_budget and view.summary_tokens <= view.summary_budget
    assert TOKENS.count(view.text) <= int(window * 0.15)
    notes = pad.notes()
    assert view.text.endswith(notes[-1].render())
    if window == 400_000:  # everything fits verbatim: nothing to summarize
        assert view.first_verbatim_seq == 1 and SUMMARY_HEADING not in view.text
    else:
        assert SUMMARY_HEADING in view.text and view.first_verbatim_seq > 1
        # The verbatim part is really the newest text: every note after the boundary is in it whole.
        verbatim = view.text.split("latest notes", 1)[1]
        assert all(n.render() in verbatim for n in notes if n.seq > view.first_verbatim_seq)
        # And it is nearly full: one more whole note would not have fitted.
        assert view.verbatim_tokens > view.verbatim_budget - TOKENS.count(notes[view.first_verbatim_seq - 1].render())


def test_nothing_older_is_lost_every_note_is_kept_verbatim_in_a_block_the_summary_leads_to(busy):
    pad, memory = busy
    view = pad_context(pad, memory, "agent0", "gpt-4o:8000")
    covered = set()
    for node in view.nodes:
        for span in memory.spans(node):
            covered.add(span.document)
    blocks = {doc.id: memory.text(doc) for doc in memory.documents() if doc.id in covered}
    older = [n for n in pad.notes() if n.seq <= view.first_verbatim_seq]
    assert older and all(any(n.render() in text for text in blocks.values()) for n in older)


def test_a_second_read_makes_no_summary_and_a_new_note_reuses_the_full_blocks(workspace):
    pad, memory = workspace
    fill(pad, 3 * BLOCK_NOTES + 10)
    first = pad_context(pad, memory, "agent0", "gpt-4o:4000")
    assert first.summarized > 0
    again = pad_context(pad, memory, "agent0", "gpt-4o:4000")
    assert again.summarized == 0 and again.text == first.text
    fill(pad, 3, seed=99)
    later = pad_context(pad, memory, "agent0", "gpt-4o:4000")
    assert later.summarized < first.summarized
    assert later.summary_tokens <= later.summary_budget


def test_a_note_longer_than_the_verbatim_share_shows_its_end_and_is_summarized_whole(workspace):
    pad, memory = workspace
    fill(pad, 5)
    long_note = " ".join(f"step{i} done." for i in range(400))  # ~1,600 tokens, 5% of 8,000 is 400
    pad.note("writer", long_note)
    view = pad_context(pad, memory, "agent0", "gpt-4o:8000")
    assert view.verbatim_tokens <= view.verbatim_budget and view.summary_tokens <= view.summary_budget
    assert view.first_verbatim_seq == 6
    assert view.text.endswith("step399 done.") and "step0 done." not in view.text.split("latest notes", 1)[1]
    assert any(long_note in memory.text(doc) for doc in memory.documents())


def test_an_empty_scratchpad_reads_as_nothing(workspace):
    pad, memory = workspace
    assert pad_context(pad, memory, "agent0", "gpt-4o").text == ""


def test_a_window_too_small_for_a_summary_is_a_clear_error(workspace):
    pad, memory = workspace
    fill(pad, 40)
    with pytest.raises(BudgetError, match="smallest piece"):
        pad_context(pad, memory, "agent0", "gpt-4o:500")


@pytest.mark.slow
@given(count=st.integers(1, 60), longest=st.integers(1, 300), window=st.integers(1_000, 12_000))
def test_any_scratchpad_and_any_window_stays_in_budget(tmp_path_factory, count, longest, window):
    """Property: for any notes and any window with room for a summary, both parts keep their budgets."""
    root = tmp_path_factory.mktemp("any")
    with Scratchpad.for_workspace(root) as pad, Memory(root, index=False) as memory:
        quick_fill(pad, count, seed=count * longest, longest=longest)
        view = pad_context(pad, memory, "agent0", f"gpt-4o:{window}")
        newest = pad.notes()[-1].render()
    assert view.verbatim_tokens <= int(window * 0.05) and view.summary_tokens <= int(window * 0.10)
    assert view.text.endswith(newest[-20:])
