"""Network skills: fetch a URL on the operator's allowlist, and turn an HTML page into its readable text."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill


@skill("http.fetch", slow=True, remote=True, cpu=0.1)
def fetch(ctx: SkillContext, url: str) -> dict[str, Any]:
    """Fetch a web page or file with GET, only from origins on the allowlist in orgtree.toml.

    Every redirect is checked against the allowlist again; the body is cut at [http] max_bytes and
    the whole fetch at [http] timeout seconds.

    Args:
        url: An http or https URL whose scheme, host and port are listed under [http] allow.

    Returns:
        A dict with `url` (after redirects), `status`, `content_type`, `text` and `truncated`.
    """
    from orgtree_lang.sandbox.allowlist import HttpPolicy
    from orgtree_lang.net.fetch import fetch as fetch_url

    return fetch_url(url, HttpPolicy.from_config(ctx.config)).as_value()


@skill("web.search", slow=True)
def search(ctx: SkillContext, query: str, k: int = 5) -> list[dict[str, Any]]:
    """Search for pages about a query with the provider set by [web] search in orgtree.toml.

    The default provider, "workspace", searches the documents in the workspace memory (offline);
    "searxng" asks the SearXNG instance at [web] url, which must be on the [http] allowlist.

    Args:
        query: What to look for, in words.
        k: How many results at most.

    Returns:
        Best first, a dict per result with `title`, `url` and `snippet`.
    """
    from orgtree_lang.net.search import provider_from_config

    if k < 1:
        raise SkillError(f"web.search: k must be at least 1, got {k}")
    root = ctx.workspace.root
    return [r.as_value() for r in provider_from_config(root, ctx.config).search(query, k)]


@skill("web.extract", pure=True, slow=True, remote=True)
def extract(html: str) -> str:
    """The readable main text of an HTML page, without menus, scripts and boilerplate.

    Args:
        html: The page's HTML.

    Returns:
        Plain text, paragraphs separated by newlines; empty if the page has no text.
    """
    import trafilatura

    if "<html" not in html.lower():  # a fragment: the parser only finds text inside a document's body
        html = f"<html><body>{html}</body></html>"
    text = trafilatura.extract(html, include_comments=False, include_tables=True)
    if text is None:  # too little for the article heuristics: fall back to all visible text
        text = trafilatura.html2txt(html) if html.strip() else ""
    return text.strip()


@skill("web.links", pure=True)
def links(html: str, base: str = "") -> list[dict[str, str]]:
    """The links of an HTML page: each `<a href>` as an absolute URL with its text, in page order, once each.

    Args:
        html: The page's HTML.
        base: The page's URL, against which relative links are resolved.

    Returns:
        A dict per link with `url` and `text`; fragments (`#...`), `javascript:` and `mailto:` links are left out.
    """
    from orgtree_lang.net.fetch import page_links

    return page_links(html, base)
