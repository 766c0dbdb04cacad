"""A local web for the research tests: pages and a SearXNG-style /search on 127.0.0.1, as the workspace's only
search provider and allowed origin."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# What the web answers a GET of `path` on `base` (http://127.0.0.1:PORT): (body, content type), or None for a 404.
Answer = Callable[[str, str], "tuple[str, str] | None"]


class LocalWeb:
    """`with LocalWeb(answer, workspace) as web:` serves `answer` on 127.0.0.1 (web.base), writes the workspace's
    orgtree.toml to search it and allow only it (and `extra` settings), and keeps every path asked in `web.seen`."""

    def __init__(self, answer: Answer, workspace: Path, *, extra: str = '\n[memory]\nsummarizer = "extractive"\n',
                 seen: list[str] | None = None) -> None:
        self.answer, self.workspace, self.extra = answer, Path(workspace), extra
        self.seen = seen if seen is not None else []

    def __enter__(self) -> LocalWeb:
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server interface)
                web.seen.append(self.path)
                answered = web.answer(self.path, f"http://127.0.0.1:{self.server.server_address[1]}")
                if answered is None:
                    self.send_error(404)
                    return
                data = answered[0].encode()
                self.send_response(200)
                self.send_header("Content-Type", answered[1])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        (self.workspace / "orgtree.toml").write_text(f'[web]\nsearch = "searxng"\nurl = "{self.base}"\n\n'
                                                     f'[http]\nallow = ["{self.base}"]\n{self.extra}')
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
