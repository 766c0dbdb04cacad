"""Network skills: fetch a URL on the operator's allowlist, and turn an HTML page into its readable text."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.skills import skill


@skill("http.fetch")
def fetch(url: str) -> dict[str, Any]:
    """Fetch a web page or file with GET, only from origins on the allowlist in orgtree.toml.

    Every redirect is checked against the allowlist again; the body is cut at [http] max_bytes and
    the whole fetch at [http] timeout seconds.

    Args:
        url: An http or https URL whose scheme, host and port are listed under [http] allow.

    Returns:
        A dict with `url` (after redirects), `status`, `content_type`, `text` and `truncated`.
    """
    from orgtree_lang.sandbox.allowlist import HttpPolicy
    from orgtree_lang.sandbox.fetch import fetch as fetch_url

    return fetch_url(url, HttpPolicy.from_config()).as_value()


@skill("web.extract", pure=True)
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
