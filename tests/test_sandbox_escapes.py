"""The escape corpus: every program in tests/sandbox_escapes/ runs under code.run's sandbox and fails safely."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from cli_testing import PipeResult, pipe
from sandbox_testing import local_server, quick_settings

from orgtree_lang.sandbox.backends import choose_backend, run_code
from orgtree_lang.sandbox.settings import CodeRequest, SandboxError, SandboxSettings, SandboxUnavailable

CORPUS_DIR = Path(__file__).parent / "sandbox_escapes"
CORPUS = sorted(p for p in CORPUS_DIR.iterdir() if p.suffix in (".py", ".sh"))
_EXPECT = re.compile(r"^# expect: (contained|timed_out|truncated|nonzero|any)$", re.M)
_TRIES = re.compile(r"^# tries: \S", re.M)
MARKER = b"ORGTREE_SANDBOX=1"


def _sandbox_processes(baseline: set[int], sandbox_uid: int | None) -> list[str]:
    """Processes of this process's sandboxes: carrying the sandbox's marker in their environment, run by the sandbox
    user (as root) or bwrap itself, and not part of a sandbox another live process started (_launcher)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in baseline:
            continue
        pid = int(entry.name)
        if _is_sandboxed(pid, sandbox_uid) and _launcher(pid, sandbox_uid) in (os.getpid(), 1, None):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue  # it ended while we looked
            found.append(f"{pid}: {cmdline}")
    return found


def _is_sandboxed(pid: int, sandbox_uid: int | None) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        owner = Path(f"/proc/{pid}").stat().st_uid
        program = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return False  # it ended while we looked
    return MARKER in environ.split(b"\0") or (sandbox_uid is not None and owner == sandbox_uid) or \
        program.endswith(b"/bwrap")


def _launcher(pid: int, sandbox_uid: int | None) -> int | None:
    """The first ancestor of `pid` that is not part of a sandbox: this process for its own sandboxes, init (1) for
    a process of a sandbox that outlived its launcher, another process for a sandbox that a test of the other xdist
    worker (or another suite on this machine) runs at the same time, which is no leftover of this one."""
    seen: int | None = pid
    while seen not in (None, 0, 1) and _is_sandboxed(seen, sandbox_uid):
        try:
            status = Path(f"/proc/{seen}/status").read_text()
        except OSError:
            return None
        seen = int(status.split("\nPPid:", 1)[1].split()[0])
    return seen


