"""code.run and its sandbox: results, files in and out, limits, requirements, settings, and the skill itself."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile

import pytest
from sandbox_testing import quick_settings

from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.sandbox.environments import requirements_key
from orgtree_lang.sandbox.backends import run_code
from orgtree_lang.sandbox.settings import CodeRequest, SandboxError, SandboxSettings, SandboxUnavailable


def run(source: str, language: str = "python", settings: SandboxSettings | None = None, **kw):
    settings = settings or quick_settings()
    kw.setdefault("timeout", settings.timeout)
    kw.setdefault("memory_mb", settings.memory_mb)
    return run_code(CodeRequest(language, source, **kw), settings)


def test_python_output_and_exit_code_come_back():
    result = run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.backend == "bubblewrap" and not result.timed_out and not result.truncated


def test_sixteen_first_calls_at_once_all_find_the_sandbox_that_can_start(monkeypatch):
    # Parallel branches' first code.run calls probe bubblewrap together. Each probe's process limit counts the
    # sandbox user's processes when it starts, so sixteen probes at once used to push each other over it ("Can't
    # fork for pid 1") and some calls were told no sandbox could start here.
    from concurrent.futures import ThreadPoolExecutor

    from orgtree_lang.sandbox import bubblewrap

    monkeypatch.setattr(bubblewrap, "_WORKS", set())  # no probe has passed yet in this process
    backend = bubblewrap.BubblewrapBackend(quick_settings())
    with ThreadPoolExecutor(16) as pool:
        reasons = list(pool.map(lambda _: backend.unavailable_reason(), range(16)))
    assert reasons == [None] * 16


def test_shell_runs_in_the_scratch_folder_with_the_given_files():
    result = run('cat data/in.txt; pwd; echo "$HOME"', language="sh", files={"data/in.txt": "given\n"})
    assert result.stdout == "given\n/scratch\n/scratch\n"


def test_new_and_changed_files_come_back_and_unchanged_ones_do_not():
    source = "open('new.txt', 'w').write('made')\nopen('changed.txt', 'a').write('+more')\n"
    result = run(source, files={"changed.txt": "old", "same.txt": "kept"})
    assert result.files == {"new.txt": "made", "changed.txt": "old+more"}


def test_helper_modules_passed_as_files_can_be_imported():
    result = run("import helper\nprint(helper.double(21))", files={"helper.py": "def double(x):\n    return 2 * x\n"})
    assert result.stdout == "42\n"


def test_output_over_the_cap_is_cut_with_a_marker():
    result = run("print('x' * 5000)", settings=quick_settings(max_output_bytes=1000))
    assert result.truncated
    assert result.stdout.startswith("x" * 1000) and "truncated: output exceeded 1000 bytes" in result.stdout
    assert result.stdout.split("\n[")[0] == "x" * 1000


def test_a_run_past_its_timeout_is_killed_with_every_child():
    result = run("sleep 30 & sleep 30; echo never", language="sh", timeout=0.5)
    assert result.timed_out and result.exit_code == -9 and "never" not in result.stdout
    assert result.duration < 3


def test_the_sandbox_has_no_network_interface_but_loopback():
    # /proc/net/dev lists the interfaces of the sandbox's network namespace (socket.if_nameindex needs a netlink
    # socket, which the filter refuses).
    result = run("lines = open('/proc/net/dev').read().splitlines()[2:]\n"
                 "print(sorted(line.split(':')[0].strip() for line in lines))")
    assert result.stdout == "['lo']\n"


def test_the_code_runs_as_an_unprivileged_user_without_capabilities():
    result = run("print(open('/proc/self/status').read())")
    status = dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)
    assert status["Uid"].split()[0] != "0" and status["CapEff"] == "0000000000000000"


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "a/../../b", ""])
def test_file_names_leaving_scratch_are_refused(name):
    with pytest.raises(SandboxError, match="must be a relative path inside the scratch folder"):
        run("print(1)", files={name: "x"})


def test_an_unknown_language_is_refused_naming_the_known_ones():
    with pytest.raises(SandboxError, match="language 'ruby' is not supported") as caught:
        run("puts 1", language="ruby")
    assert "bash, python, sh" in caught.value.hint


def test_limits_beyond_the_configured_maximum_are_refused():
    with pytest.raises(SandboxError, match=r"timeout 500 s is outside \(0, 120.0\]"):
        run("print(1)", timeout=500)
    with pytest.raises(SandboxError, match="memory 99999 MiB"):
        run("print(1)", memory_mb=99999)


def test_requirements_are_refused_when_installing_is_switched_off(tmp_path):
    with pytest.raises(SandboxError, match="installing is switched off") as caught:
        run("import six", requirements=("six",), settings=quick_settings(env_cache=str(tmp_path)))
    assert "allow_install = true" in caught.value.hint
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("requirement", ["https://evil.example/pkg.tar.gz", "--index-url=http://x", "../local", "six; rm -rf /"])
def test_requirements_that_are_not_package_names_are_refused(requirement):
    with pytest.raises(SandboxError, match="is not a package name"):
        run("print(1)", requirements=(requirement,), settings=quick_settings(allow_install=True))


def test_the_requirements_key_ignores_order_but_not_versions():
    assert requirements_key(("a", "b"), "/usr/bin/python3") == requirements_key(("b", "a"), "/usr/bin/python3")
    assert requirements_key(("a==1",), "/usr/bin/python3") != requirements_key(("a==2",), "/usr/bin/python3")


def test_requirements_install_once_into_a_cached_env_when_allowed():
    # Needs the package registry, which these machines reach; the env cache must be reachable by the sandbox user.
    cache = tempfile.mkdtemp(prefix="orgtree-test-envs-")
    os.chmod(cache, 0o755)
    try:
        settings = quick_settings(allow_install=True, env_cache=cache, timeout=10.0)
        first = run("import tomli_w\nprint(tomli_w.dumps({'a': 1}))", requirements=("tomli_w",), settings=settings)
        assert first.stdout == "a = 1\n\n", first.stderr
        envs = os.listdir(cache)
        assert len(envs) == 1
        second = run("import tomli_w, sys\nprint(sys.prefix)", requirements=("tomli_w",),
                     settings=quick_settings(allow_install=False, env_cache=cache))
        assert second.stdout == "/env\n" and os.listdir(cache) == envs
        without = run("import tomli_w")
        assert without.exit_code == 1 and "No module named 'tomli_w'" in without.stderr
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_settings_come_from_orgtree_toml(tmp_path):
    config = tmp_path / "orgtree.toml"
    config.write_text('[sandbox]\nbackend = "bubblewrap"\ntimeout = 3\nallow_install = true\n')
    settings = SandboxSettings.from_config(config)
    assert (settings.backend, settings.timeout, settings.allow_install) == ("bubblewrap", 3.0, True)


@pytest.mark.parametrize("body, message", [
    ('backend = "chroot"', "backend must be one of auto, bubblewrap, docker, got 'chroot'"),
    ("timeout = \"long\"", "timeout must be a whole number or a number"),
    ("memroy_mb = 5", "unknown key(s) memroy_mb"),
])
def test_bad_sandbox_settings_name_the_file_and_key(tmp_path, body, message):
    config = tmp_path / "orgtree.toml"
    config.write_text(f"[sandbox]\n{body}\n")
    with pytest.raises(SandboxError) as caught:
        SandboxSettings.from_config(config)
    assert str(config) in str(caught.value) and message in str(caught.value)


def test_the_code_run_skill_reads_orgtree_toml_and_returns_a_dict(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    skill = default_registry(plugins=False).get("code.run")
    ctx = SkillContext(Workspace(tmp_path))
    result = skill.invoke(["python", "open('o.txt','w').write('hi')\nprint(6 * 7)"], {"timeout": 5}, ctx)
    assert result["stdout"] == "42\n" and result["files"] == {"o.txt": "hi"} and result["exit_code"] == 0
    (tmp_path / "orgtree.toml").write_text(f'[sandbox]\nbwrap = "{tmp_path}/missing-bwrap"\n')
    with pytest.raises(SandboxUnavailable, match="no sandbox can start here"):
        skill.invoke(["python", "print(1)"], {}, SkillContext(Workspace(tmp_path)))


def test_settings_changed_during_a_run_take_effect_on_the_next_run(tmp_path):
    (tmp_path / "orgtree.toml").write_text("[sandbox]\nmax_timeout = 5\n")
    skill = default_registry(plugins=False).get("code.run")
    ctx = SkillContext(Workspace(tmp_path))  # one run
    (tmp_path / "orgtree.toml").write_text("[sandbox]\nmax_timeout = 500\n")  # widened behind its back
    with pytest.raises(SandboxError, match=r"timeout 100.0 s is outside \(0, 5.0\]"):
        skill.invoke(["python", "print(1)"], {"timeout": 100}, ctx)
    child = dataclasses.replace(ctx, run_id="child")  # what the VM hands to a nested call
    with pytest.raises(SandboxError, match=r"outside \(0, 5.0\]"):
        skill.invoke(["python", "print(1)"], {"timeout": 100}, child)
    with pytest.raises(SandboxError, match=r"timeout 1000.0 s is outside \(0, 500.0\]"):  # the next run
        skill.invoke(["python", "print(1)"], {"timeout": 1000}, SkillContext(Workspace(tmp_path)))


def test_file_names_that_are_not_utf8_come_back_escaped_with_a_note():
    source = "open(b'caf\\xe9.txt', 'wb').write(b'x')\nopen('plain.txt', 'w').write('y')\n"
    result = run(source)
    assert result.files == {"caf\\xe9.txt": "x", "plain.txt": "y"}
    assert all(name.encode("utf-8") for name in result.files)  # a journal can store every name
    assert "not UTF-8 and are shown with \\x escapes" in result.stderr


def test_very_deep_folders_are_skipped_with_a_note_and_the_scratch_folder_is_removed():
    source = ("import os\nopen('top.txt', 'w').write('t')\n"
              "for _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\nopen('bottom.txt', 'w').write('b')\n")
    scratch_root = tempfile.mkdtemp(prefix="orgtree-test-deep-")
    os.chmod(scratch_root, 0o755)  # the sandbox user must reach its scratch folder
    try:
        result = run(source, settings=quick_settings(scratch_root=scratch_root), timeout=20)
        assert result.exit_code == 0, result.stderr
        assert result.files == {"top.txt": "t"} and "deeper than 64 levels and was not read back" in result.stderr
        assert os.listdir(scratch_root) == []
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)


def test_a_file_name_longer_than_the_file_system_allows_is_a_sandbox_error():
    with pytest.raises(SandboxError, match="longer than the 255 bytes a file system allows"):
        run("print(1)", files={"x" * 300: "text"})


def test_a_file_name_that_is_also_a_folder_is_a_sandbox_error():
    with pytest.raises(SandboxError, match="cannot put file 'a/b' in the scratch folder"):
        run("print(1)", files={"a": "file", "a/b": "under a file"})


def test_the_seccomp_filter_refuses_debugging_and_shared_memory_calls():
    source = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "print(libc.ptrace(16, 1, 0, 0), ctypes.get_errno())\n"
              "try:\n    os.memfd_create('m')\nexcept OSError as e:\n    print('memfd', e.errno)\n"
              "print(libc.shmget(0, 4096, 0o1600), ctypes.get_errno())\n"
              "print(libc.syscall(435, None, 0), ctypes.get_errno())\n")
    result = run(source)
    assert result.stdout.split("\n")[:4] == ["-1 1", "memfd 1", "-1 1", "-1 38"], result.stdout + result.stderr


def test_dev_is_read_only_and_dev_shm_is_capped():
    source = ("import os\nfor path in ('/dev/x', '/dev/shm/x'):\n    n = 0\n    try:\n"
              "        for i in range(100):\n            open(f'{path}{i}', 'wb').write(b'x' * (1 << 20))\n"
              "            n += 1\n    except OSError as e:\n        print(path, n, e.strerror)\n")
    result = run(source)
    assert result.stdout == "/dev/x 0 Read-only file system\n/dev/shm/x 16 No space left on device\n", result.stderr


def test_the_memory_cgroup_bounds_the_whole_sandbox_where_one_can_be_made():
    from orgtree_lang.sandbox.cgroup import MemoryCgroup

    probe = MemoryCgroup.create(64 << 20)
    if probe is None:
        pytest.skip("this host lets us make no memory cgroup (see docs/sandbox.md for what holds then)")
    probe.remove()
    # Four processes of 180 MiB each stay inside a 256 MiB address-space limit but not inside 256 + 80 MiB in all.
    source = ("import os, time\nkids = []\nfor i in range(4):\n    pid = os.fork()\n    if pid == 0:\n"
              "        b = bytearray(180 << 20)\n        for j in range(0, len(b), 4096):\n            b[j] = 1\n"
              "        time.sleep(1)\n        os._exit(0)\n    kids.append(pid)\n"
              "print(sum(os.waitpid(k, 0)[1] == 0 for k in kids))\n")
    result = run(source, timeout=15, memory_mb=256)
    assert result.exit_code == 0 and int(result.stdout) < 4, result.stdout + result.stderr


def test_a_timed_out_python_program_keeps_what_it_printed_before_the_kill():
    # stdout to a pipe is block-buffered in Python: without unbuffered output these lines die in the buffer.
    source = "import sys, time\nprint('started')\nsys.stdout.write('half a line')\ntime.sleep(30)\n"
    result = run(source, timeout=1.5)
    assert result.timed_out and result.exit_code == -9
    assert result.stdout == "started\nhalf a line"


def test_a_python_started_by_a_shell_program_keeps_its_output_on_a_timeout_too():
    source = "echo from-sh\npython3 -c 'import time; print(\"from-python\"); time.sleep(30)'\n"
    result = run(source, language="sh", timeout=1.5)
    assert result.timed_out
    assert result.stdout == "from-sh\nfrom-python\n"


def test_an_install_with_the_network_may_open_ip_sockets_and_still_no_other_family():
    from orgtree_lang.sandbox.bubblewrap import BubblewrapBackend

    probe = ("import socket\nfor family in (socket.AF_INET, socket.AF_INET6, 40, 16):\n"
             "    try:\n        socket.socket(family, socket.SOCK_STREAM if family != 16 else socket.SOCK_DGRAM)\n"
             "        print(family, 'open')\n    except OSError as exc:\n        print(family, exc.strerror)\n")
    settings = quick_settings()
    backend = BubblewrapBackend(settings)
    with_network = backend.execute([], [settings.interpreter(), "-c", probe], 10, 256, network=True)
    without = backend.execute([], [settings.interpreter(), "-c", probe], 10, 256)
    assert with_network.stdout.splitlines() == ["2 open", "10 open", "40 Operation not permitted",
                                                "16 Operation not permitted"], with_network.stderr
    assert without.stdout.splitlines() == [f"{f} Operation not permitted" for f in (2, 10, 40, 16)], without.stderr
