"""The README's examples read from the README, and checks that run them with any `pipe` command.

tests/test_readme.py runs the checks in the test process. `.ci/run` runs this file with the `pipe` of a fresh venv
that holds only `pip install .` of the clone (no extras, no system packages), in a folder outside the clone:

    python tests/readme_examples.py /tmp/smoke/venv/bin/pipe

It prints one line per check and exits 1 if any failed. Only the standard library is used, so it runs in that venv.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
# The README's `pipe check` session shows what `pipe check` says about this misspelling in words.pipe.
CHECK_TYPO = ("text.split(sentence)", "text.splt(sentence)")


class Outcome(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


# `pipe` with these arguments (without the word `pipe`) in this folder.
Runner = Callable[[list[str], Path], Outcome]


def expect(condition: object, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def sessions() -> list[tuple[list[str], str]]:
    """Each console block: the command after `$ ` (shell words) and the expected output (stdout then stderr)."""
    found = []
    for block in blocks("console"):
        command, _, output = block.partition("\n")
        found.append((shlex.split(command.removeprefix("$ ")), output))
    return found


def programs() -> dict[str, str]:
    """Each ```pipe block of the README, by the file name its first line gives (`# words.pipe: ...`)."""
    return {re.match(r"# (\S+\.pipe)", block).group(1): block for block in blocks("pipe")}


def section_commands(heading: str) -> list[tuple[list[str], str]]:
    """The first ```sh block of a README section: each command (shell words) and the comment after it."""
    section = README.read_text(encoding="utf-8").split(f"## {heading}", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1).replace("\\\n", " ")
    commands = []
    for line in block.splitlines():
        command, _, comment = line.partition("  # ")
        commands.append((shlex.split(command), comment.strip()))
    return commands


def same_ids(text: str) -> str:
    """Run ids are random: compare them as placeholders."""
    return re.sub(r"\b[0-9a-f]{12}\b", "RUN_ID", text)


def write_programs(folder: Path) -> None:
    for name, source in programs().items():
        (folder / name).write_text(source, encoding="utf-8")


def check_sessions(run: Runner, folder: Path) -> None:
    """Every console session prints what the README shows (the `pipe check` one on the misspelled program)."""
    for argv, expected in sessions():
        expect(argv[0] == "pipe", f"a console session runs pipe: {argv}")
        here = folder / "session"
        shutil.rmtree(here, ignore_errors=True)
        here.mkdir()
        write_programs(here)
        if argv[1] == "check":
            words = here / "words.pipe"
            words.write_text(words.read_text(encoding="utf-8").replace(*CHECK_TYPO), encoding="utf-8")
        done = run(argv[1:], here)
        got = same_ids(done.stdout + done.stderr)
        expect(got == same_ids(expected), f"`{shlex.join(argv)}` printed\n{got}\ninstead of\n{expected}")


def check_quick_start(run: Runner, root: Path) -> None:
    """The quick start's `pipe run examples/hello.pipe`."""
    done = run(["run", "examples/hello.pipe"], root)
    expect((done.returncode, done.stdout) == (0, "hello, world!\ngreeted world\n"), f"hello.pipe: {done}")


def check_offline_ambiguous_block(run: Runner, root: Path) -> None:
    """The offline decomposer example from the repository root, its reuse, and the commands that inspect it."""
    ((argv, _),) = section_commands("Ambiguous blocks and the decomposer")
    done = run(argv[1:], root)
    expect((done.returncode, done.stdout) == (0, "triaging: Please add CSV export\nfeature\n"),
           f"the offline ambiguous block: {done}")
    again = run(["run", "examples/ambiguous_triage.pipe", "-i", "report=How do I change my password?"], root)
    expect(again.returncode == 0 and again.stdout.splitlines()[-1:] == ["question"], f"the reuse: {again}")
    for argv in ("modules list --workspace examples", "modules show classify --workspace examples --review",
                 "tree --workspace examples"):
        shown = run(argv.split(), root)
        expect(shown.returncode == 0 and "classify" in shown.stdout, f"pipe {argv}: {shown}")


