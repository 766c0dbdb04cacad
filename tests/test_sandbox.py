"""code.run and its sandbox: results, files in and out, limits, requirements, settings, and the skill itself."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from sandbox_testing import quick_settings

from orgtree_lang.engine.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.sandbox.environments import requirements_key
from orgtree_lang.sandbox.runner import run_code
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
    result = run("import socket\nprint(sorted(n for _, n in socket.if_nameindex()))")
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
        skill.invoke(["python", "print(1)"], {}, ctx)
