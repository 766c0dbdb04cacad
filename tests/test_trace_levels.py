"""Trace levels (off, calls, steps), the `[trace]` settings, rotation at the size cap, and model calls in the trace."""

from __future__ import annotations

import json

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.assemble import assemble
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.config import ConfigError
from orgtree_lang.vm.trace import TraceSettings, Tracer

LOOP = '''\
use text

pipeline shout(word: str) -> str:
    return text.upper(word)

pipeline main(n: int = 300) -> int:
    total = 0
    for i in range(n):
        total = total + i % 7
    print(shout("done"))
    return total
'''


@pytest.fixture(scope="module")
def registry():
    return default_registry(plugins=False)


def traced(tmp_path, registry, source=LOOP, durable=False, **options):
    path = tmp_path / "p.pipe"
    path.write_text(source)
    program = compile_source(source, str(path), registry).program
    machine = run_program(program, tmp_path, registry, RunOptions(registry=registry, durable=durable,
                                                                  printer=lambda line: None, **options),
                          source=source, program_path=path)
    folder = tmp_path / ".orgtree" / "runs" / machine.state.run_id
    return machine, folder


def events_of(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_default_level_traces_calls_prints_and_the_run_but_no_statement(tmp_path, registry):
    machine, folder = traced(tmp_path, registry)
    kinds = [e["event"] for e in events_of(folder / "trace.jsonl")]
    assert machine.state.steps > 300
    assert kinds == ["run.start", "pipeline.call", "skill", "pipeline.return", "print", "run.end"]


def test_level_steps_adds_one_event_per_statement(tmp_path, registry):
    machine, folder = traced(tmp_path, registry, trace_level="steps")
    events = events_of(folder / "trace.jsonl")
    steps = [e for e in events if e["event"] == "step"]
    assert len(steps) == machine.state.steps and [e["step"] for e in steps] == list(range(1, len(steps) + 1))
    assert {"skill", "print", "pipeline.call"} <= {e["event"] for e in events}


def test_level_off_writes_no_trace_file(tmp_path, registry):
    machine, folder = traced(tmp_path, registry, trace_level="off", durable=True)
    assert machine.state.result == sum(i % 7 for i in range(300))
    assert (folder / "journal.db").is_file() and not list(folder.glob("trace.jsonl*"))


def test_orgtree_toml_sets_the_level_and_the_flag_wins_over_it(tmp_path, registry):
    (tmp_path / "orgtree.toml").write_text('[trace]\nlevel = "steps"\n')
    _, folder = traced(tmp_path, registry)
    assert any(e["event"] == "step" for e in events_of(folder / "trace.jsonl"))
    _, folder = traced(tmp_path, registry, trace_level="calls")
    assert not any(e["event"] == "step" for e in events_of(folder / "trace.jsonl"))


def test_the_default_level_keeps_the_machine_off_its_per_statement_path(tmp_path, registry):
    program = compile_source(LOOP, "p.pipe", registry).program
    for level, stops_every_statement in (("calls", False), ("off", False), ("steps", True)):
        options = RunOptions(trace_level=level, tree=True)
        parts = assemble(program, tmp_path, registry, options, f"r{level}", trace=tmp_path / f"{level}.jsonl")
        assert (parts.machine.observer.step_interval == 0) is stops_every_statement, level
        parts.close()


@pytest.mark.parametrize("text, message", [
    ('[trace]\nlevel = "verbose"\n', "level must be one of off, calls, steps, got 'verbose'"),
    ('[trace]\nmax_mb = 0\n', "max_mb must be above 0"),
    ('[trace]\nkeep = "two"\n', "keep must be a whole number"),
    ('[trace]\nsize = 3\n', "[trace] has no setting size"),
])
def test_bad_trace_settings_name_the_file_and_the_key(tmp_path, text, message):
    (tmp_path / "orgtree.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        TraceSettings.from_config(tmp_path / "orgtree.toml")
    assert message in str(caught.value) and "orgtree.toml" in str(caught.value)


def test_a_trace_past_its_cap_rotates_and_keeps_only_keep_old_files(tmp_path):
    settings = TraceSettings("calls", max_bytes=2000, keep=2)
    tracer = Tracer(tmp_path / "trace.jsonl", "r1", settings)
    for i in range(200):
        tracer.emit("print", None, "main", text=f"line {i:04d} " + "x" * 40)
    tracer.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["trace.jsonl", "trace.jsonl.1", "trace.jsonl.2"]
    assert all((tmp_path / name).stat().st_size <= 2000 for name in files)
    # The newest events are in trace.jsonl, the ones just before in .1, then .2: nothing in between is lost.
    texts = [e["text"][:9] for name in reversed(files) for e in events_of(tmp_path / name)]
    numbers = [int(t.split()[1]) for t in texts]
    assert numbers == list(range(numbers[0], 200)) and numbers[0] > 0


def test_a_long_run_with_a_small_cap_stays_under_it(tmp_path, registry):
    (tmp_path / "orgtree.toml").write_text('[trace]\nlevel = "steps"\nmax_mb = 0.01\nkeep = 1\n')
    _, folder = traced(tmp_path, registry, source=LOOP.replace("n: int = 300", "n: int = 3000"))
    sizes = [p.stat().st_size for p in folder.glob("trace.jsonl*")]
    assert len(sizes) == 2 and all(size <= 1024 * 1024 * 0.01 for size in sizes)
    assert events_of(folder / "trace.jsonl")[-1]["event"] == "run.end"


def test_model_calls_are_traced_with_their_tokens_and_cost(tmp_path, registry):
    from orgtree_lang.models.roles import RunModels
    from orgtree_lang.models.scripted import ScriptedModel

    (tmp_path / "m.json").write_text(json.dumps([{"reply": "a short answer"}]))
    model = ScriptedModel.from_file(tmp_path / "m.json")
    source = 'use llm\n\npipeline main() -> str:\n    first = llm.ask("one")\n    return llm.ask("two")\n'
    machine, folder = traced(tmp_path, registry, source=source, models=RunModels(None, author=model))
    events = events_of(folder / "trace.jsonl")
    models = [e for e in events if e["event"] == "model"]
    assert len(models) == 2
    assert all(e["tokens"] > 0 and "cost" in e and e["for_node"] == f"{machine.state.run_id}/main" for e in models)
    assert sum(e["tokens"] for e in models) == machine.state.usage["tokens"]
    # Each model event comes before the skill event of the call that made it.
    kinds = [e["event"] for e in events if e["event"] in ("model", "skill")]
    assert kinds == ["model", "skill", "model", "skill"]
