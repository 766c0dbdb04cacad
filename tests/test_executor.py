"""Slow skills run on the run's executor (a thread pool by default) and every other skill on the VM's thread."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from orgtree_lang.compile.api import compile_source
from orgtree_lang.executors.table import EXECUTORS, make_executor
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.executors.threads import ThreadExecutor
from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.skills import SkillRegistry, skill
from tests.cli_testing import pipe

REGISTRY = default_registry(plugins=False)


def test_the_stdlib_declares_its_waiting_skills_slow() -> None:
    slow = {s.name for s in REGISTRY if s.slow}
    for name in ("llm.ask", "llm.extract", "llm.summarize", "llm.classify", "http.fetch", "web.search",
                 "web.extract", "code.run", "time.sleep"):
        assert name in slow, name
    for name in ("text.upper", "kv.set", "fs.write", "time.now", "json.parse"):
        assert name not in slow, name


def test_the_stdlib_marks_remote_only_skills_that_need_no_driver_held_context() -> None:
    remote = {s.name for s in REGISTRY if s.remote}
    assert remote == {"code.run", "http.fetch", "web.extract", "time.sleep"}
    assert all(REGISTRY.get(name).slow for name in remote)  # remote implies slow


def test_thread_executor_runs_calls_off_the_calling_thread_and_reraises_their_errors() -> None:
    executor = ThreadExecutor.from_spec("2")
    try:
        assert executor.workers == 2
        assert executor.submit(threading.get_ident).result() != threading.get_ident()

        def boom():
            raise ValueError("no")

        with pytest.raises(ValueError, match="no"):
            executor.submit(boom).result()
    finally:
        executor.close()


def test_make_executor_reads_name_and_argument_and_rejects_unknown_ones() -> None:
    assert set(EXECUTORS) >= {"threads"}
    executor = make_executor("threads:3")
    assert isinstance(executor, ThreadExecutor) and executor.workers == 3
    assert make_executor(None).workers == ThreadExecutor().workers
    with pytest.raises(UsageError, match="unknown executor `rocket`") as err:
        make_executor("rocket")
    assert "threads" in err.value.hint
    with pytest.raises(UsageError, match="threads:many"):
        make_executor("threads:many")
    with pytest.raises(UsageError, match="at least 1"):
        make_executor("threads:0")


def _registry_with_probes(seen: list[tuple[str, int]]) -> SkillRegistry:
    @skill("probe.wait", slow=True)
    def wait(tag: str) -> str:
        """Record the thread it ran on.

        Args:
            tag: A label.
        """
        seen.append((tag, threading.get_ident()))
        return tag

    @skill("probe.quick")
    def quick(tag: str) -> str:
        """Record the thread it ran on.

        Args:
            tag: A label.
        """
        seen.append((tag, threading.get_ident()))
        return tag

    registry = SkillRegistry()
    registry.register(wait)
    registry.register(quick)
    assert registry.get("probe.wait").slow and not registry.get("probe.quick").slow
    return registry


PROBES = '''\
use probe

pipeline main() -> str:
    return probe.wait("w") + probe.quick("q")
'''


def test_a_slow_skill_runs_on_the_executor_and_a_quick_one_on_the_vm_thread() -> None:
    seen: list[tuple[str, int]] = []
    registry = _registry_with_probes(seen)
    executor = ThreadExecutor(2)
    try:
        machine = plain_machine(compile_source(PROBES, "probes.pipe", registry).program, registry, executor=executor)
        machine.start()
        assert machine.run().result == "wq"
    finally:
        executor.close()
    threads = dict(seen)
    assert threads["q"] == threading.get_ident()
    assert threads["w"] != threading.get_ident()


def test_without_an_executor_slow_skills_run_on_the_vm_thread() -> None:
    seen: list[tuple[str, int]] = []
    registry = _registry_with_probes(seen)
    machine = plain_machine(compile_source(PROBES, "probes.pipe", registry).program, registry)
    machine.start()
    assert machine.run().result == "wq"
    assert {ident for _, ident in seen} == {threading.get_ident()}


def test_pipe_run_takes_an_executor_and_refuses_an_unknown_one(tmp_path) -> None:
    program = tmp_path / "nap.pipe"
    program.write_text('use time\n\npipeline main() -> str:\n    time.sleep(0.01)\n    return "rested"\n')
    ok = pipe("run", program, "--executor", "threads:2")
    assert ok.returncode == 0, ok.stderr
    assert "rested" in ok.stdout
    bad = pipe("run", program, "--executor", "rocket")
    assert bad.returncode == 2
    assert "unknown executor `rocket`" in bad.stderr and "threads" in bad.stderr


def test_the_ray_executor_without_ray_installed_is_a_usage_error_that_says_how_to_install_it(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what Python sees when a package is not installed
    program = tmp_path / "nap.pipe"
    program.write_text('use time\n\npipeline main() -> str:\n    time.sleep(0.01)\n    return "rested"\n')
    flag = pipe("run", program, "--executor", "ray:auto")
    assert flag.returncode == 2
    assert "needs Ray, which is not installed" in flag.stderr
    assert "pip install 'orgtree-lang[ray]'" in flag.stderr
    (tmp_path / "orgtree.toml").write_text('[executor]\nkind = "ray"\naddress = "auto"\n')
    setting = pipe("run", program)
    assert setting.returncode == 2 and "pip install 'orgtree-lang[ray]'" in setting.stderr


def test_the_executor_table_of_orgtree_toml_picks_the_executor_and_is_checked(tmp_path) -> None:
    program = tmp_path / "nap.pipe"
    program.write_text('use time\n\npipeline main() -> str:\n    time.sleep(0.01)\n    return "rested"\n')
    (tmp_path / "orgtree.toml").write_text('[executor]\nkind = "threads"\naddress = "3"\n')
    assert pipe("run", program).stdout.strip() == "rested"
    assert make_executor(None, {"kind": "threads", "address": "3"}).workers == 3
    assert make_executor("threads:5", {"kind": "threads", "address": "3"}).workers == 5  # the flag wins
    (tmp_path / "orgtree.toml").write_text('[executor]\nkind = "rocket"\n')
    rocket = pipe("run", program)
    assert rocket.returncode == 2 and "unknown executor `rocket`" in rocket.stderr
    (tmp_path / "orgtree.toml").write_text('[executor]\nkind = 3\n')
    wrong = pipe("run", program)
    assert wrong.returncode == 2 and "[executor] kind must be a string, got 3" in wrong.stderr


def test_the_seconds_budget_ends_the_wait_for_a_slow_call_on_the_executor(tmp_path) -> None:
    program = tmp_path / "nap.pipe"
    program.write_text('use time\n\npipeline main() -> str:\n    time.sleep(15)\n    return "rested"\n')
    started = time.monotonic()
    stopped = pipe("run", program, "--max-seconds", "1", "--executor", "threads:2")
    assert stopped.returncode == 70
    assert "seconds" in stopped.stderr and "nap.pipe:4" in stopped.stderr
    assert time.monotonic() - started < 12  # not the 15 s the call takes
