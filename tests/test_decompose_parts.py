"""The decomposer's building blocks: spec hashes, extracting a module from an answer, validating it, the store."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from orgtree_lang.check.capabilities import capability_allowed
from orgtree_lang.compile.api import compile_source
from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.extract import ExtractError, extract_module
from orgtree_lang.decompose.spec import required_signature, spec_hash
from orgtree_lang.decompose.store import ModuleStore, StoreError
from orgtree_lang.decompose.validate import validate_module
from orgtree_lang.run.registries import default_registry
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax.spans import Span

REGISTRY = default_registry(plugins=False)
SPAN = Span("triage.pipe", 12, 9, 13, 40)


def spec(**changes) -> AmbiguousSpec:
    fields = dict(name="classify", doc="Label the report as bug, feature or question.",
                  inputs=(("report", t.STR),), outputs=(("label", t.STR),), uses=("text",),
                  pipeline="triage", span=SPAN)
    fields.update(changes)
    return AmbiguousSpec(**fields)


def test_spec_hash_is_stable_and_sees_every_part_of_the_spec():
    base = spec_hash(spec())
    assert base == spec_hash(spec()) == spec_hash(spec(span=Span("other.pipe", 1, 1, 1, 2)))
    assert base == spec_hash(spec(doc="  Label the report as bug, feature or question.\n"))
    for change in ({"name": "label"}, {"doc": "Other."}, {"inputs": (("report", t.INT),)},
                   {"outputs": (("label", t.STR), ("score", t.FLOAT))}, {"uses": ("text", "fs")}):
        assert spec_hash(spec(**change)) != base, change


def test_required_signature_for_one_and_several_outputs():
    assert required_signature(spec()) == "pipeline main(report: str) -> str"
    two = required_signature(spec(outputs=(("label", t.STR), ("score", t.FLOAT))))
    assert two == "record Outputs:\n    label: str\n    score: float\n\npipeline main(report: str) -> Outputs"


def test_capabilities_narrow_but_never_widen():
    assert capability_allowed("text", ["text"])
    assert capability_allowed("text.split", ["text"])
    assert not capability_allowed("text", ["text.split"])
    assert not capability_allowed("fs", ["text"])
    assert not capability_allowed("textual", ["text"])


MODULE = 'use text\n\npipeline main(report: str) -> str:\n    if text.contains(report, "crash"):\n' \
         '        return "bug"\n    return "question"\n'


@pytest.mark.parametrize("answer", [
    MODULE,
    f"Here is the module:\n```pipe\n{MODULE}```\nIt checks for crashes.",
    f"```\n{MODULE}```",
    f"```python\nprint('ignore me')\n```\nand\n```pipe\n{MODULE}```",
])
def test_extract_finds_the_module(answer):
    assert extract_module(answer) == MODULE


@pytest.mark.parametrize("answer, kind", [
    ("", "empty"), ("   \n ", "empty"),
    ("I think you should label it as a bug.", "no_code"),
    (f"```\n{MODULE}```\n```\n{MODULE}```", "several"),
])
def test_extract_refuses_answers_without_exactly_one_module(answer, kind):
    with pytest.raises(ExtractError) as info:
        extract_module(answer)
    assert info.value.kind == kind
    assert "```pipe" in str(info.value)


def test_a_good_module_validates():
    result = validate_module(MODULE, spec(), REGISTRY, "classify.pipe")
    assert result.ok and result.program.pipelines["main"].params[0].name == "report"


@pytest.mark.parametrize("source, problem", [
    ("pipeline main(text_in: str) -> str:\n    return text_in\n", "`main` must take exactly (report: str)"),
    ("pipeline main(report: str) -> int:\n    return 1\n", "`main` must return str"),
    ("pipeline helper(report: str) -> str:\n    return report\n", "must declare its entry pipeline"),
    ('use fs\n\npipeline main(report: str) -> str:\n    return fs.read("x")\n', "`use fs` is not allowed"),
    ("pipeline main(report: str) -> str:\n    return lenn(report)\n", "undefined function `lenn`"),
    ('pipeline main(report: str) -> str:\n    ambiguous classify(report: str) -> label: str:\n'
     '        """Label the report as bug, feature or question."""\n    return label\n', "ask for the same module"),
])
def test_validation_names_what_is_wrong(source, problem):
    result = validate_module(source, spec(), REGISTRY, "classify.pipe")
    assert not result.ok
    assert any(problem in p for p in result.problems), result.problems


def test_several_outputs_need_the_outputs_record():
    two = spec(outputs=(("label", t.STR), ("score", t.FLOAT)))
    good = ("record Outputs:\n    label: str\n    score: float\n\n"
            'pipeline main(report: str) -> Outputs:\n    return Outputs(label="bug", score=0.5)\n')
    assert validate_module(good, two, REGISTRY, "c.pipe").ok
    bad = 'pipeline main(report: str) -> str:\n    return "bug"\n'
    assert "must return a record" in validate_module(bad, two, REGISTRY, "c.pipe").problems[0]


def test_store_saves_readable_source_with_provenance_and_finds_it_by_spec(tmp_path):
    store = ModuleStore(tmp_path)
    digest = spec_hash(spec())
    saved = store.save("triage.pipe", "classify", MODULE,
                       {"block": "classify", "parent": "triage.pipe:12", "spec-hash": digest,
                        "author-model": "scripted:models.yaml", "review-rounds": "1"}, REGISTRY)
    assert saved.path == tmp_path / ".orgtree" / "modules" / "triage" / "classify.pipe"
    text = saved.path.read_text()
    assert text.startswith("# orgtree: block = classify\n# orgtree: parent = triage.pipe:12\n")
    assert text.endswith(MODULE)
    compile_source(text, str(saved.path), REGISTRY)  # the saved file is a module of its own
    found = store.find(digest)
    assert found is not None and found.body == MODULE and found.provenance["review-rounds"] == "1"
    assert store.find("0" * 24) is None


def test_store_refuses_a_module_that_does_not_compile_and_leaves_nothing(tmp_path):
    store = ModuleStore(tmp_path)
    with pytest.raises(StoreError, match="does not compile"):
        store.save("triage.pipe", "classify", "pipeline main(:\n", {"spec-hash": "x"}, REGISTRY)
    assert not store.path_for("triage.pipe", "classify").exists()
    assert store.all() == []


@pytest.mark.slow
@given(noise=st.text(max_size=200), module=st.sampled_from([MODULE, "pipeline main() -> int:\n    return 1\n"]))
@example(noise="#\r0", module="pipeline main() -> int:\n    return 1\n")  # a lone \r in a comment ends it on read-back
def test_the_store_never_holds_a_module_that_fails_check(noise, module, tmp_path_factory):
    """Property: whatever text the author sends, a saved module always compiles (pipe check passes)."""
    store = ModuleStore(tmp_path_factory.mktemp("store"))
    try:
        body = extract_module(noise + "\n```pipe\n" + module + noise + "\n```")
    except ExtractError:
        return
    try:
        saved = store.save("p.pipe", "b", body, {"spec-hash": "h"}, REGISTRY)
    except StoreError:
        assert store.all() == []
        return
    try:
        compile_source(saved.path.read_text(), str(saved.path), REGISTRY)
    except CompileError as err:  # pragma: no cover - the assertion below reports it
        pytest.fail(f"saved a module that does not compile:\n{err.render()}")
