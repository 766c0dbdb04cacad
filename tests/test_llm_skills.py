"""llm.ask / extract / summarize / classify with scripted models: answers, retries, clear failures, journaling."""

from __future__ import annotations

import json

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.models.roles import RunModels
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.errors import PipeRuntimeError


def scripted(tmp_path, rules: list[dict], name: str = "author") -> ScriptedModel:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(rules))
    return ScriptedModel.from_file(path)


def run(tmp_path, registry, source: str, model=None, durable: bool = False, **inputs):
    program_path = tmp_path / "p.pipe"
    program_path.write_text(source)
    program = compile_source(source, str(program_path), registry).program
    models = RunModels(None, author=model) if model is not None else None
    options = RunOptions(inputs=inputs, workspace=tmp_path, registry=registry, models=models, durable=durable)
    return run_program(program, tmp_path, registry, options, source=source, program_path=program_path)


ALL_FOUR = '''use llm

pipeline main(report: str) -> str:
    label = llm.classify(report, ["bug", "feature", "question"])
    data = llm.extract(report, {"app": "str", "version": "int", "tags": "list[str]"})
    short = llm.summarize(report, max_words=4)
    answer = llm.ask(f"Say hello to {data.app}")
    return f"{label}|{data.app}|{data.version}|{data.tags}|{short}|{answer}"
'''


def test_the_four_skills_answer_with_the_authors_model(tmp_path, registry):
    model = scripted(tmp_path, [
        {"match": {"contains": "Say hello to"}, "reply": "hello, editor"},
        {"match": {"contains": "The text:"}, "reply": '```json\n{"app": "editor", "version": 3, "tags": ["ui"]}\n```'},
        {"match": {"regex": "^The editor v3"}, "replies": ["'Bug.'", "editor crashes on save"]},
    ])
    state = run(tmp_path, registry, ALL_FOUR, model, report="The editor v3 crashes when saving.").state
    assert state.result == 'bug|editor|3|["ui"]|editor crashes on save|hello, editor'
    assert model.calls == 4


def test_extract_retries_once_then_fails_with_the_validation_message(tmp_path, registry):
    model = scripted(tmp_path, [{"reply": '{"app": "editor", "version": "three"}'}])
    with pytest.raises(PipeRuntimeError) as caught:
        run(tmp_path, registry, 'use llm\n\npipeline main() -> any:\n    return llm.extract("x", '
                                '{"app": "str", "version": "int"})\n', model)
    message = caught.value.message
    assert message.startswith("llm.extract: the model's answer could not be used after 2 attempts")
    assert "version: Input should be a valid integer" in message
    assert model.calls == 2


def test_extract_refuses_extra_fields_and_takes_a_corrected_answer(tmp_path, registry):
    model = scripted(tmp_path, [{"match": {"contains": "cannot be used"}, "reply": '{"n": 2}'},
                                {"reply": '{"n": 2, "extra": true}'}])
    state = run(tmp_path, registry, 'use llm\n\npipeline main() -> any:\n    return llm.extract("two", '
                                    '{"n": "int"})\n', model).state
    assert state.result == {"n": 2}
    assert model.calls == 2


def test_extract_takes_a_json_schema_with_nested_objects_and_enums(tmp_path, registry):
    schema = {"type": "object", "required": ["owner", "level"],
              "properties": {"owner": {"type": "object", "properties": {"name": {"type": "string"}}},
                             "level": {"enum": ["low", "high"]}, "note": {"type": "string"}}}
    model = scripted(tmp_path, [{"reply": '{"owner": {"name": "ada"}, "level": "high"}'}])
    source = f'use llm\n\npipeline main() -> any:\n    return llm.extract("x", {json.dumps(schema)})\n'
    assert run(tmp_path, registry, source, model).state.result == {"owner": {"name": "ada"}, "level": "high",
                                                                   "note": None}
    wrong = scripted(tmp_path, [{"reply": '{"owner": {"name": "ada"}, "level": "medium"}'}], "wrong")
    with pytest.raises(PipeRuntimeError, match="level: Input should be 'low' or 'high'"):
        run(tmp_path, registry, source, wrong)