def _leftovers(baseline: set[int], sandbox_uid: int | None) -> list[str]:
    deadline = time.monotonic() + 3
    while (left := _sandbox_processes(baseline, sandbox_uid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _tmp_entries(host: dict) -> set[str]:
    """What an escape plants in the host's temp folder, and what the sandbox made in this process's temp folder."""
    planted = {name for name in os.listdir(host["host_temp"]) if name.startswith("PLANTED")}
    return planted | {f"private/{name}" for name in os.listdir(host["temp"])}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """The host side: a canary file with a secret, a secret in the environment, a server and a bystander process."""
    secret = "CANARY-" + secrets.token_hex(8)
    canary = tmp_path_factory.mktemp("host") / "canary.txt"
    canary.write_text(secret)
    os.chmod(canary, 0o600)  # readable by the host's user only, like the red team's root-only file
    scratch_root = Path(tempfile.mkdtemp(prefix="orgtree-escapes-"))
    os.chmod(scratch_root, 0o755)
    settings = quick_settings(timeout=1.5, scratch_root=str(scratch_root))
    os.environ["ORGTREE_HOST_SECRET"] = secret
    # This process's temp folder is its own while the corpus runs: other tests and test processes on the machine
    # make orgtree-sbx-* folders in the shared one, which must not read as this run's leftovers.
    # Beside the shared one and open to the sandbox's user like it (pytest's own folders are the host user's only).
    previous, host_temp = tempfile.tempdir, tempfile.gettempdir()
    private_temp = Path(tempfile.mkdtemp(prefix="orgtree-escapes-tmp-"))
    os.chmod(private_temp, 0o755)
    tempfile.tempdir = str(private_temp)
    bystander = subprocess.Popen(["sleep", "600"])
    try:
        with local_server() as server:
            yield {"secret": secret, "canary": canary, "server": server, "settings": settings,
                   "bystander": bystander, "scratch_root": scratch_root, "host_temp": host_temp,
                   "temp": private_temp}
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(private_temp, ignore_errors=True)
        del os.environ["ORGTREE_HOST_SECRET"]
        bystander.kill()
        bystander.wait()
        scratch_root.rmdir()


def test_the_corpus_has_at_least_thirty_programs_each_saying_what_it_tries():
    assert len(CORPUS) >= 30
    for path in CORPUS:
        text = path.read_text()
        assert _TRIES.search(text) and _EXPECT.search(text), f"{path.name} lacks its `# tries:` or `# expect:` line"


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_escape_attempt_is_contained(program, host):
    settings: SandboxSettings = host["settings"]
    sandbox_uid = settings.uid if os.geteuid() == 0 else None
    baseline = {int(e.name) for e in os.scandir("/proc") if e.name.isdigit()}
    tmp_before = _tmp_entries(host)
    source = program.read_text().replace("@CANARY@", str(host["canary"])).replace("@PORT@", str(host["server"].server_port))
    language = "python" if program.suffix == ".py" else "bash"

    result = run_code(CodeRequest(language, source, timeout=settings.timeout, memory_mb=settings.memory_mb), settings)

    shown = f"{program.name}: exit {result.exit_code}\nstdout: {result.stdout[:800]}\nstderr: {result.stderr[-800:]}"
    everything = result.stdout + result.stderr + "".join(result.files.values()) + "".join(result.files)
    assert "ESCAPED" not in everything, shown
    assert host["secret"] not in everything, shown
    assert host["canary"].read_text() == host["secret"], "the host canary file was changed"
    assert host["server"].hits == [], "the sandbox reached the host's HTTP server"
    assert host["bystander"].poll() is None, "a host process was killed"
    assert _leftovers(baseline, sandbox_uid) == [], "processes of the sandbox outlived the run"
    assert _tmp_entries(host) == tmp_before, "the run left files in the host's temp folder"
    assert list(host["scratch_root"].iterdir()) == [], "the scratch folder was not removed"
    expect = _EXPECT.search(program.read_text()).group(1)
    if expect == "contained":
        assert result.exit_code == 0 and "contained" in result.stdout, shown
    elif expect == "timed_out":
        assert result.timed_out and result.exit_code < 0, shown
    elif expect == "truncated":
        assert result.truncated and "truncated" in result.stdout + result.stderr, shown
        assert len(result.stdout) + len(result.stderr) < 3 * settings.max_output_bytes
    elif expect == "nonzero":
        assert result.exit_code != 0, shown
    assert result.duration < settings.timeout + 3, shown


def test_without_bubblewrap_and_docker_code_run_refuses(tmp_path):
    marker = tmp_path / "it-ran"
    settings = quick_settings(bwrap=str(tmp_path / "no-such-bwrap"))
    with pytest.raises(SandboxUnavailable) as caught:
        run_code(CodeRequest("python", f"open({str(marker)!r}, 'w').write('x')"), settings)
    assert "bubblewrap is not installed" in str(caught.value) and "docker:" in str(caught.value)
    assert "never run outside a sandbox" in caught.value.hint
    assert not marker.exists()


def test_the_docker_backend_alone_refuses_when_no_engine_answers(tmp_path):
    settings = quick_settings(backend="docker")
    with pytest.raises(SandboxUnavailable, match="docker: no Docker engine is reachable"):
        choose_backend(settings)


def test_the_docker_backend_names_a_missing_sdk(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "docker", None)  # what Python does for an uninstalled package
    with pytest.raises(SandboxUnavailable, match="the `docker` Python package is not installed"):
        choose_backend(quick_settings(backend="docker"))


def test_auto_falls_through_to_bubblewrap_when_docker_is_missing():
    assert choose_backend(quick_settings()).name == "bubblewrap"


_HOSTILE_BACKEND = '''
import base64, hashlib, os, zipfile

def _plant():
    # What hostile build code does: turn the completion marker into a link to a host file.
    try:
        os.symlink(TARGET, "/env/.orgtree-env-complete")
    except OSError:
        pass

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _plant()
    name = "hookpkg-1.0-py3-none-any.whl"
    files = {"hookpkg.py": b"",
             "hookpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\\nName: hookpkg\\nVersion: 1.0\\n",
             "hookpkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append("hookpkg-1.0.dist-info/RECORD,,")
        wheel.writestr("hookpkg-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
    return name
'''


def _hostile_sdist(folder: Path, target: Path) -> None:
    """hookpkg 1.0 as an sdist whose in-tree build backend (no build requirements to download) plants the link."""
    import io
    import tarfile

    members = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": f"TARGET = {str(target)!r}\n" + _HOSTILE_BACKEND,
        "PKG-INFO": "Metadata-Version: 2.1\nName: hookpkg\nVersion: 1.0\n",
    }
    with tarfile.open(folder / "hookpkg-1.0.tar.gz", "w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"hookpkg-1.0/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_an_install_hook_cannot_make_the_host_write_through_the_completion_marker(tmp_path, monkeypatch):
    import functools
    import http.server
    import threading

    index, victim = tmp_path / "index", tmp_path / "victim.txt"
    index.mkdir()
    _hostile_sdist(index, victim)
    cache = Path(tempfile.mkdtemp(prefix="orgtree-test-envs-"))
    os.chmod(cache, 0o755)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(index))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", f"http://127.0.0.1:{server.server_port}/")
    try:
        settings = quick_settings(allow_install=True, env_cache=str(cache), install_timeout=60)
        with pytest.raises(SandboxError, match="left a file at .orgtree-env-complete"):
            run_code(CodeRequest("python", "import hookpkg", requirements=("hookpkg",), timeout=5), settings)
        assert not victim.exists() and not os.path.lexists(victim), "the host wrote through the planted link"
        assert os.listdir(cache) == [], "a half-made environment was kept"
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(cache, ignore_errors=True)


def test_without_libseccomp_bubblewrap_refuses_and_names_the_fix(monkeypatch):
    from orgtree_lang.sandbox import seccomp

    seccomp.compiled_filter.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "pyseccomp", None)  # what Python does for a missing package
    try:
        with pytest.raises(SandboxUnavailable, match="bubblewrap: the seccomp filter cannot be built") as caught:
            run_code(CodeRequest("python", "print(1)"), quick_settings(backend="bubblewrap"))
        assert "libseccomp2" in caught.value.hint
    finally:
        monkeypatch.undo()
        seccomp.compiled_filter.cache_clear()


