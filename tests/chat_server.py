"""An OpenAI-compatible /v1/chat/completions on 127.0.0.1 for tests: each request's JSON body goes to `answer`,
whose text is the assistant's reply (a llama.cpp or vLLM server stands in for a provider)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REVIEWER_OPENING = "You are an independent reviewer"


def is_review(body: dict) -> bool:
    """Whether a request is a reviewer's: its system message opens as the reviewers' do (an author's turn protocol
    mentions an independent reviewer too, so a substring test counts authors as reviewers)."""
    return body["messages"][0]["content"].startswith(REVIEWER_OPENING)


class ChatServer:
    """Serves `answer(body) -> text` as chat completions with small fixed usage figures; `base` is the --api-base."""

    def __init__(self, answer: Callable[[dict], str]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                text = answer(body)
                data = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": body.get("model"),
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": text}}],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                             "total_tokens": 15}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
