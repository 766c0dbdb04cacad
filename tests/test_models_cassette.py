"""Record a scripted session through RecordingModel, then replay it offline from the cassette."""

from __future__ import annotations

import json

import pydantic
import pytest

from orgtree_lang.models import Message, ModelError
from orgtree_lang.models.cassette import CassetteModel, RecordingModel, request_hash
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.models.select import model_from_spec


class Plan(pydantic.BaseModel):
    steps: list[str]


def ask(text: str) -> list[Message]:
    return [Message("system", "You plan."), Message("user", text)]


@pytest.fixture
def recorded(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text('- match: {contains: plan}\n  reply: \'{"steps": ["a", "b"]}\'\n'
                      '- match: {contains: again}\n  replies: [first, second]\n')
    cassette = tmp_path / "run.cassette.json"
    recorder = RecordingModel(ScriptedModel.from_file(script), cassette)
    answers = [recorder.complete(ask("make a plan"), schema=Plan, conversation_id="author-1"),
               recorder.complete(ask("again")), recorder.complete(ask("again"))]
    return cassette, answers


def test_cassette_holds_every_request_and_response(recorded):
    cassette, answers = recorded
    data = json.loads(cassette.read_text())
    assert data["version"] == 1 and data["model"].startswith("scripted:")
    first = data["interactions"][0]
    assert first["messages"] == [{"role": "system", "content": "You plan."},
                                 {"role": "user", "content": "make a plan"}]
    assert first["schema"] == "Plan"
    assert first["text"] == answers[0].text
    assert first["usage"]["prompt_tokens"] == answers[0].usage.prompt_tokens
    assert first["hash"] == request_hash(ask("make a plan"))
    assert [i["text"] for i in data["interactions"]] == ['{"steps": ["a", "b"]}', "first", "second"]
    assert not list(cassette.parent.glob(".*.tmp"))  # atomic writes leave nothing behind


def test_replay_serves_the_same_answers_offline(recorded):
    cassette, answers = recorded
    replay = model_from_spec(f"replay:{cassette}")
    assert isinstance(replay, CassetteModel)
    plan = replay.complete(ask("make a plan"), schema=Plan)
    assert plan.parsed == Plan(steps=["a", "b"])
    assert plan.conversation_id == "author-1"
    assert plan.usage == answers[0].usage
    assert plan.scripted is True  # recorded from a scripted model, still labeled so
    assert replay.name == f"replay:{cassette}"
    assert [replay.complete(ask("again")).text for _ in range(3)] == ["first", "second", "second"]


def test_missing_request_names_it(recorded):
    cassette, _ = recorded
    with pytest.raises(ModelError) as err:
        CassetteModel(cassette).complete(ask("something new\nsecond line"))
    assert err.value.kind == "missing_response"
    assert "something new" in str(err.value)
    assert request_hash(ask("something new\nsecond line")) in str(err.value)


def test_bad_cassettes_are_config_errors(tmp_path):
    with pytest.raises(ModelError) as err:
        CassetteModel(tmp_path / "none.json")
    assert err.value.kind == "config"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ModelError) as err:
        CassetteModel(broken)
    assert err.value.kind == "config" and "broken.json" in str(err.value)