# ---- the fs corpus: .pipe programs that try to change what the host executes ---------------------------------

FS_CORPUS = sorted((CORPUS_DIR / "fs").glob("*.pipe"))
NOTES_SERVER = Path(__file__).parent / "mcp_servers" / "notes_server.py"
USES_NOTES = ("use mcp.notes, wordy\n\npipeline main() -> int:\n"
              "    return mcp.notes.word_count(\"host code stays the person's\") + wordy.count(\"two words\")\n")
# A workspace skill of the person's (skills/), with a helper, so the corpus can aim at code `pipe` imports itself.
WORDY = '''"""Words, for the person's programs."""
from orgtree_lang.runtime.skills import skill

from ._text import words


@skill(pure=True)
def count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: Any text.
    """
    return len(words(text))
'''


def _host_workspace(root: Path) -> Path:
    """A workspace whose orgtree.toml starts a stdio MCP server from `tools/`, with its own Python skills (`skills/`,
    `[skills] paths`), the editor settings, links and virtualenv the corpus aims at."""
    import json
    import sys

    (root / "tools").mkdir(parents=True)
    shutil.copy(NOTES_SERVER, root / "tools" / "notes_server.py")
    (root / "venv" / "bin").mkdir(parents=True)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "venv" / "bin" / "python").symlink_to(sys.executable)
    (root / "orgtree.toml").write_text(
        f"[mcp.servers.notes]\ncommand = {json.dumps([sys.executable, 'tools/notes_server.py', 'calls.txt'])}\n\n"
        f"[mcp.servers.boxed]\ncommand = {json.dumps(['venv/bin/python', 'tools/notes_server.py', 'boxed.txt'])}\n\n"
        '[skills]\npaths = ["lib/skills"]\n')
    (root / "skills").mkdir()
    (root / "skills" / "wordy.py").write_text(WORDY)
    (root / "skills" / "_text.py").write_text("def words(text):\n    return text.split()\n")
    (root / "shared").mkdir()
    (root / "shared" / "shared_code.txt").write_text("SHARED = 1\n")
    (root / "skills" / "shared.py").symlink_to("../shared/shared_code.txt")
    (root / "lib" / "skills").mkdir(parents=True)
    (root / "lib" / "skills" / "extra.py").write_text("EXTRA = 1\n")
    (root / "skills-alias").symlink_to("skills")
    os.link(root / "skills" / "wordy.py", root / "wordy-link.txt")
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text('{"pipe.server.command": "pipe"}\n')
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "Makefile").write_text("all:\n\tpipe check uses_notes.pipe\n")
    (root / "uses_notes.pipe").write_text(USES_NOTES)
    os.link(root / "tools" / "notes_server.py", root / "notes-link.txt")
    (root / "alias.txt").symlink_to("tools/notes_server.py")
    (root / "tools-alias").symlink_to("tools")
    return root


