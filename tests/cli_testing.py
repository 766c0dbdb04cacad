"""Run the `pipe` command inside the test process: argv, folder and environment in; exit code, stdout, stderr out.

A fresh interpreter per call costs about a second; this costs what the command itself does. Use it wherever the
command's logic is the subject. Keep a real subprocess where the process is: the console script, what
`pipe --help` imports, crashes and kills (see tests/durable_testing.py).

`pipe(...)` changes the current folder and environment for the call only and puts them back after, and gives
the command fresh text streams for stdout and stderr (not terminals, like a subprocess's pipes). When the command
ends, the MCP servers it started are stopped, as the end of its process would stop them.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping


@dataclass
class PipeResult:
    """What a `pipe` call left: the same fields tests read from subprocess.CompletedProcess."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def pipe(*args: str | Path, cwd: Path | str | None = None, env: Mapping[str, str | None] | None = None) -> PipeResult:
    """`pipe ARGS` in folder `cwd` with the variables of `env` set (None: unset), run in this process."""
    from orgtree_lang.cli.main import main

    argv = [str(arg) for arg in args]
    out, err = io.StringIO(), io.StringIO()
    with _folder(cwd), _environment(env or {}), _streams(out, err):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse: --help, --version and usage errors
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
            if not isinstance(stop.code, (int, type(None))):
                print(stop.code, file=sys.stderr)
        finally:
            _end_of_process()
    return PipeResult(argv, code, out.getvalue(), err.getvalue())


def _end_of_process() -> None:
    """What the end of a `pipe` process does beyond the command: the MCP servers it started are stopped."""
    connection = sys.modules.get("orgtree_lang.mcp_client.connection")
    if connection is not None:
        connection.close_all()


@contextlib.contextmanager
def _folder(cwd: Path | str | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in changes}
    for name, value in changes.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _streams(out: io.StringIO, err: io.StringIO) -> Iterator[None]:
    before = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = before
