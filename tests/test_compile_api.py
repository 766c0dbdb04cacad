"""The compile API: bytecode cached by source hash, a JSON form that round-trips, and the decomposer hook."""

from __future__ import annotations

import json

import pytest

from orgtree_lang.compile.api import cache_key, compile_file, compile_source
from orgtree_lang.compile.code import FORMAT_VERSION, Program
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry

pytestmark = pytest.mark.fast

REGISTRY = default_registry(plugins=False)
SOURCE = 'use text\n\npipeline main(x: str = "a") -> str:\n    return text.upper(x) + "!"\n'


def test_second_compile_of_the_same_source_comes_from_the_cache(tmp_path):
    path = tmp_path / "p.pipe"
    path.write_text(SOURCE)
    first = compile_file(path, REGISTRY, tmp_path / "cache")
    second = compile_file(path, REGISTRY, tmp_path / "cache")
    assert not first.cached and second.cached
    assert second.program.shape() == first.program.shape()
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1


def test_changing_the_source_misses_the_cache(tmp_path):
    path = tmp_path / "p.pipe"
    path.write_text(SOURCE)
    compile_file(path, REGISTRY, tmp_path / "cache")
    path.write_text(SOURCE.replace('"!"', '"?"'))
    assert not compile_file(path, REGISTRY, tmp_path / "cache").cached


def test_cache_key_covers_source_file_and_skill_signatures():
    other = default_registry(plugins=False)

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    other.register(shout, name="extra.shout")
    base = cache_key(SOURCE, "p.pipe", REGISTRY)
    assert base == cache_key(SOURCE, "p.pipe", default_registry(plugins=False))
    assert base != cache_key(SOURCE + "\n", "p.pipe", REGISTRY)
    assert base != cache_key(SOURCE, "q.pipe", REGISTRY)
    assert base != cache_key(SOURCE, "p.pipe", other)


def test_a_corrupt_cache_entry_is_ignored(tmp_path):
    path = tmp_path / "p.pipe"
    path.write_text(SOURCE)
    compile_file(path, REGISTRY, tmp_path / "cache")
    (entry,) = (tmp_path / "cache").glob("*.json")
    entry.write_text("{not json")
    result = compile_file(path, REGISTRY, tmp_path / "cache")
    assert not result.cached and result.program.pipelines["main"].ops


def test_serialized_program_runs_identically():
    program = compile_source(SOURCE, "p.pipe", REGISTRY).program
    data = json.loads(program.dumps())
    assert data["format"] == FORMAT_VERSION
    loaded = Program.loads(program.dumps())
    results = []
    for p in (program, loaded):
        machine = plain_machine(p, registry=REGISTRY)
        machine.start(None, {"x": "hey"})
        results.append(machine.run().result)
    assert results == ["HEY!", "HEY!"]


def test_unknown_format_version_is_refused():
    data = compile_source(SOURCE, "p.pipe", REGISTRY).program.to_json()
    data["format"] = FORMAT_VERSION + 1
    with pytest.raises(ValueError, match="format"):
        Program.from_json(data)


AMBIGUOUS = '''\
pipeline main(report: str) -> str:
    prefix = "label"
    ambiguous classify(report: str, hint: str = prefix + ":") -> label: str, score: float:
        """Classify the report as bug, feature or question."""
    return f"{label} {score}"
'''


def test_decomposer_hook_gets_spec_and_inputs_and_binds_outputs():
    program = compile_source(AMBIGUOUS, "a.pipe", REGISTRY).program
    calls = []

    def decomposer(block):
        calls.append((block.spec, block.inputs))
        return {"label": "bug" if "crash" in block.inputs["report"] else "question", "score": 0.5}

    machine = plain_machine(program, registry=REGISTRY, resolver=decomposer)
    machine.start(None, {"report": "it crashed"})
    assert machine.run().result == "bug 0.5"
    (spec, inputs), = calls
    assert spec.name == "classify"
    assert spec.doc == "Classify the report as bug, feature or question."
    assert [(name, str(ptype)) for name, ptype in spec.inputs] == [("report", "str"), ("hint", "str")]
    assert [(name, str(ptype)) for name, ptype in spec.outputs] == [("label", "str"), ("score", "float")]
    assert inputs == {"report": "it crashed", "hint": "label:"}
    assert spec.span.line == 3


def test_decomposer_output_of_the_wrong_type_is_a_runtime_error():
    program = compile_source(AMBIGUOUS, "a.pipe", REGISTRY).program
    machine = plain_machine(program, registry=REGISTRY, resolver=lambda block: {"label": 3, "score": 1.0})
    machine.start(None, {"report": "x"})
    with pytest.raises(PipeRuntimeError, match="output `label` of ambiguous block classify expected str"):
        machine.run()


def test_without_a_decomposer_the_error_is_not_catchable():
    source = AMBIGUOUS.replace('    ambiguous', '    try:\n        ambiguous').replace(
        '        """Classify', '            """Classify').replace(
        '    return f"', '    except err:\n        return "caught"\n    return f"')
    program = compile_source(source, "a.pipe", REGISTRY).program
    machine = plain_machine(program, registry=REGISTRY)
    machine.start(None, {"report": "x"})
    with pytest.raises(PipeRuntimeError) as info:
        machine.run()
    assert info.value.kind == "ambiguous" and "classify" in info.value.message


def test_long_runs_report_progress_about_once_a_second():
    program = compile_source("pipeline main():\n    i = 0\n    while i < 200000:\n        i += 1\n",
                             "p.pipe", REGISTRY).program
    ticks = iter(range(0, 10**9, 1))  # a fake clock: one second per reading
    reports = []
    machine = plain_machine(program, registry=REGISTRY, clock=lambda: float(next(ticks)),
                      progress=lambda state, span: reports.append((state.steps, span.line)))
    machine.start()
    machine.run()
    assert len(reports) >= 10
    assert all(line in (3, 4) for _, line in reports)
    assert [steps for steps, _ in reports] == sorted(steps for steps, _ in reports)