@pytest.mark.parametrize("schema, message", [
    ('{"n": "integer"}', "field `n` has type integer, which is not a .pipe type a schema can use"),
    ('{"n": 3}', "field `n` of the schema must name a .pipe type as a string"),
    ('{"type": "object", "properties": {"a": {"$ref": "#/x"}}}', "uses $ref"),
])
def test_a_bad_schema_is_refused_before_any_model_call(tmp_path, registry, schema, message):
    model = scripted(tmp_path, [{"reply": "{}"}])
    with pytest.raises(PipeRuntimeError, match=message.replace("$", r"\$")):
        run(tmp_path, registry, f'use llm\n\npipeline main() -> any:\n    return llm.extract("x", {schema})\n', model)
    assert model.calls == 0


def test_classify_sends_a_stray_answer_back_and_summarize_enforces_the_word_limit(tmp_path, registry):
    model = scripted(tmp_path, [{"match": {"contains": "is not one of the labels"}, "reply": "Feature."},
                                {"match": {"contains": "the limit is 2"}, "reply": "still far too many words"},
                                {"match": {"regex": "^Pick"}, "reply": "maybe a bug?"},
                                {"reply": "one two three four five six"}])
    state = run(tmp_path, registry, 'use llm\n\npipeline main() -> str:\n'
                                    '    return llm.classify("Pick one", ["bug", "feature"])\n', model).state
    assert state.result == "feature" and model.calls == 2
    with pytest.raises(PipeRuntimeError, match="after 2 attempts: the summary has 5 words, the limit is 2"):
        run(tmp_path, registry, 'use llm\n\npipeline main() -> str:\n    return llm.summarize("long text", 2)\n',
            model)


def test_without_a_model_the_error_says_how_to_configure_one(tmp_path, registry):
    with pytest.raises(PipeRuntimeError) as caught:
        run(tmp_path, registry, 'use llm\n\npipeline main() -> str:\n    return llm.ask("hi")\n')
    assert caught.value.message == "llm.ask needs a model, and this run has none configured"
    assert "--model" in caught.value.hint


def test_model_answers_are_journaled_so_replay_calls_no_model(tmp_path, registry):
    from orgtree_lang.run import runs as durable_runs

    model = scripted(tmp_path, [{"reply": "forty-two"}])
    machine = run(tmp_path, registry, 'use llm\n\npipeline main() -> str:\n    a = llm.ask("q1")\n'
                                      '    return a + "/" + llm.ask("q2")\n', model, durable=True)
    assert machine.state.result == "forty-two/forty-two"
    assert model.calls == 2
    report = durable_runs.replay(tmp_path, machine.state.run_id, registry)
    assert report.outside_calls == 0 and report.identical
    assert model.calls == 2


def test_the_cli_passes_the_model_and_says_answers_are_scripted(tmp_path, capsys):
    from orgtree_lang.cli.main import main

    (tmp_path / "m.json").write_text(json.dumps([{"reply": "Question"}]))
    (tmp_path / "p.pipe").write_text('use llm\n\npipeline main() -> str:\n'
                                     '    return llm.classify("how?", ["bug", "question"])\n')
    assert main(["run", str(tmp_path / "p.pipe"), "--model", f"scripted:{tmp_path / 'm.json'}"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "question"
    assert "not from a live model" in captured.err


def test_llm_calls_count_against_the_token_budget_and_are_charged_to_their_node(tmp_path, capsys):
    from orgtree_lang.cli.main import main
    from orgtree_lang.runlog.store import TreeStore

    (tmp_path / "m.json").write_text(json.dumps([{"reply": "a short answer"}]))
    (tmp_path / "p.pipe").write_text('use llm\n\npipeline main() -> str:\n    first = llm.ask("one")\n'
                                     '    second = llm.ask("two")\n    return first\n')
    program, model = str(tmp_path / "p.pipe"), f"scripted:{tmp_path / 'm.json'}"
    assert main(["run", program, "--model", model, "--json"]) == 0
    envelope = json.loads(capsys.readouterr().out)
    with TreeStore.for_workspace(tmp_path) as store:
        asks = store.calls("llm.ask", run_id=envelope["run_id"])
    assert len(asks) == 2 and all(node.tokens > 0 for node in asks)
    assert envelope["usage"]["tokens"] == sum(node.tokens for node in asks)
    # A limit the first call already passes stops the run before the second call is made.
    limit = str(min(node.tokens for node in asks))
    assert main(["run", program, "--model", model, "--json", "--max-tokens", limit]) == 70
    stopped = json.loads(capsys.readouterr().out)
    assert "model tokens budget exceeded" in stopped["error"]["message"]
    assert "for llm.ask" in stopped["error"]["message"]
