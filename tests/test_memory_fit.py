"""Context recursion: any text fits any budget, leaves are the exact bytes, depth is logarithmic, the cache works."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orgtree_lang.memory import BudgetError, ExtractiveSummarizer, Memory, MemoryInputError, ModelSummarizer, fit
from orgtree_lang.memory.budget import window_of
from orgtree_lang.memory.tree import PIECE_TOKENS
from orgtree_lang.models.scripted import ScriptedModel, load_rules
from orgtree_lang.models.tokens import count_tokens

WORDS = ["alpha", "river", "stone", "quiet", "engine", "maple", "orbit", "lantern", "copper", "thread", "élan",
         "naïve", "数据", "🙂", "x" * 40, "def", "return", "(", ")", "=", "0x1f"]


@st.composite
def documents(draw) -> str:
    """Texts with headings, paragraphs, lines and sentences of mixed scripts, or one long unbroken run."""
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(st.sampled_from(["ab", "z9", "é"])) * draw(st.integers(1, 6000))
    blocks = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["heading", "paragraph", "code"]))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=120))
        if kind == "heading":
            blocks.append("# " + " ".join(words[:6]))
        elif kind == "code":
            blocks.append("def f():\n    " + "\n    ".join(" ".join(words[i:i + 8]) for i in range(0, len(words), 8)))
        else:
            sentences = [" ".join(words[i:i + 9]).capitalize() + "." for i in range(0, len(words), 9)]
            blocks.append(" ".join(sentences))
    return "\n\n".join(blocks) * draw(st.integers(1, 4))


class CountingSummarizer(ExtractiveSummarizer):
    """The extractive summarizer, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, text, target_tokens, tokenizer):
        self.calls += 1
        return super().summarize(text, target_tokens, tokenizer)


@pytest.mark.slow
@settings(max_examples=25)
@given(text=documents(), window=st.integers(1000, 12000), share=st.sampled_from([0.25, 0.1, 0.5]))
def test_every_view_fits_its_budget_and_every_leaf_is_the_original_bytes(text, window, share):
    with Memory(None, index=False) as memory:
        doc = memory.add(text, name="t.txt")
        view = memory.fit([doc], "gpt-4o", share, context_window=window)
        budget = int(window * share)
        assert view.budget == budget
        assert count_tokens(view.text, "gpt-4o") <= budget
        leaves = memory.store.leaves(doc.id)
        assert b"".join(memory.blobs.read(x.blob, x.start, x.end) for x in leaves) == text.encode("utf-8")
        for leaf in leaves:
            assert count_tokens(memory.text(leaf), "gpt-4o") <= min(PIECE_TOKENS, budget)
        for node in view.nodes:  # every node of the view leads back to bytes of the document
            for span in memory.spans(node):
                assert span.document == doc.id and 0 <= span.start < span.end <= len(text.encode("utf-8"))


@pytest.mark.slow
@settings(max_examples=10)
@given(text=documents(), window=st.integers(1000, 4000))
def test_a_second_fit_of_the_same_input_summarizes_nothing(text, window):
    counting = CountingSummarizer()
    with Memory(None, index=False) as memory:
        first = memory.fit([text], "gpt-4o", context_window=window, summarizer=counting)
        calls = counting.calls
        second = memory.fit([text], "gpt-4o", context_window=window, summarizer=counting)
    assert counting.calls == calls
    assert second.summarized == 0 and second.text == first.text
    assert first.summarized == calls


def test_the_text_cache_serves_a_new_tree_over_the_same_text():
    text = "\n\n".join(f"Paragraph {i} talks about copper lanterns and quiet rivers at length." * 4 for i in range(60))
    counting = CountingSummarizer()
    with Memory(None, index=False) as memory:
        memory.fit([memory.add(text, name="a")], "gpt-4o", context_window=1000, summarizer=counting)
        calls = counting.calls
        assert calls > 0
        # Another name makes another document with other pieces, but the same piece texts: cached summaries.
        memory.fit([memory.add(text, name="b")], "gpt-4o", context_window=1000, summarizer=counting)
    assert counting.calls == calls


def test_depth_grows_logarithmically_with_the_text():
    paragraph = ("The engine of the old mill turned copper wheels beside the quiet river. "
                 "Lanterns hung from maple beams, and the orbit of the seasons set the work. ")
    levels = []
    sizes = [1, 8, 64, 256]
    for size in sizes:
        text = "\n\n".join(f"{i}. {paragraph}" for i in range(size * 10))
        view = fit([text], "gpt-4o:1000")
        total = count_tokens(text, "gpt-4o")
        assert view.levels <= 1 + math.ceil(math.log(max(2, total / view.budget), 4)), (size, view.levels, total)
        levels.append(view.levels)
    assert levels == sorted(levels) and levels[-1] <= levels[0] + 5  # 256x the text: a few levels more


