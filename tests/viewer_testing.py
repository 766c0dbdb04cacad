"""`pipe serve` as a real server process for the viewer tests, and workspaces holding real runs of the examples."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cli_testing import pipe

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
SCRIPTED = ("--model", "scripted:models/triage_author.yaml", "--review-model", "scripted:models/triage_reviewer.yaml")
NO_MODEL = {"PIPE_MODEL": None, "PIPE_REVIEW_MODEL": None}

# A run that naps until the file go.txt appears in its workspace: "live" for as long as a test wants.
GATE_PROGRAM = '''\
use fs, time

pipeline wait_for(gate: str) -> int:
    """Nap until the file `gate` exists; say how many naps it took."""
    naps = 0
    while not fs.exists(gate):
        time.sleep(0.02)
        naps += 1
    return naps

pipeline finish(naps: int) -> str:
    """Report the wait."""
    return f"went on after {naps} naps"

pipeline main() -> str:
    """Wait for the gate file, then finish."""
    naps = wait_for("go.txt")
    return finish(naps)
'''

# A run that prints as it waits for go.txt: its page shows the lines and the steps while it runs.
PRINTING_PROGRAM = '''\
use fs, time

pipeline main() -> str:
    """Say it waits, then nap until go.txt exists, saying so every 10 naps."""
    print("waiting for go.txt")
    naps = 0
    while not fs.exists("go.txt"):
        time.sleep(0.02)
        naps += 1
        if naps % 10 == 0:
            print(f"still waiting after {naps} naps")
    return f"went on after {naps} naps"
'''


@dataclass
class Runs:
    """A workspace and the ids of the runs made in it."""

    workspace: Path
    triage: str  # done; wrote, reviewed and ran the generated module ambiguous_triage/classify.pipe
    supervisor: str  # done; its main node sent the worker two messages
    approval: str  # waiting for a person's approval


def run_id_of(workspace: Path, program: str) -> str:
    """The id of the newest run of `program` (a file name) in `workspace`."""
    result = pipe("runs", "--workspace", workspace, "--json")
    import json

    ids = [r["id"] for r in json.loads(result.stdout) if Path(r["program"]).name == program]
    assert ids, f"no run of {program}: {result.stdout} {result.stderr}"
    return ids[-1]


def finished_runs(folder: Path) -> Runs:
    """A workspace in `folder` with real runs of three examples, made through `pipe run` with scripted models."""
    examples = folder / "examples"
    shutil.copytree(EXAMPLES, examples)  # the scripted model files are named relative to the working folder
    workspace = folder / "ws"
    workspace.mkdir()
    done = pipe("run", "ambiguous_triage.pipe", "--workspace", workspace, *SCRIPTED, cwd=examples, env=NO_MODEL)
    assert done.returncode == 0, done.stderr
    done = pipe("run", "org_supervisor.pipe", "--workspace", workspace, cwd=examples, env=NO_MODEL)
    assert done.returncode == 0, done.stderr
    waiting = pipe("run", "org_approval.pipe", "--workspace", workspace, cwd=examples, env=NO_MODEL)
    assert waiting.returncode == 75, waiting.stderr
    return Runs(workspace, run_id_of(workspace, "ambiguous_triage.pipe"), run_id_of(workspace, "org_supervisor.pipe"),
                run_id_of(workspace, "org_approval.pipe"))


def approval_run(folder: Path) -> tuple[Path, str]:
    """A workspace in `folder` whose one run (examples/org_approval.pipe) waits for a person's approval."""
    workspace = folder / "approval"
    workspace.mkdir()
    waiting = pipe("run", EXAMPLES / "org_approval.pipe", "--workspace", workspace, env=NO_MODEL)
    assert waiting.returncode == 75, waiting.stderr
    return workspace, run_id_of(workspace, "org_approval.pipe")


def pipe_process(*args: str | Path, cwd: Path) -> subprocess.Popen:
    """`pipe ARGS` as a process of its own (the installed package, as a user starts it)."""
    env = dict(os.environ, PIPE_NO_PLUGINS="1")
    env.pop("PIPE_MODEL", None)
    return subprocess.Popen([sys.executable, "-m", "orgtree_lang.cli.main", *map(str, args)], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(process: subprocess.Popen) -> tuple[str, str]:
    """End a process this test started (by its own handle) and return what it printed."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()


class Server:
    """`pipe serve --port 0` on a workspace, its URL and (with actions) its token read from what it prints."""

    def __init__(self, workspace: Path, *extra: str) -> None:
        self.process = pipe_process("serve", "--workspace", workspace, "--port", "0", *extra, cwd=workspace)
        self.printed: list[str] = []
        deadline = time.monotonic() + 60
        while not any(line.startswith("pipe serve: ") for line in self.printed):
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"pipe serve stopped: {stop(self.process)}")
            self.printed.append(line)
            assert time.monotonic() < deadline, "pipe serve printed no URL within 60 s"
        self.printed += [self.process.stdout.readline(), self.process.stdout.readline()]
        self.entry = re.search(r"http://\S+", self.printed[-3]).group(0)  # the URL with the token, as printed
        self.url, self.token = re.fullmatch(r"(http://\S+/)\?token=(\S+)", self.entry).groups()
        import httpx

        self.http = httpx.Client(timeout=60)  # a browser that opened the printed URL: it holds the cookie
        assert self.http.get(self.entry).status_code == 303 and self.http.cookies

    @property
    def wrong_token(self) -> str:
        """The printed token with its last character changed (never the token itself, whatever it ends with)."""
        return self.token[:-1] + ("y" if self.token.endswith("x") else "x")

    def open(self, page, path: str = "") -> None:
        """Open the printed URL in the browser `page` (it keeps the token), then `path` of the viewer."""
        page.goto(self.entry)
        if path:
            page.goto(self.url + path)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.http.close()
        stop(self.process)


def wait_for(condition, what: str, timeout: float = 60.0, every: float = 0.2):
    """Call `condition` until it returns something true; fail saying `what` did not happen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"{what} within {timeout} s")


# A question whose text tries to end the live update early and inject one of its own (server-sent events end a
# line at a bare \r as well as at \n).
FORGING_QUESTION = "Ship 2.1 to production?\r\revent: update\rdata: <h1>FORGED: ship 2.1 to staging</h1>\r\r"
ASKING_PROGRAM = '''pipeline main(question: str) -> str:
    if approve(question):
        return "shipped"
    return "held"
'''


def forging_run(folder: Path) -> tuple[Path, str]:
    """A workspace whose one run waits for an answer to FORGING_QUESTION."""
    workspace = folder / "forging"
    workspace.mkdir()
    (workspace / "ask.pipe").write_text(ASKING_PROGRAM)
    waiting = pipe("run", "ask.pipe", "-i", f"question={FORGING_QUESTION}", cwd=workspace, env=NO_MODEL)
    assert waiting.returncode == 75, waiting.stderr
    return workspace, run_id_of(workspace, "ask.pipe")