def check_people_are_nodes(run: Runner, root: Path, workspace: Path) -> list[str]:
    """The "People are nodes" commands, from the repository root, with WORKSPACE for /tmp/release; what each printed."""
    commands = section_commands("People are nodes")
    expect([argv[:2] for argv, _ in commands] == [["pipe", "run"], ["pipe", "inbox"], ["pipe", "reply"],
                                                  ["pipe", "resume"], ["pipe", "reply"], ["pipe", "replay"]],
           f"the README's people commands changed: {commands}")
    run_id, seen = None, []
    for argv, comment in commands:
        argv = [str(workspace) if word == "/tmp/release" else run_id if word == "RUN" else word for word in argv[1:]]
        done = run(argv, root)
        text = done.stdout + done.stderr
        if run_id is None:
            found = re.search(r"run ([0-9a-f]{12}) is waiting", text)
            expect(found, f"pipe {shlex.join(argv)} said no run is waiting: {text}")
            run_id = found.group(1)
        expected_code = 75 if "(exit 75)" in comment else 0
        expect(done.returncode == expected_code, f"pipe {shlex.join(argv)} exited {done.returncode}: {text}")
        seen.append(text)
    expect("release 2.1.0" in seen[0], seen[0])
    expect(re.search(rf"h1 +{run_id} +approve .*Ship release 2\.1\.0 \(2 changes\)\?", seen[1]), seen[1])
    expect("Who signs off release 2.1.0?" in seen[3], seen[3])
    expect("2.1.0 shipped, signed off by Ada Lovelace" in seen[4], seen[4])
    expect("0 outside call(s)" in seen[5] and "identical to the original run" in seen[5], seen[5])
    log = (workspace / "release.log").read_text(encoding="utf-8")
    expect(log == "prepared 2.1.0\nshipped 2.1.0, signed off by Ada Lovelace\n", log)
    return seen


def check_memory(run: Runner, folder: Path) -> None:
    """`pipe ctx add` of a multi-line file, then `pipe ctx search` finds its pieces."""
    (folder / "notes.md").write_text("# Ticket API\n\nGET /v2/tickets lists open tickets.\n"
                                     "Tokens expire after an hour.\n" * 30, encoding="utf-8")
    added = run(["ctx", "add", "notes.md"], folder)
    expect(added.returncode == 0, f"pipe ctx add: {added}")
    found = run(["ctx", "search", "tokens expire"], folder)
    expect(found.returncode == 0 and re.search(r"^#\d+ +piece .* notes\.md bytes \d+-\d+$", found.stdout, re.M),
           f"pipe ctx search: {found}")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    command = argv[1]
    env = dict(os.environ, PIPE_NO_PLUGINS="1")
    env.pop("PIPE_MODEL", None)

    def run(args: list[str], cwd: Path) -> Outcome:
        done = subprocess.run([command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        return Outcome(done.returncode, done.stdout, done.stderr)

    failed = 0
    with tempfile.TemporaryDirectory(prefix="readme-examples-") as tmp:
        root = Path(tmp) / "root"  # stands for the repository root: the examples, and no orgtree_lang folder
        shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns(".orgtree"))
        checks = [("quick start", lambda: check_quick_start(run, root)),
                  ("console sessions", lambda: check_sessions(run, Path(tmp))),
                  ("offline ambiguous block", lambda: check_offline_ambiguous_block(run, root)),
                  ("people are nodes", lambda: check_people_are_nodes(run, root, Path(tmp) / "release")),
                  ("memory", lambda: check_memory(run, Path(tmp)))]
        for name, check in checks:
            try:
                check()
                print(f"README examples: {name}: ok")
            except (AssertionError, OSError, subprocess.SubprocessError) as problem:
                failed += 1
                print(f"README examples: {name}: FAILED\n{problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