def _tree(root: Path) -> dict[str, bytes]:
    """Every file and link of the workspace but the run's state and the server's call log, with its contents."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".orgtree" or Path(folder) != root]
        for name in files + [d for d in dirs if (Path(folder) / d).is_symlink()]:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if rel.startswith(("calls.txt", "boxed.txt")):
                continue
            found[rel] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return found


def _pipe(root: Path, *args: str) -> PipeResult:
    """`pipe ARGS` in `root`, in this process: the servers a run starts are the host processes the corpus aims at,
    started afresh by each run and stopped when it ends."""
    return pipe(*args, cwd=root, env={"PIPE_NO_PLUGINS": "1"})


def _processes_in(root: Path) -> list[str]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                cwd = os.readlink(f"/proc/{entry.name}/cwd")
            except OSError:
                continue
            if cwd == str(root) and entry.name != str(os.getpid()):
                found.append(f"{entry.name}: {cmdline}")
    return found


def test_the_fs_corpus_has_a_program_for_each_way_in():
    assert len(FS_CORPUS) >= 20
    for path in FS_CORPUS:
        assert _TRIES.search(path.read_text()) and "# expect: refused" in path.read_text(), path.name


@pytest.mark.parametrize("program", FS_CORPUS, ids=lambda p: p.name)
def test_a_run_cannot_change_what_the_host_executes(program, tmp_path):
    pytest.importorskip("mcp")
    root = _host_workspace(tmp_path / "ws")
    shutil.copy(program, root / "attack.pipe")
    before = _tree(root)

    attack = _pipe(root, "run", "attack.pipe")
    assert attack.returncode == 0 and attack.stdout.startswith("contained: "), attack.stdout + attack.stderr
    assert "ESCAPED" not in attack.stdout
    assert _tree(root) == before, "the run changed a file of the workspace"

    # The next run that needs the server starts it: it must run the person's code, and only that.
    later = _pipe(root, "run", "uses_notes.pipe")
    assert later.returncode == 0 and later.stdout.strip() == "7", later.stderr  # 5 words + 2: the person's code
    assert not list(root.rglob("ESCAPED")), "code written by the run was executed by the host"
    deadline = time.monotonic() + 3
    while _processes_in(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_in(root) == [], "a process of the runs outlived them"
