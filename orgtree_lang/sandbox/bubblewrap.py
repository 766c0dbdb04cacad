"""The local backend: run a CodeRequest under bubblewrap with every namespace unshared, rlimits, and a wall-clock kill."""

from __future__ import annotations

import math
import os
import resource
import select
import signal
import subprocess
import time
from pathlib import Path

from orgtree_lang.sandbox.output import CappedReader
from orgtree_lang.sandbox.scratch import RunFolders
from orgtree_lang.sandbox.settings import SHELLS, CodeRequest, CodeResult, SandboxSettings

NAME = "bubblewrap"
# Read-only system folders that python and sh need; /lib, /bin and friends are symlinks into /usr on
# merged-/usr systems and bound as folders elsewhere.
_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
# bwrap's own process is pid 1 inside the sandbox, where /proc/1/environ shows its environment to the code:
# it must not inherit ours (API keys, tokens). --clearenv only cleans the environment of the command.
_BWRAP_ENV = {"PATH": "/usr/bin:/bin"}
# (bwrap, sandbox user, interpreter) combinations that started a sandbox in this process: a fact about the
# machine, so later runs skip the probe. Only successes are kept; a failing setup is probed every time.
_WORKS: set[tuple[str, int | None, str]] = set()
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/alternatives")


class BubblewrapBackend:
    """Runs code with `bwrap`: no network, read-only system binds, one writable scratch folder, rlimits."""

    name = NAME

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings

    def unavailable_reason(self) -> str | None:
        """None when bubblewrap can start a sandbox here, else why not."""
        exe = self.settings.bwrap_path()
        if exe is None:
            return f"bubblewrap is not installed (no executable `{self.settings.bwrap}`)"
        probe_key = (exe, self._sandbox_uid(), self.settings.interpreter())
        if probe_key in _WORKS:
            return None
        try:
            probe = subprocess.run(self._argv(exe, [], ["/bin/true"], network=False), capture_output=True, env=_BWRAP_ENV,
                                   timeout=10, preexec_fn=self._limits(processes=16, cpu=5, memory_mb=256))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap at {exe} could not start: {exc}"
        if probe.returncode != 0:
            return f"bubblewrap at {exe} cannot create a sandbox here: {probe.stderr.decode(errors='replace').strip()}"
        _WORKS.add(probe_key)
        return None

    def run(self, request: CodeRequest, env_dir: Path | None = None) -> CodeResult:
        folders = RunFolders.create(request, self.settings.scratch_parent(), self._sandbox_uid())
        try:
            binds = ["--ro-bind", str(folders.program), "/program", "--bind", str(folders.scratch), "/scratch"]
            if env_dir is not None:
                binds += ["--ro-bind", str(env_dir), "/env"]
            command = self._command(request.language, folders.program_name, env_dir is not None)
            return self.execute(binds, command, request.timeout, request.memory_mb, folders, request.files)
        finally:
            folders.remove()

    def execute(self, binds: list[str], command: list[str], timeout: float, memory_mb: int,
                folders: RunFolders | None = None, given: dict[str, str] | None = None,
                network: bool = False, env: dict[str, str] | None = None) -> CodeResult:
        """Run `command` in a fresh sandbox with `binds`; kill its whole process tree at `timeout` seconds."""
        exe = self.settings.bwrap_path()
        assert exe is not None, "unavailable_reason() is checked before run()"
        cap = self.settings.max_output_bytes
        started = time.monotonic()
        proc = subprocess.Popen(
            self._argv(exe, binds, command, network=network, env=env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True, env=_BWRAP_ENV,
            preexec_fn=self._limits(self.settings.max_processes, cpu=math.ceil(timeout) + 1, memory_mb=memory_mb),
        )
        out, err = CappedReader(proc.stdout, cap), CappedReader(proc.stderr, cap)
        try:
            timed_out = not _wait_for_exit(proc, timeout)
        finally:
            # bwrap's process group holds only bwrap itself; killing it takes the sandbox's pid 1 down
            # (--die-with-parent), and the kernel then kills every process left in the pid namespace.
            _kill_group(proc.pid)
            proc.wait()
        duration = time.monotonic() - started
        stdout, stderr = out.text(), err.text()
        files, files_cut = folders.written_files(given or {}, cap) if folders else ({}, False)
        code = proc.returncode
        return CodeResult(
            exit_code=-signal.SIGKILL if timed_out else _exit_code(code), stdout=stdout, stderr=stderr,
            files=files, timed_out=timed_out, truncated=out.truncated or err.truncated or files_cut,
            backend=NAME, duration=duration,
        )

    def _command(self, language: str, program_name: str, with_env: bool) -> list[str]:
        if language == "python":
            python = "/env/bin/python" if with_env else self.settings.interpreter()
            return [python, "-s", f"/program/{program_name}"]
        return [SHELLS[language], f"/program/{program_name}"]

    def _sandbox_uid(self) -> int | None:
        """The user the sandbox runs as, when this process is root and can switch to it; None means ourselves."""
        return self.settings.uid if os.geteuid() == 0 else None

    def _argv(self, exe: str, binds: list[str], command: list[str], *, network: bool,
              env: dict[str, str] | None = None) -> list[str]:
        argv = [exe, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--hostname", "sandbox"]
        if network:
            argv.append("--share-net")
        for folder in _SYSTEM_DIRS:
            if os.path.islink(folder):
                argv += ["--symlink", os.readlink(folder), folder]
            elif os.path.isdir(folder):
                argv += ["--ro-bind", folder, folder]
        for path in _ETC_FILES:
            argv += ["--ro-bind-try", path, path]
        python_home = _prefix_outside_usr(self.settings.interpreter())
        if python_home:
            argv += ["--ro-bind", python_home, python_home]
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(64 << 20), "--tmpfs", "/tmp", *binds,
                 # the root folder bwrap builds is a tmpfs the code could write to: make it read-only
                 "--remount-ro", "/", "--chdir", "/scratch" if "/scratch" in binds else "/", "--clearenv"]
        base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/scratch", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": "/scratch", "ORGTREE_SANDBOX": "1"}
        for key, value in {**base, **(env or {})}.items():
            argv += ["--setenv", key, value]
        return argv + ["--", *command]

    def _limits(self, processes: int, cpu: int, memory_mb: int):
        """The preexec function: rlimits for the sandbox, then (as root) the switch to the sandbox user."""
        uid = self._sandbox_uid()
        s = self.settings
        # RLIMIT_NPROC counts every process of the user on the machine, so allow for the ones it has already.
        nproc = processes + _task_count(uid if uid is not None else os.getuid())
        limits = [(resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_CPU, cpu),
                  (resource.RLIMIT_AS, memory_mb << 20), (resource.RLIMIT_FSIZE, s.max_file_mb << 20),
                  (resource.RLIMIT_NOFILE, s.max_open_files), (resource.RLIMIT_CORE, 0)]

        def apply() -> None:
            for which, value in limits:
                resource.setrlimit(which, (value, value))
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)

        return apply


def _prefix_outside_usr(interpreter: str) -> str | None:
    """The install folder of an interpreter that lives outside /usr (pyenv, a venv base), to bind read-only."""
    real = Path(os.path.realpath(interpreter))
    if real.is_relative_to("/usr"):
        return None
    return str(real.parent.parent)


def _task_count(uid: int) -> int:
    """How many threads the user `uid` runs right now (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in os.scandir("/proc"):
        try:
            # The owner of /proc/PID is the process's user: a stat is far cheaper than reading every status file.
            if not entry.name.isdigit() or entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as handle:
                count += next((int(line.split()[1]) for line in handle if line.startswith("Threads:")), 1)
        except (OSError, ValueError):
            continue
    return count


def _wait_for_exit(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait until the process exits (True) or `timeout` passes (False), waking at once when it exits.

    Popen.wait(timeout) polls with sleeps of up to 50 ms, a large part of a short run; a pidfd does not.
    """
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        return bool(select.select([pidfd], [], [], timeout)[0])
    finally:
        os.close(pidfd)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exit_code(returncode: int) -> int:
    """bwrap reports a command killed by signal N as 128+N; give it as -N like subprocess does."""
    return -(returncode - 128) if 128 < returncode < 160 else returncode
