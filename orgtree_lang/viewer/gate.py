"""Who may read the viewer: the token `pipe serve` printed (a cookie set from its URL, or a header) and a Host
header that names this machine; ASGI middleware in front of every route.

A workspace's runs hold inputs, modules and insights that its folder's permissions keep from other accounts;
a server on 127.0.0.1 that answered anyone would hand them out. The Host check stops DNS rebinding: a page of
another site whose name was pointed at this machine must not read the runs through the visitor's browser.
"""

from __future__ import annotations

import hmac
import socket
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

COOKIE = "pipe-serve-token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")


def own_names(host: str, allowed: tuple[str, ...] = ()) -> frozenset[str]:
    """The Host names the server answers to: loopback, the address it listens on, and for a wildcard address
    (`0.0.0.0`, `::`) this machine's own names and addresses; plus what `--allow-host` lists."""
    names = {*LOOPBACK_NAMES, host.lower(), *(name.lower() for name in allowed)}
    if host in WILDCARDS:
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name.lower())
            try:
                names.update(info[4][0].split("%")[0].lower() for info in socket.getaddrinfo(name, None))
            except OSError:  # a name that does not resolve adds only itself
                pass
        names.update(_interface_addresses())
    names.discard("")
    return frozenset(names)


def _interface_addresses() -> set[str]:
    """Every address of this machine's network interfaces (Linux: /proc for IPv6, an ioctl for IPv4)."""
    import fcntl
    import struct

    found = set()
    try:
        with open("/proc/net/if_inet6") as table:
            for line in table:
                raw = line.split()[0]
                found.add(socket.inet_ntop(socket.AF_INET6, bytes.fromhex(raw)))
    except OSError:
        pass
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
            except OSError:  # no IPv4 address on this interface
                continue
            found.add(socket.inet_ntoa(packed[20:24]))
    finally:
        probe.close()
    return found


def host_name(header: str) -> str:
    """The name in a Host header, without its port: `[::1]:8765` is `::1`, `example.org:80` is `example.org`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Gate:
    """ASGI middleware: a request whose Host is not one of `names` gets 400; one without the token gets 401 (a
    `?token=` in the URL sets the cookie and sends the browser on without it)."""

    def __init__(self, app, token: str, names: frozenset[str], *, carry_to_page: bool = False) -> None:
        self.app = app
        self.token = token.encode()
        self.names = names
        self.carry_to_page = carry_to_page  # actions on: the page also gets the token (#token=) for its headers

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {}
        for name, value in scope.get("headers", ()):
            headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        if host_name(headers.get("host", "")) not in self.names:
            return await _answer(send, 400, "this viewer answers only to this machine's own names "
                                            "(start it with --allow-host NAME to add one)")
        offered = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        if offered and self._matches(offered) and scope["method"] == "GET":
            target = scope["path"] + (f"#token={offered}" if self.carry_to_page else "")
            cookie = f"{COOKIE}={offered}; Path=/; HttpOnly; SameSite=Strict"
            return await _answer(send, 303, "", [(b"location", target.encode()), (b"set-cookie", cookie.encode())])
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header carries no token
            jar = SimpleCookie()
        # Any one credential will do for reading; an action checks its X-Pipe-Token header again (viewer/actions.py).
        offered = (headers.get("x-pipe-token", ""), headers.get("authorization", "").removeprefix("Bearer "),
                   jar[COOKIE].value if COOKIE in jar else "")
        if not any(self._matches(given) for given in offered):
            return await _answer(send, 401, "this viewer needs the token `pipe serve` printed: open the URL it "
                                            "printed (…/?token=…), which keeps the token in a cookie")
        await self.app(scope, receive, send)

    def _matches(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token)


async def _answer(send, status: int, text: str, extra: list | None = None) -> None:
    body = (f"<!doctype html><title>pipe serve</title><p>{text}</p>\n" if text else "").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
