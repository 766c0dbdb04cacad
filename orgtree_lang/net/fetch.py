"""Fetch one URL with httpx under an HttpPolicy: every redirect hop re-checked, the body cut at a byte cap; and the links
of a fetched page (web.links)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.sandbox.allowlist import HttpPolicy, UrlRefused


@dataclass
class Fetched:
    """What one fetch returned: the final URL, status, content type, text and whether the body was cut."""

    url: str
    status: int
    content_type: str
    text: str
    truncated: bool

    def as_value(self) -> dict:
        return {"url": self.url, "status": self.status, "content_type": self.content_type, "text": self.text,
                "truncated": self.truncated}


def fetch(url: str, policy: HttpPolicy) -> Fetched:
    """GET `url`, following at most `policy.max_redirects` redirects, each to an allowed origin."""
    import httpx

    policy.check(url)
    deadline = time.monotonic() + policy.timeout
    # trust_env=False: no proxy from the environment may carry the request past the allowlist.
    with httpx.Client(follow_redirects=False, trust_env=False, timeout=policy.timeout) as client:
        for _hop in range(policy.max_redirects + 1):
            try:
                with client.stream("GET", url) as response:
                    if response.is_redirect:
                        url = urljoin(url, response.headers["location"])
                        policy.check(url)
                        continue
                    body, truncated = _read_capped(response, policy.max_bytes, deadline)
                    encoding = response.encoding or "utf-8"
                    return Fetched(str(response.url), response.status_code,
                                   response.headers.get("content-type", ""),
                                   body.decode(encoding, errors="replace"), truncated)
            except httpx.HTTPError as exc:
                raise SkillError(f"http.fetch: `{url}` failed: {type(exc).__name__}: {exc}") from None
    raise UrlRefused(f"http.fetch: more than {policy.max_redirects} redirects, the last to `{url}`",
                     hint="raise [http] max_redirects in orgtree.toml, or fetch the final URL directly")


def _read_capped(response, limit: int, deadline: float) -> tuple[bytes, bool]:
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        if time.monotonic() > deadline:
            raise SkillError(f"http.fetch: `{response.url}` took longer than the time cap")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


class _Anchors(HTMLParser):
    """Collects each `<a href>` and the text inside it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []
        self._open: list[str] | None = None
        self._href = ""

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href, self._open = dict(attrs).get("href") or "", []

    def handle_data(self, data):
        if self._open is not None:
            self._open.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._open is not None:
            self.found.append((self._href, " ".join("".join(self._open).split())))
            self._open = None


def page_links(html: str, base: str = "") -> list[dict[str, str]]:
    """The absolute http(s) links of a page with their text, in order, each URL once (web.links)."""
    parser = _Anchors()
    parser.feed(html)
    seen, links = set(), []
    for href, text in parser.found:
        url = urldefrag(urljoin(base, href.strip())).url if href.strip() and not href.startswith("#") else ""
        if urlsplit(url).scheme in ("http", "https") and url not in seen:
            seen.add(url)
            links.append({"url": url, "text": text})
    return links
