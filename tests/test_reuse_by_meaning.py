"""Reuse by meaning (issue 25 item 5): saved modules and learned skills are found by hybrid search over their specs,
a similar module is reused only once a reviewer accepts it, and learned skills are offered to the author by relevance
without `use learned`, within the block's capabilities."""

from __future__ import annotations

import json

import pytest
from decompose_testing import GOOD, NO_CONCERNS, run_decomposed, scripted

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.reuse import offered_skills
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.decompose.validate import validate_module
from orgtree_lang.memory.hybrid import vectors_installed
from orgtree_lang.pool.learned import LearnedStore
from orgtree_lang.run.registries import default_registry, workspace_registry

needs_vectors = pytest.mark.skipif(not vectors_installed(), reason="the embedding model is not installed")


def parent(block: str, doc: str, uses: str = "text", output: str = "label") -> str:
    return f'''use {uses}

pipeline main(report: str) -> str:
    ambiguous {block}(report: str) -> {output}: str:
        """{doc}"""
    return {output}
'''


FIRST = parent("classify", "Label the report: bug if it mentions a crash, else question.")
# The same job in other words: almost no word in common with FIRST's description.
REWORDED = parent("sort_ticket", "Tag this issue as a bug whenever it describes the program crashing; otherwise mark "
                                 "it as a question.", output="kind")
ACCEPT = json.dumps({"accept": True, "reasons": "same rule"})


def write_first(tmp_path) -> None:
    author = scripted(tmp_path, "a0", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r0", [{"reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, FIRST, {"report": "crash"}, author, reviewer, file="triage.pipe") == "bug"


@needs_vectors
def test_a_module_for_a_block_said_in_other_words_is_offered_for_reuse_and_reused_once_accepted(tmp_path):
    write_first(tmp_path)
    author = scripted(tmp_path, "a1", [{"reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r1", [{"match": {"contains": "The new step"}, "reply": ACCEPT}], "reviewer")
    assert run_decomposed(tmp_path, REWORDED, {"report": "it crashed"}, author, reviewer, file="desk.pipe") == "bug"
    assert author.prompts == [] and "classify.pipe" in reviewer.prompts[0]
    provenance = ModuleStore(tmp_path).read(ModuleStore(tmp_path).path_for("desk.pipe", "sort_ticket")).provenance
    assert provenance["reused-from"].endswith("classify.pipe") and "same rule" in provenance["reuse-accepted-by"]


@needs_vectors
def test_a_similar_module_the_reviewer_refuses_is_not_reused_but_shown_to_the_author(tmp_path):
    write_first(tmp_path)
    author = scripted(tmp_path, "a1", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r1", [
        {"match": {"contains": "The new step"}, "reply": json.dumps({"accept": False, "reasons": "not the same"})},
        {"reply": NO_CONCERNS}], "reviewer")
    run_decomposed(tmp_path, REWORDED, {"report": "calm"}, author, reviewer, file="desk.pipe")
    assert len(reviewer.asked("The new step")) == 1
    assert "A saved module for a similar block (classify)" in author.prompts[0]
    provenance = ModuleStore(tmp_path).read(ModuleStore(tmp_path).path_for("desk.pipe", "sort_ticket")).provenance
    assert "reused-from" not in provenance


def test_keyword_only_search_offers_no_module_whose_spec_shares_few_of_the_blocks_words(tmp_path):
    # `[memory] vectors = false`: relevance is the share of the block's words; the reworded spec shares too few.
    (tmp_path / "orgtree.toml").write_text("[memory]\nvectors = false\n")
    write_first(tmp_path)
    author = scripted(tmp_path, "a1", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r1", [{"reply": NO_CONCERNS}], "reviewer")
    run_decomposed(tmp_path, REWORDED, {"report": "x"}, author, reviewer, file="desk.pipe")
    assert reviewer.asked("The new step") == []
    near = parent("triage_report", "Label the report: bug if it mentions a crash, else a question.")
    reviewer = scripted(tmp_path, "r2", [{"match": {"contains": "The new step"}, "reply": ACCEPT}], "reviewer")
    assert run_decomposed(tmp_path, near, {"report": "crash"}, author, reviewer, file="other.pipe") == "bug"
    assert len(reviewer.asked("The new step")) == 1


SHOUT = '''use text

pipeline main(words: str) -> str:
    """The words in capitals with an exclamation mark."""
    return text.upper(words) + "!"
'''
LISTING = '''use fs, text

pipeline main(folder: str) -> str:
    """The names of the files in a folder, one a line."""
    return text.join(fs.list(folder), "\\n")
'''


def learned(tmp_path):
    base = default_registry(plugins=False)
    store = LearnedStore(tmp_path)
    store.save("shout", SHOUT, "Make the words loud: upper-case them and add an exclamation mark.", {}, base)
    store.save("list_files", LISTING, "List the names of the files in a folder, one a line.", {}, base)
    return workspace_registry(tmp_path, base)


SHOUT_PARENT = '''use text

pipeline main(words: str) -> str:
    ambiguous loud(words: str) -> out: str:
        """Shout the words: all in upper case, followed by an exclamation mark."""
    return out
'''


def shout_block():
    return compile_source(SHOUT_PARENT, "p.pipe", default_registry(plugins=False)).program.pipelines["main"].ambiguous[0]


def test_a_learned_skill_like_the_block_is_offered_without_use_learned(tmp_path):
    registry = learned(tmp_path)
    offered = [skill.name for skill in offered_skills(shout_block(), registry, tmp_path)]
    assert offered[0] == "learned.shout"


def test_a_learned_skill_that_needs_a_capability_the_block_lacks_is_neither_offered_nor_allowed(tmp_path):
    registry = learned(tmp_path)
    spec = shout_block()
    assert "learned.list_files" not in [skill.name for skill in offered_skills(spec, registry, tmp_path)]
    module = 'use learned.list_files\n\npipeline main(words: str) -> str:\n    return learned.list_files(words)\n'
    problems = validate_module(module, spec, registry, "loud.pipe").problems
    assert any("`use learned.list_files` is not allowed" in p and "uses fs" in p for p in problems)


def test_a_module_may_call_an_offered_learned_skill_within_its_blocks_capabilities(tmp_path):
    registry = learned(tmp_path)
    module = 'use learned.shout\n\npipeline main(words: str) -> str:\n    return learned.shout(words)\n'
    assert validate_module(module, shout_block(), registry, "loud.pipe").ok


def test_the_author_is_shown_the_learned_skills_like_its_block(tmp_path):
    registry = learned(tmp_path)
    body = '```pipe\nuse learned.shout\n\npipeline main(words: str) -> str:\n    return learned.shout(words)\n```'
    author = scripted(tmp_path, "a", [{"match": {"contains": "Write a module"}, "reply": body}], "author")
    reviewer = scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, SHOUT_PARENT, {"words": "hey"}, author, reviewer, registry=registry) == "HEY!"
    assert "Learned skills of this workspace like this step" in author.prompts[0]
    assert "learned.shout(words: str) -> str" in author.prompts[0]
    assert "learned.list_files" not in author.prompts[0]
