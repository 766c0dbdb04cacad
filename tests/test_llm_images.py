"""Images shown to a model: a bytes value of an image/* type passed to llm.* is an OpenAI `image_url` content part,
through the plain-HTTP backend and through litellm, against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64

import pytest
from chat_server import ChatServer
from durable_testing import only_run_id, pipe

from orgtree_lang.models.base import Message
from orgtree_lang.runtime.artifacts import BytesValue

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
PROGRAM = '''\
use fs, llm

pipeline main() -> str:
    photo = fs.read_bytes("photo.png")
    seen = llm.ask("What is in the picture?", images=[photo])
    label = llm.classify("a picture", ["cat", "dog"], images=[photo])
    return seen + " / " + label
'''


class Server:
    """The chat server, keeping each request body."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.chat = ChatServer(self.answer)

    def answer(self, body: dict) -> str:
        self.bodies.append(body)
        return "cat" if "Classify" in body["messages"][0]["content"] else "a one-pixel picture"


@pytest.fixture
def server():
    running = Server()
    yield running
    running.chat.close()


def _image_parts(body: dict) -> list[str]:
    user = body["messages"][-1]
    assert isinstance(user["content"], list), user
    assert user["content"][0]["type"] == "text"
    return [part["image_url"]["url"] for part in user["content"] if part["type"] == "image_url"]


def test_llm_skills_send_the_image_as_a_data_url_part_and_replay_makes_no_call(server, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "prog.pipe").write_text(PROGRAM)
    (root / "photo.png").write_bytes(PNG)
    done = pipe("run", "prog.pipe", "--model", "openai/local-vision", "--api-base", server.chat.base, cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "a one-pixel picture / cat"
    expected = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert [_image_parts(body) for body in server.bodies] == [[expected], [expected]]
    assert server.bodies[0]["messages"][-1]["content"][0]["text"] == "What is in the picture?"

    replayed = pipe("replay", only_run_id(root), "--quiet", cwd=root)
    assert replayed.returncode == 0 and "identical" in replayed.stderr, replayed.stderr
    assert len(server.bodies) == 2


def test_a_bytes_value_that_is_not_an_image_is_refused_before_any_call(server, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("plain text")
    (root / "prog.pipe").write_text('use fs, llm\n\npipeline main() -> str:\n'
                                    '    return llm.ask("Read this", images=[fs.read_bytes("notes.txt")])\n')
    refused = pipe("run", "prog.pipe", "--model", "openai/local-vision", "--api-base", server.chat.base, cwd=root)
    assert refused.returncode == 70
    assert "image 1 is text/plain, not an image/* value" in refused.stderr and "media_type=" in refused.stderr
    assert server.bodies == []


def test_litellm_sends_the_image_part_in_its_multimodal_message(server):
    from orgtree_lang.models.litellm_backend import LiteLLMModel

    model = LiteLLMModel("openai/local-vision", api_base=server.chat.base, api_key="none", max_retries=0)
    image = BytesValue(PNG, "image/png")
    done = model.complete([Message("system", "Answer."), Message("user", "What is it?", (image,))])
    assert done.text == "a one-pixel picture"
    assert _image_parts(server.bodies[0]) == [image.data_url()]


def test_a_message_without_images_keeps_plain_text_content():
    assert Message("user", "hi").to_dict() == {"role": "user", "content": "hi"}
    shown = Message("user", "hi", (BytesValue(PNG, "image/png"),)).to_dict()
    assert shown["content"][1] == {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}
