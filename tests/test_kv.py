"""kv skills: values kept per namespace in the workspace across runs, journaled so a resume reuses what they gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_testing import exec_log, only_run_id, pipe
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

COUNTER = """use kv

pipeline main(name: str = "ada") -> int:
    visits = kv.get(name, 0, namespace="visits") + 1
    kv.set(name, visits, namespace="visits")
    return visits
"""


@pytest.fixture
def call(registry, tmp_path: Path):
    ctx = SkillContext(workspace=Workspace(tmp_path), run_id="r1")

    def invoke(name: str, *args, **kwargs):
        return registry.get(name).invoke(list(args), kwargs, ctx)

    return invoke


def test_values_round_trip_with_their_types_and_namespaces_stay_apart(call) -> None:
    call("kv.set", "k", {"n": 1, "ok": True, "xs": [1.5, None]})
    call("kv.set", "k", "other", namespace="b")
    assert call("kv.get", "k") == {"n": 1, "ok": True, "xs": [1.5, None]}
    assert call("kv.get", "k", namespace="b") == "other"
    assert call("kv.get", "missing", "fallback") == "fallback"


def test_keys_are_sorted_filtered_by_prefix_and_delete_says_whether_it_removed(call) -> None:
    for key in ("user:b", "user:a", "job:1"):
        call("kv.set", key, 1)
    assert call("kv.keys") == ["job:1", "user:a", "user:b"]
    assert call("kv.keys", prefix="user:") == ["user:a", "user:b"]
    assert call("kv.delete", "user:a") is True
    assert call("kv.delete", "user:a") is False
    assert call("kv.keys", prefix="user:") == ["user:b"]
    assert call("kv.keys", namespace="empty") == []


def test_an_empty_namespace_is_refused(call) -> None:
    with pytest.raises(SkillError, match="the namespace is empty"):
        call("kv.get", "k", namespace="")


def test_values_persist_across_runs_of_a_program(tmp_path: Path) -> None:
    (tmp_path / "count.pipe").write_text(COUNTER, encoding="utf-8")
    outputs = [pipe("run", "count.pipe", "--workspace", str(tmp_path), cwd=tmp_path) for _ in range(3)]
    assert [o.stdout.strip() for o in outputs] == ["1", "2", "3"], [o.stderr for o in outputs]


def test_a_resumed_run_neither_sleeps_nor_reads_or_writes_kv_again(tmp_path: Path) -> None:
    program = tmp_path / "prog.pipe"
    program.write_text("use kv, time\n\npipeline main() -> int:\n    time.sleep(0.2)\n"
                       "    n = kv.get(\"n\", 0) + 1\n    kv.set(\"n\", n)\n    fail \"stop here\"\n",
                       encoding="utf-8")
    log = tmp_path.parent / "exec.log"
    first = pipe("run", "prog.pipe", "--workspace", str(tmp_path), cwd=tmp_path, exec_log_path=log)
    assert first.returncode == 70 and "stop here" in first.stderr, first.stderr
    run_id = only_run_id(tmp_path)
    assert [name for name, _ in exec_log(log)] == ["time.sleep", "kv.get", "kv.set"]

    program.write_text(program.read_text(encoding="utf-8").replace('fail "stop here"', "return n"), encoding="utf-8")
    second = pipe("resume", run_id, "--workspace", str(tmp_path), cwd=tmp_path, exec_log_path=log)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().splitlines()[-1] == "1"
    assert [name for name, _ in exec_log(log)] == ["time.sleep", "kv.get", "kv.set"]  # nothing ran again
