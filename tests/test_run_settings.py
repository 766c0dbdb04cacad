"""RunSettings: orgtree.toml read once for a whole `pipe run`, into typed sections with errors that name the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from decompose_testing import GOOD, NO_CONCERNS
from orgtree_lang.run.settings import RunSettings
from orgtree_lang.runtime.config import ConfigError

PROGRAM = '''\
use text

route "alerts"

pipeline on_alert(message: Message) -> str:
    return "seen"

pipeline main(report: str) -> str:
    """Label a report."""
    ambiguous classify(report: str) -> label: str:
        """Answer bug when the report mentions a crash, else question."""
    return text.upper(label)
'''

SETTINGS = '''\
[model]
name = "scripted:author.json"
review = "scripted:reviewer.json"
timeout = 30

[decompose]
max_review_rounds = 2

[org.routes]
alerts = "on_alert"

[executor]
kind = "threads"

[memory]
summaries = "heuristic"

[trace]
level = "calls"

[durable]
group_steps = 8

[blobs]
inline_bytes = 4096

[skills]
promote_after = 5
'''

# Runs `pipe ARGS` in this interpreter with an audit hook that counts every open of the settings file.
COUNTING = textwrap.dedent('''\
    import os, sys
    opened = []
    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)) and \\
                os.fsdecode(args[0]).endswith("orgtree.toml"):
            opened.append(os.fsdecode(args[0]))
    sys.addaudithook(hook)
    from orgtree_lang.cli.main import main
    code = main(sys.argv[1:])
    sys.stderr.write("\\nOPENED %d\\n" % len(opened))
    sys.exit(code)
''')


def _pipe_counting_opens(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess, int]:
    done = subprocess.run([sys.executable, "-c", COUNTING, *args], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PIPE_NO_PLUGINS": "1"}, timeout=120)
    count = int(done.stderr.rsplit("OPENED ", 1)[1].split()[0])
    return done, count


def test_one_pipe_run_reads_orgtree_toml_once(tmp_path):
    (tmp_path / "triage.pipe").write_text(PROGRAM)
    (tmp_path / "orgtree.toml").write_text(SETTINGS)
    (tmp_path / "author.json").write_text(json.dumps([{"reply": GOOD}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    done, opened = _pipe_counting_opens(tmp_path, "run", "triage.pipe", "-i", "report=it crashed")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "BUG"
    assert opened == 1, done.stderr
    # Its resume reads it once too (the run is done: resume refuses, after reading the settings once at most).
    run_id = json.loads(subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "runs", "--json"],
                                       cwd=tmp_path, capture_output=True, text=True).stdout)[0]["id"]
    replayed, opened = _pipe_counting_opens(tmp_path, "replay", run_id)
    assert replayed.returncode == 0, replayed.stderr
    assert opened == 1, replayed.stderr


def test_a_section_is_parsed_when_asked_for_and_its_error_names_file_table_and_key(tmp_path):
    (tmp_path / "orgtree.toml").write_text("[decompose]\nmax_depth = \"deep\"\n\n[org.routes]\nalerts = \"x\"\n")
    settings = RunSettings.load(tmp_path)
    assert settings.routes == {"alerts": "x"}  # a bad [decompose] does not stop a run that needs no decomposer
    with pytest.raises(ConfigError) as caught:
        settings.decompose
    message = str(caught.value)
    assert str(tmp_path / "orgtree.toml") in message
    assert "[decompose] max_depth must be a whole number, got 'deep'" in message


def test_a_file_that_is_not_toml_is_reported_with_its_line(tmp_path):
    (tmp_path / "orgtree.toml").write_text("[trace]\nlevel = \"calls\"\nbroken line\n")
    with pytest.raises(ConfigError) as caught:
        RunSettings.load(tmp_path).trace()
    assert f"cannot read {tmp_path / 'orgtree.toml'}" in str(caught.value)
    assert "line 3" in str(caught.value)


def test_settings_are_the_file_as_it_was_at_the_start(tmp_path):
    (tmp_path / "orgtree.toml").write_text("[executor]\nkind = \"threads\"\n")
    settings = RunSettings.load(tmp_path)
    (tmp_path / "orgtree.toml").write_text("[executor]\nkind = \"ray\"\n")
    assert settings.executor == {"kind": "threads"}
