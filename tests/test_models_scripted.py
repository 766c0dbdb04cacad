"""The scripted model: rules by role and request text, replies in order, clear errors, schema validation."""

from __future__ import annotations

import json

import pydantic
import pytest

from orgtree_lang.models import Message, ModelError
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.models.select import model_from_spec
from orgtree_lang.models.tokens import count_tokens

pytestmark = pytest.mark.fast

RULES = """
rules:
  - role: reviewer
    replies:
      - '{"verdict": "reject", "concerns": 2}'
      - |
        Here it is:
        ```json
        {"verdict": "accept", "concerns": 0}
        ```
  - match: {contains: "summarize"}
    reply: "a summary"
  - match: {regex: "^count (\\\\d+)$"}
    replies: ["one", "two"]
    repeat: false
  - match: {regex: "^count"}
    reply: "many"
  - match: {contains: ["json", "broken"]}
    reply: '{"verdict": 3}'
"""


class Verdict(pydantic.BaseModel):
    verdict: str
    concerns: int


def user(text: str) -> list[Message]:
    return [Message("system", "You are terse."), Message("user", text)]


@pytest.fixture
def rules_file(tmp_path):
    path = tmp_path / "script.yaml"
    path.write_text(RULES)
    return path


def test_match_by_text_and_every_completion_is_scripted(rules_file):
    model = ScriptedModel.from_file(rules_file)
    done = model.complete(user("please summarize this"), conversation_id="c1")
    assert done.text == "a summary"
    assert done.scripted is True
    assert done.model == f"scripted:{rules_file}"
    assert done.conversation_id == "c1"
    assert done.usage.prompt_tokens == count_tokens("You are terse.") + count_tokens("please summarize this")
    assert done.usage.completion_tokens == count_tokens("a summary")
    assert done.usage.cost == 0


def test_replies_in_order_then_fall_through_or_repeat(rules_file):
    model = model_from_spec(f"scripted:{rules_file}")
    assert [model.complete(user("count 1")).text for _ in range(4)] == ["one", "two", "many", "many"]


def test_role_rules_and_schema_validation_with_fenced_json(rules_file):
    reviewer = ScriptedModel.from_file(rules_file, role="reviewer")
    first = reviewer.complete(user("review this"), schema=Verdict)
    assert first.parsed == Verdict(verdict="reject", concerns=2)
    second = reviewer.complete(user("review this"), schema=Verdict)
    assert second.parsed == Verdict(verdict="accept", concerns=0)
    assert reviewer.complete(user("again"), schema=Verdict).parsed.verdict == "accept"  # the last repeats
    # The author does not see reviewer rules.
    with pytest.raises(ModelError) as err:
        ScriptedModel.from_file(rules_file).complete(user("review this"))
    assert err.value.kind == "missing_response"


def test_invalid_output_names_the_problem(rules_file):
    model = ScriptedModel.from_file(rules_file)
    with pytest.raises(ModelError) as err:
        model.complete(user("json please, broken"), schema=Verdict)
    assert err.value.kind == "invalid_output"
    assert "verdict" in err.value.message and "concerns" in err.value.message
    with pytest.raises(ModelError) as err:
        model.complete(user("summarize as json"), schema=Verdict)
    assert err.value.kind == "invalid_output"
    assert "valid JSON" in err.value.message


def test_missing_response_names_the_request(rules_file):
    model = ScriptedModel.from_file(rules_file)
    with pytest.raises(ModelError) as err:
        model.complete(user("Write the module for block `fetch`\nwith more lines"))
    assert err.value.kind == "missing_response"
    assert "Write the module for block `fetch`" in str(err.value)
    assert "with more lines" not in str(err.value)


def test_json_file_and_deterministic_across_instances(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"replies": ["a", "b"]}]))
    models = [ScriptedModel.from_file(path) for _ in range(2)]
    runs = [[model.complete(user("x")).text for _ in range(3)] for model in models]
    assert runs == [["a", "b", "b"], ["a", "b", "b"]]


def test_empty_reply_is_an_error(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text('- reply: "   "\n')
    with pytest.raises(ModelError) as err:
        ScriptedModel.from_file(path).complete(user("anything"))
    assert err.value.kind == "empty"


@pytest.mark.parametrize("content, fragment", [
    ("- match: {contains: x}\n", "exactly one of `reply` or `replies`"),
    ("- reply: a\n  colour: red\n", "unknown key(s) colour"),
    ("- reply: a\n  match: {regex: '('}\n", "bad `match.regex`"),
    ("rules: 3\n", "expected a list of rules"),
    ("- [unclosed\n", "not valid YAML/JSON"),
])
def test_bad_files_are_config_errors(tmp_path, content, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ModelError) as err:
        ScriptedModel.from_file(path)
    assert err.value.kind == "config"
    assert fragment in str(err.value) and str(path) in str(err.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ModelError) as err:
        model_from_spec(f"scripted:{tmp_path / 'nope.yaml'}")
    assert err.value.kind == "config" and "nope.yaml" in str(err.value)


def test_the_example_in_docs_models_md_is_a_valid_scripted_file(tmp_path):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "models.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"^````yaml\n(.*?)^````", doc, re.M | re.S)
    path = tmp_path / "example.yaml"
    path.write_text(example)
    author = ScriptedModel.from_file(path)
    assert author.complete(user("Write a module for the step `summarize`")).text.startswith("```pipe")
    assert "return notes" in author.complete(user("The module is not accepted yet:\n...")).text
    with pytest.raises(ModelError) as err:
        author.complete(user("The module is not accepted yet:\n..."))
    assert err.value.kind == "missing_response"
    reviewer = ScriptedModel.from_file(path, role="reviewer")
    assert [reviewer.complete(user("review")).text for _ in range(3)][1:] == ['{"concerns": []}'] * 2
