"""web.search: the offline workspace provider over the memory, a SearXNG provider through the allowlist, config errors."""

from __future__ import annotations

import pytest
from sandbox_testing import local_server

from orgtree_lang.memory.memory import Memory
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

REGISTRY = default_registry(plugins=False)
GARDEN = ("Tomatoes need six hours of direct sun and deep watering twice a week. " * 3 +
          "\n\nPrune the side shoots so the plant puts its energy into fruit.")
HARBOUR = ("The harbour master logs every ship that enters, with its tonnage and cargo. " * 3 +
           "\n\nPilots board large vessels outside the breakwater.")


def search(root, query: str, k: int = 5):
    return REGISTRY.get("web.search").invoke([query], {"k": k}, SkillContext(Workspace(root)))


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # orgtree.toml is read from the current folder
    return tmp_path


def test_the_default_provider_searches_the_workspace_memory_offline(workspace):
    with Memory(workspace) as memory:
        memory.add(GARDEN, name="garden.txt")
        memory.add(HARBOUR, name="harbour.txt")
    results = search(workspace, "watering tomato plants in the sun", k=2)
    assert results[0]["title"] == "garden.txt" and results[0]["url"].startswith("memory:garden.txt#")
    assert "Tomatoes need six hours" in results[0]["snippet"] or "Prune" in results[0]["snippet"]
    harbour = search(workspace, "ships entering the port", k=1)
    assert harbour[0]["title"] == "harbour.txt"


def test_an_empty_memory_says_how_to_add_documents(workspace):
    with pytest.raises(SkillError, match="holds no documents") as err:
        search(workspace, "anything")
    assert "pipe ctx add" in err.value.hint


def test_the_searxng_provider_goes_through_the_allowlist(workspace):
    with local_server() as server:
        base = f"http://127.0.0.1:{server.server_port}"
        (workspace / "orgtree.toml").write_text(f'[web]\nsearch = "searxng"\nurl = "{base}"\n\n'
                                                f'[http]\nallow = ["{base}"]\n')
        results = search(workspace, "tide tables", k=2)
        assert [r["title"] for r in results] == ["tide tables result 1", "tide tables result 2"]
        assert results[0] == {"title": "tide tables result 1", "url": "https://results.example/1",
                              "snippet": "about tide tables"}
        assert server.hits == ["/search?q=tide+tables&format=json"]
        # Not on the allowlist: refused before any request.
        (workspace / "orgtree.toml").write_text(f'[web]\nsearch = "searxng"\nurl = "{base}"\n')
        with pytest.raises(SkillError, match="allow"):
            search(workspace, "tide tables")
        assert len(server.hits) == 1


@pytest.mark.parametrize("config, message", [
    ('[web]\nsearch = "bing"\n', "unknown provider 'bing'"),
    ('[web]\nsearch = "searxng"\n', "needs a url"),
    ('[web]\nsearch = 3\n', "search must be a string"),
])
def test_bad_web_settings_are_clear_errors(workspace, config, message):
    (workspace / "orgtree.toml").write_text(config)
    with pytest.raises(SkillError, match=message):
        search(workspace, "x")


def test_settings_come_from_the_workspace_not_the_current_folder(tmp_path, monkeypatch):
    workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with local_server() as server:
        base = f"http://127.0.0.1:{server.server_port}"
        # An orgtree.toml in the current folder that would allow the server counts for nothing.
        (elsewhere / "orgtree.toml").write_text(f'[web]\nsearch = "searxng"\nurl = "{base}"\n\n'
                                                f'[http]\nallow = ["{base}"]\n')
        with pytest.raises(SkillError, match="holds no documents"):
            search(workspace, "tide tables")
        (workspace / "orgtree.toml").write_text((elsewhere / "orgtree.toml").read_text())
        assert search(workspace, "tide tables", k=1)[0]["title"] == "tide tables result 1"
        assert server.hits == ["/search?q=tide+tables&format=json"]
