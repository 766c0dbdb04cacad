"""Fetch one URL with httpx under an HttpPolicy: every redirect hop re-checked, the body cut at a byte cap."""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urljoin

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