def test_text_that_fits_is_returned_whole_and_unchanged():
    text = "# Notes\n\nShort enough to fit.\n"
    view = fit([text], "gpt-4o")
    assert view.text == text and view.levels == 0 and view.summarized == 0


def test_expand_walks_from_the_view_down_to_the_original_text():
    text = "\n\n".join(f"Section {i}: the lantern maker number {i} keeps copper thread." * 5 for i in range(80))
    with Memory(None, index=False) as memory:
        doc = memory.add(text, name="n.md")
        view = memory.fit([doc], "gpt-4o:1000")
        node = view.nodes[0]
        assert node.kind == "summary" and f"[#{node.id} summary" in view.text
        while not isinstance(below := memory.expand(node), str):
            node = below[0]
        assert below == text.encode("utf-8")[node.start:node.end].decode("utf-8")
        assert text.startswith(below)


def test_a_summarizer_that_ignores_the_length_is_cut_to_the_target(tmp_path):
    rules = tmp_path / "long.json"
    rules.write_text('[{"reply": "' + "Everything matters here. " * 400 + '"}]')
    model = ScriptedModel(load_rules(rules, str(rules)), f"scripted:{rules}")
    text = "\n\n".join(f"Point {i} of the plan: ship the copper engine before the river freezes." for i in range(200))
    with Memory(None, index=False) as memory:
        view = memory.fit([text], "gpt-4o", context_window=2000, summarizer=ModelSummarizer(model))
        assert count_tokens(view.text, "gpt-4o") <= 500
        summaries = [n for n in view.nodes if n.kind == "summary"]
        assert summaries and all(count_tokens(memory.text(n), "gpt-4o") <= 500 // 8 for n in summaries)


def test_the_model_summarizer_states_the_target_length(tmp_path):
    rules = tmp_path / "echo.json"
    rules.write_text('[{"match": {"regex": "at most \\\\d+ tokens"}, "reply": "short summary"}]')
    model = ScriptedModel(load_rules(rules, str(rules)), f"scripted:{rules}")
    text = "\n\n".join(f"Item {i}: copper, river, lantern, stone and thread." for i in range(300))
    view = fit([text], "gpt-4o:1000", summarizer=ModelSummarizer(model))
    assert "short summary" in view.text


def test_empty_documents_are_refused():
    with Memory(None, index=False) as memory:
        with pytest.raises(MemoryInputError, match="empty"):
            memory.add("  \n", name="blank.txt")


def test_binary_and_undecodable_files_are_refused_by_name(tmp_path):
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("café".encode("latin-1"))
    with Memory(None, index=False) as memory:
        with pytest.raises(MemoryInputError, match=r"image\.png looks binary"):
            memory.add_file(binary)
        with pytest.raises(MemoryInputError, match=r"latin1\.txt is not UTF-8 text: byte 3 is 0xe9"):
            memory.add_file(latin)


def test_a_window_too_small_for_any_piece_is_a_clear_error():
    with pytest.raises(BudgetError, match=r"window of 200 tokens at share 0.25 leaves 50 tokens, smaller than"):
        fit(["some text"], "gpt-4o", context_window=200)


def test_an_unknown_model_says_how_to_give_its_window():
    with pytest.raises(BudgetError, match=r"`my-local-model:TOKENS`"):
        fit(["some text"], "my-local-model")
    assert fit(["some text"], "my-local-model:4000").budget == 1000


def test_windows_come_from_litellms_map_without_importing_litellm():
    script = ("import sys; from orgtree_lang.memory.budget import window_of; "
              "print(window_of('gpt-4o'), window_of('openai/gpt-4o-mini'), 'litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60).stdout.split()
    assert out == ["128000", "128000", "False"]
    assert window_of("scripted:x.yaml") == 8192


def test_concurrent_adds_of_one_text_make_one_document(tmp_path):
    import threading

    errors, ids = [], []

    def add() -> None:
        try:
            with Memory(tmp_path, index=False) as memory:
                ids.append(memory.add("Tides and harbours, twice a day. " * 50, name="tides.txt").id)
        except Exception as exc:  # the test fails below with whatever happened
            errors.append(exc)

    threads = [threading.Thread(target=add) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(ids) == 6 and len(set(ids)) == 1
    with Memory(tmp_path, index=False) as memory:
        assert [d.name for d in memory.documents()] == ["tides.txt"]
