"""The `[http]` table of orgtree.toml: which scheme, host and port a URL may use, and the caps of one fetch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from orgtree_lang.runtime.config import CONFIG_NAME, ConfigError, config_section
from orgtree_lang.runtime.errors import SkillError

_DEFAULT_PORTS = {"http": 80, "https": 443}


class UrlRefused(SkillError):
    """A URL (or a redirect's target) is not on the allowlist."""


@dataclass(frozen=True)
class Origin:
    """One allowlist entry: a scheme, a host (`*.` prefix for subdomains) and a port."""

    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, entry: str) -> Origin:
        parts = urlsplit(entry.strip())
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"allowlist entry {entry!r} must look like `https://example.org` or `http://127.0.0.1:8000`")
        return cls(parts.scheme, parts.hostname.lower(), parts.port or _DEFAULT_PORTS[parts.scheme])

    def admits(self, scheme: str, host: str, port: int) -> bool:
        if scheme != self.scheme or port != self.port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host


@dataclass(frozen=True)
class HttpPolicy:
    """Where http.fetch may go, and how long and how much it may read."""

    allow: tuple[Origin, ...] = ()
    timeout: float = 10.0
    max_bytes: int = 2_000_000
    max_redirects: int = 5

    @classmethod
    def from_config(cls, path: Path | str = CONFIG_NAME) -> HttpPolicy:
        try:
            section = config_section("http", path, types={"allow": list, "timeout": (int, float),
                                                          "max_bytes": int, "max_redirects": int})
            origins = tuple(Origin.parse(str(entry)) for entry in section.get("allow", []))
        except (ConfigError, ValueError) as exc:
            raise SkillError(f"{path}: [http]: {exc}", hint="see docs/sandbox.md for the [http] keys") from None
        return cls(origins, float(section.get("timeout", cls.timeout)), section.get("max_bytes", cls.max_bytes),
                   section.get("max_redirects", cls.max_redirects))

    def check(self, url: str) -> None:
        """UrlRefused unless the URL's scheme, host and port (the scheme's default if absent) are allowed."""
        try:
            parts = urlsplit(url)
            port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
        except ValueError as exc:
            raise UrlRefused(f"http.fetch: `{url}` is not a valid URL: {exc}") from None
        host = (parts.hostname or "").lower()
        if parts.username is not None or parts.password is not None:
            raise UrlRefused(f"http.fetch: `{url}` carries a user name or password, which is never sent")
        if not any(origin.admits(parts.scheme, host, port) for origin in self.allow):
            allowed = ", ".join(f"{o.scheme}://{o.host}:{o.port}" for o in self.allow) or "nothing"
            raise UrlRefused(f"http.fetch: `{url}` ({parts.scheme}://{host}:{port}) is not on the allowlist",
                             hint=f"orgtree.toml [http] allow permits {allowed}; add the origin there if it is safe")
