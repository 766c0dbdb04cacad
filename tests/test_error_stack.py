"""Runtime errors point at the line that failed, through generated children, and collapse repeated frames."""

from __future__ import annotations

import json

import pytest
from cli_testing import pipe
from decompose_testing import NO_CONCERNS

pytestmark = pytest.mark.fast

PARENT = '''use text

pipeline main(report: str) -> str:
    x = 1
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''
CHILD = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(report, "boom"):
        fail "cannot classify a boom"
    return "question"
```'''


def test_an_error_in_a_generated_child_points_at_the_childs_line(tmp_path):
    (tmp_path / "top.pipe").write_text(PARENT)
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": CHILD}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    models = ("--model", "scripted:author.json", "--review-model", "scripted:reviewer.json")
    first = pipe("run", "top.pipe", "-i", "report=hello", *models, cwd=tmp_path, env={"PIPE_NO_PLUGINS": "1"})
    assert first.returncode == 0, first.stderr
    saved = tmp_path / ".orgtree" / "modules" / "top" / "classify.pipe"
    fail_line = next(i for i, line in enumerate(saved.read_text().splitlines(), 1) if "fail " in line)

    failed = pipe("run", "top.pipe", "-i", "report=boom", *models, cwd=tmp_path, env={"PIPE_NO_PLUGINS": "1"})
    assert failed.returncode == 70, failed.stderr
    assert "cannot classify a boom" in failed.stderr
    assert f"--> {saved}:{fail_line}:" in failed.stderr or f"--> .orgtree/modules/top/classify.pipe:{fail_line}:" in \
        failed.stderr, failed.stderr
    assert 'fail "cannot classify a boom"' in failed.stderr  # the child's own line is shown
    stack = failed.stderr.split(".pipe call stack (most recent call last):\n")[1].splitlines()
    assert stack[0].strip().startswith("top.pipe:5: in main"), stack
    assert stack[1].strip().endswith(f"classify.pipe:{fail_line}: in main"), stack


RECURSIVE = '''pipeline down(n: int) -> int:
    if n == 0:
        fail "bottom"
    return down(n - 1)

pipeline main() -> int:
    return down(150)
'''


def test_a_deep_recursion_collapses_repeated_frames(tmp_path):
    (tmp_path / "deep.pipe").write_text(RECURSIVE)
    failed = pipe("run", "deep.pipe", cwd=tmp_path)
    assert failed.returncode == 70, failed.stderr
    stack = failed.stderr.split(".pipe call stack (most recent call last):\n")[1].splitlines()
    # main's call, then 150 frames of down calling itself at line 4, then the one that failed at line 3.
    assert [line.strip() for line in stack[:6]] == [
        "deep.pipe:7: in main", "deep.pipe:4: in down", "deep.pipe:4: in down", "deep.pipe:4: in down",
        "… repeated 147 more times", "deep.pipe:3: in down"]
