"""What a real model provider adds to `pipe run`: a program with two instant model calls, run against a local
OpenAI-compatible server, over the same program with two pure text skills in their place (no model at all).

    python benchmarks/model_startup.py [--repeat 3] [--model openai/bench-model] [--baseline REV]

The server (http.server on 127.0.0.1) answers every chat completion at once, so what the figure shows is the
cost of reaching a provider at all: importing a client library, building requests, reading its price map. Each
run is a fresh `pipe run` process (`python -m orgtree_lang.cli.main`), timed by wall clock, best of --repeat.
Target (issue 26): the provider run within 1.5 s of the scripted one. With --baseline REV, git revision REV's
code runs the same two programs too, in the same invocation.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import checkout, child_env, this_tree  # noqa: E402

PROGRAM = '''\
use llm

pipeline main() -> str:
    a = llm.ask("Name a colour.")
    b = llm.ask("Name a fruit.")
    return a + " " + b
'''
NO_MODEL = PROGRAM.replace("use llm", "use text").replace("llm.ask", "text.lower")
TARGET_S = 1.5


class Provider(BaseHTTPRequestHandler):
    """Answers every POST as a chat completion, at once."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        data = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": body.get("model"),
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "blue"}}],
                           "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def timed(root: str, folder: Path, program: str, model_args: list[str]) -> float:
    command = [sys.executable, "-m", "orgtree_lang.cli.main", "run", program, *model_args]
    started = time.perf_counter()
    env = dict(child_env(root), OPENAI_API_KEY="sk-local")  # litellm asks for a key even for a local server
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pipe run {' '.join(model_args)} failed ({done.returncode}):\n{done.stderr}")
    return seconds


def measure(label: str, root: str, base: str, model: str, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "prog.pipe").write_text(PROGRAM)
        (folder / "plain.pipe").write_text(NO_MODEL)
        plain, real = [], []
        for _ in range(repeat):  # interleaved, so load on the machine hits both alike
            plain.append(timed(root, folder, "plain.pipe", []))
            real.append(timed(root, folder, "prog.pipe", ["--model", model, "--api-base", base]))
    print(f"{label}: no model {min(plain):.2f} s, {model} at a local server {min(real):.2f} s (best of {repeat})")
    print(f"{label}: the provider adds {min(real) - min(plain):.2f} s (target <= {TARGET_S} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", default="openai/bench-model")
    parser.add_argument("--baseline", metavar="REV", help="also time git revision REV")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        measure("this tree", this_tree(), base, args.model, args.repeat)
        if args.baseline:
            with tempfile.TemporaryDirectory(prefix="pipe-baseline-") as tmp:
                measure(f"baseline {args.baseline}", checkout(args.baseline, tmp), base, args.model, args.repeat)
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
