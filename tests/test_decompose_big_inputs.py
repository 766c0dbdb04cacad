"""Big inputs through the context tree: they go to the workspace memory, the author reads a structural summary
and a view within the prompt's share, and the generated module finds what it needs with `ctx`."""

from __future__ import annotations

import random

import pytest
from decompose_testing import NO_CONCERNS, Recording, run_decomposed

from orgtree_lang.decompose.inputs import structure
from orgtree_lang.decompose.prompt import CONTEXT_SHARE
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.run.registries import default_registry
from orgtree_lang.memory.memory import Memory
from orgtree_lang.models.tokens import context_window, count_tokens, set_context_window
from orgtree_lang.runtime.errors import PipeRuntimeError

REGISTRY = default_registry(plugins=False)

PROGRAM = '''use text

pipeline main(log: str) -> str:
    ambiguous find_code(log: str) -> code: str:
        """Find the vault combination that the night porter mentions somewhere in the log."""
    return code
'''
# The module searches the memory for the passage, then reads the code out of the line that holds it.
FINDER = '''```pipe
use ctx.search
use text

pipeline main(log: str) -> str:
    hits = ctx.search("vault combination porter", k=3, tag="input:find_code.log", mode="keyword")
    for hit in hits:
        for line in text.split(hit["text"], "\\n"):
            if text.contains(line, "vault combination is "):
                rest = text.split(line, "vault combination is ")[1]
                return text.split(rest, " ")[0]
    fail "no vault combination in the log"
```'''
SECRET = "7-31-4159"


def big_log(megabytes: int) -> str:
    rng = random.Random(7)
    words = "alpha beta gamma delta request served cache miss upstream latency retry worker queue shard".split()
    lines, size = [], 0
    while size < megabytes * 1_000_000 + 200:
        line = f"2026-11-{len(lines) % 28 + 1:02d} worker-{len(lines) % 97} " + " ".join(
            rng.choice(words) for _ in range(12))
        lines.append(line)
        size += len(line) + 1
    lines[len(lines) * 4 // 5] = f"2026-11-05 worker-12 the vault combination is {SECRET} said the night porter"
    return "\n".join(lines)


SUMMARY = "Covers: lines of a worker log. Facts: workers 0-96 serve requests; a vault combination is mentioned."


def run(tmp_path, log: str, answer: str = FINDER, window: int | None = None, **settings):
    # The author's model also writes the summaries of the big input's view (each request asks for a `Covers:` line).
    author = Recording(tmp_path / "a.json", [{"match": {"contains": "Covers: ..."}, "reply": SUMMARY},
                                            {"reply": answer}], "author")
    if window is not None:
        set_context_window(author.name, window)
    reviewer = Recording(tmp_path / "r.json", [{"reply": NO_CONCERNS}], "reviewer")
    return run_decomposed(tmp_path, PROGRAM, {"log": log}, author, reviewer, file="vault.pipe",
                          registry=REGISTRY, **settings), author


def test_a_20_mb_input_stays_within_the_prompt_share_and_the_child_finds_a_fact_deep_inside(tmp_path):
    log = big_log(20)
    assert len(log) >= 20_000_000 and log.index(SECRET) > 15_000_000
    # A window like today's models': the view gets 40% of the request's 25% of it.
    result, author = run(tmp_path, log, window=128_000)
    assert result == SECRET
    summaries = [r for r in author.requests if "Covers: ..." in r[-1].content]
    (system, request), = [r for r in author.requests if r not in summaries]
    window = context_window(author.name)
    assert window == 128_000 and count_tokens(request.content, author.name) <= window * CONTEXT_SHARE
    # The view's summaries were written by the model, each asked for within a share of the view's budget.
    assert summaries and SUMMARY in request.content
    # A structural summary, where the input is and how to read it, and a view of it.
    assert f"str of {len(log):,} characters in" in request.content
    assert 'tag="input:find_code.log"' in request.content and "A view of it" in request.content
    with Memory(tmp_path, vectors=False) as memory:
        (doc,) = [d for d in memory.documents() if "input:find_code.log" in d.tags]
        assert memory.text(doc) == log


def test_small_inputs_are_shown_as_values_and_still_readable_by_a_module_that_uses_ctx(tmp_path):
    log = "2026-11-05 the vault combination is 1-2-3 said the night porter"
    result, author = run(tmp_path, log)
    assert result == "1-2-3"
    assert log in author.requests[0][1].content and "workspace memory" not in author.requests[0][1].content
    # The module reads the memory, so its input was put there before it ran, under the same tag.
    with Memory(tmp_path, vectors=False) as memory:
        (doc,) = [d for d in memory.documents() if "input:find_code.log" in d.tags]
        assert memory.text(doc) == log


def test_a_reused_module_reads_this_runs_input_not_the_last_ones(tmp_path):
    first = "x " * 20_000 + "the vault combination is 1-1-1 said the porter"
    second = "y " * 20_000 + "the vault combination is 2-2-2 said the porter"
    assert run(tmp_path, first, memory_threshold=1000)[0] == "1-1-1"
    result, author = run(tmp_path, second, memory_threshold=1000)
    assert result == "2-2-2" and author.requests == []  # reused: no model, and the memory holds the new input
    assert len(ModuleStore(tmp_path).all()) == 1


def test_structure_of_lists_and_dicts_names_length_keys_types_and_a_few_items():
    rows = [{"id": i, "name": f"n{i}", "tags": ["a"]} for i in range(5000)]
    text = structure(rows)
    assert text.startswith("list of 5,000 items; item types: dict[str, any] (5,000)")
    assert "id (int)" in text and "name (str)" in text and "tags (list[str])" in text
    assert '[0] {"id": 0, "name": "n0", "tags": ["a"]}' in text and "[3]" not in text
    table = structure({f"k{i}": i * 1.5 for i in range(100)})
    assert table.startswith("dict of 100 entries; keys: k0 (float)") and "... (100 keys)" in table


def test_a_module_may_not_write_to_the_memory(tmp_path):
    writer = FINDER.replace("use ctx.search", "use ctx.search, ctx.add")
    with pytest.raises(PipeRuntimeError, match="`use ctx.add` is not allowed"):
        run(tmp_path, "short", answer=writer, max_repairs=0)


def test_a_big_list_goes_to_memory_one_item_a_line_and_its_view_fits(tmp_path):
    from orgtree_lang.compile.api import compile_source as compile_
    from orgtree_lang.decompose.inputs import described_inputs

    source = '''pipeline main(rows: list[dict[str, any]]) -> int:
    ambiguous count_late(rows: list[dict[str, any]]) -> late: int:
        """How many rows have a delay over 60."""
    return late
'''
    spec = compile_(source, "rows.pipe", REGISTRY).program.pipelines["main"].ambiguous[0]
    rows = [{"id": i, "delay": i % 90, "carrier": f"c{i % 7}"} for i in range(20_000)]
    described = described_inputs(spec, {"rows": rows}, tmp_path, 16_000, "gpt-4o", 128_000, 8_000)
    full, short = described["rows"]
    assert full.startswith("list of 20,000 items; item types: dict[str, any] (20,000)")
    assert "delay (int)" in short and 'tag="input:count_late.rows"' in short and "A view of it" not in short
    view = full[full.index("A view of it"):]
    assert count_tokens(view) <= 0.4 * 8_000
    with Memory(tmp_path, vectors=False) as memory:
        (doc,) = memory.documents()
        lines = memory.text(doc).splitlines()
    assert len(lines) == 20_000 and lines[7] == '{"id": 7, "delay": 7, "carrier": "c0"}'
