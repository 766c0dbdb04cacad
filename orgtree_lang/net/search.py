"""`web.search` providers, chosen by `[web] search` in orgtree.toml: the workspace's own memory (offline), or SearXNG."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlencode

from orgtree_lang.runtime.config import CONFIG_NAME, ConfigError, config_section
from orgtree_lang.runtime.errors import SkillError

SNIPPET_CHARS = 400
PROVIDERS = ("workspace", "searxng")


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str

    def as_value(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


class SearchProvider(Protocol):
    """Anything that answers a query with up to `k` results, best first."""

    def search(self, query: str, k: int) -> list[SearchResult]: ...


class WorkspaceSearch:
    """The offline default: the workspace memory's hybrid search over the documents added with ctx.add or
    `pipe ctx add`; a result's url is `memory:NAME#NODE` (ctx.expand(NODE) reads more)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def search(self, query: str, k: int) -> list[SearchResult]:
        from orgtree_lang.memory.memory import Memory

        with Memory(self.root) as memory:
            if not memory.documents():
                raise SkillError("web.search: the workspace memory holds no documents to search",
                                 hint="add some with `pipe ctx add FILE` or ctx.add, or set [web] search = "
                                      '"searxng" with a url in orgtree.toml')
            hits = memory.search(query, k, levels=[0])
            results = []
            for hit in hits:
                spans = memory.spans(hit.node)
                name = spans[0].name if spans else f"document {hit.node.id}"
                results.append(SearchResult(name, f"memory:{name}#{hit.node.id}", _snippet(hit.text)))
            return results


class SearxngSearch:
    """A SearXNG instance's JSON API, fetched through http.fetch's allowlist (its origin must be allowed)."""

    def __init__(self, url: str, config_path: Path | str = CONFIG_NAME) -> None:
        self.url = url.rstrip("/")
        self.config_path = config_path

    def search(self, query: str, k: int) -> list[SearchResult]:
        from orgtree_lang.sandbox.allowlist import HttpPolicy
        from orgtree_lang.net.fetch import fetch

        fetched = fetch(f"{self.url}/search?{urlencode({'q': query, 'format': 'json'})}",
                        HttpPolicy.from_config(self.config_path))
        if fetched.status != 200:
            raise SkillError(f"web.search: {self.url} answered HTTP {fetched.status}")
        try:
            data = json.loads(fetched.text)
            items = data["results"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise SkillError(f"web.search: {self.url} did not answer SearXNG JSON (an object with `results`)",
                             hint="enable the json format in the instance's settings.yml") from None
        return [SearchResult(str(i.get("title", "")), str(i.get("url", "")), _snippet(str(i.get("content", ""))))
                for i in items[:k] if isinstance(i, dict)]


def provider_from_config(root: Path, path: Path | str = CONFIG_NAME) -> SearchProvider:
    """The provider `[web] search` names (default "workspace")."""
    try:
        section = config_section("web", path, types={"search": str, "url": str})
    except ConfigError as exc:
        raise SkillError(f"web.search: {exc}") from None
    name = section.get("search", "workspace")
    if name == "workspace":
        return WorkspaceSearch(root)
    if name == "searxng":
        if not section.get("url"):
            raise SkillError(f"web.search: [web] search = \"searxng\" needs a url in {path}",
                             hint='e.g. url = "https://searx.example.org" (also listed under [http] allow)')
        return SearxngSearch(section["url"], path)
    raise SkillError(f"web.search: unknown provider {name!r} in [web] search of {path}",
                     hint=f"use one of: {', '.join(PROVIDERS)}")


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
