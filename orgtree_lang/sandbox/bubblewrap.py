"""The local backend: run a CodeRequest under bubblewrap with every namespace unshared, rlimits, and a wall-clock kill."""

from __future__ import annotations

import math
import os
import re
import resource
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

from orgtree_lang.sandbox.cgroup import MemoryCgroup
from orgtree_lang.sandbox.cgroup import join as join_cgroup
from orgtree_lang.sandbox.output import CappedReader
from orgtree_lang.sandbox.scratch import RunFolders
from orgtree_lang.sandbox.seccomp import compiled_filter, filter_fd
from orgtree_lang.sandbox.settings import CODE_ENV, SHELLS, CodeRequest, CodeResult, SandboxSettings, SandboxUnavailable

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
# One probe at a time: each sets its process limit from the sandbox user's processes when it starts, so probes run
# at once (the first code.run calls of parallel branches) pushed each other over it and were refused.
_PROBING = threading.Lock()
# The sandbox's two writable memory file systems, and the room its memory cgroup leaves them above `memory`.
_TMP_MB, _SHM_MB = 64, 16
_TMPFS_MB = _TMP_MB + _SHM_MB
# How long the host waits for the kernel to end the sandbox's processes after killing its init.
_REAP_SECONDS = 5.0
_GONE = -1  # in place of a pidfd: the sandbox's init is known to have ended, or never started
_CHILD_PID = re.compile(rb'"child-pid":\s*(\d+)')
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
        try:
            compiled_filter()  # built once per process
        except SandboxUnavailable as exc:
            return str(exc).removeprefix("code.run refuses to run the code: ")
        probe_key = (exe, self._sandbox_uid(), self.settings.interpreter())
        if probe_key in _WORKS:
            return None
        with _PROBING:
            if probe_key in _WORKS:  # another thread's probe passed while this one waited
                return None
            try:
                probe = subprocess.run(self._argv(exe, [], ["/bin/true"], network=False), capture_output=True,
                                       env=_BWRAP_ENV, timeout=10,
                                       preexec_fn=self._limits(processes=16, cpu=5, memory_mb=256))
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"bubblewrap at {exe} could not start: {exc}"
            if probe.returncode != 0:
                return (f"bubblewrap at {exe} cannot create a sandbox here: "
                        f"{probe.stderr.decode(errors='replace').strip()}")
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
        """Run `command` in a fresh sandbox with `binds`; kill its whole process tree at `timeout` seconds.

        Files are read back from scratch only after every process of the sandbox is known to be dead.
        """
        exe = self.settings.bwrap_path()
        assert exe is not None, "unavailable_reason() is checked before run()"
        cap = self.settings.max_output_bytes
        started = time.monotonic()
        seccomp_fd = filter_fd(network)
        info_read, info_write = os.pipe()
        group = MemoryCgroup.create((memory_mb + _TMPFS_MB) << 20)
        try:
            argv = self._argv(exe, binds, command, network=network, env=env)
            argv[1:1] = ["--seccomp", str(seccomp_fd), "--info-fd", str(info_write)]
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, close_fds=True, pass_fds=(seccomp_fd, info_write), env=_BWRAP_ENV,
                preexec_fn=self._limits(self.settings.max_processes, cpu=math.ceil(timeout) + 1,
                                        memory_mb=memory_mb, cgroup=group),
            )
        except BaseException:
            os.close(info_read)
            if group:
                group.remove()
            raise
        finally:
            os.close(seccomp_fd)
            os.close(info_write)
        out, err = CappedReader(proc.stdout, cap), CappedReader(proc.stderr, cap)
        init = None
        try:
            init = _sandbox_init(proc, info_read, started + timeout)
            timed_out = not _wait_for_exit(proc, max(0.0, started + timeout - time.monotonic()))
        finally:
            os.close(info_read)
            ended = _kill_sandbox(proc, init, group)
            if group:
                group.remove()
        duration = time.monotonic() - started
        stdout, stderr = out.text(), err.text()
        files, files_cut = {}, False
        if folders is not None and ended:
            files, files_cut, notes = folders.written_files(given or {}, cap)
            stderr += "".join(f"\n[sandbox: {note}]" for note in notes)
        elif not ended:
            stderr += "\n[sandbox: files were not read back: not every process of the run could be shown to have ended]"
        code = proc.returncode
        return CodeResult(
            exit_code=-signal.SIGKILL if timed_out else _exit_code(code), stdout=stdout, stderr=stderr,
            files=files, timed_out=timed_out, truncated=out.truncated or err.truncated or files_cut,
            backend=NAME, duration=duration, contained=ended,
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
        # /dev read-only but for a size-capped /dev/shm: bwrap's /dev is a tmpfs with no size limit.
        # The init's memory (bwrap, pid 1) is masked: open read-write, it would let the code rewrite the process the
        # host kills to end the run. Other processes of the sandbox are the code's own.
        argv += ["--proc", "/proc", "--ro-bind", "/dev/null", "/proc/1/mem", "--ro-bind", "/dev/null",
                 "/proc/1/task/1/mem"]
        argv += ["--dev", "/dev", "--remount-ro", "/dev", "--size", str(_SHM_MB << 20), "--tmpfs",
                 "/dev/shm", "--size", str(_TMP_MB << 20), "--tmpfs", "/tmp", *binds,
                 # the root folder bwrap builds is a tmpfs the code could write to: make it read-only
                 "--remount-ro", "/", "--chdir", "/scratch" if "/scratch" in binds else "/", "--clearenv"]
        base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/scratch", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": "/scratch", "ORGTREE_SANDBOX": "1", **CODE_ENV}
        for key, value in {**base, **(env or {})}.items():
            argv += ["--setenv", key, value]
        return argv + ["--", *command]

    def _limits(self, processes: int, cpu: int, memory_mb: int, cgroup: MemoryCgroup | None = None):
        """The preexec function: rlimits for the sandbox, then (as root) the switch to the sandbox user."""
        uid = self._sandbox_uid()
        s = self.settings
        # RLIMIT_NPROC counts every process of the user on the machine, so allow for the ones it has already.
        nproc = processes + _task_count(uid if uid is not None else os.getuid())
        limits = [(resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_CPU, cpu),
                  (resource.RLIMIT_AS, memory_mb << 20), (resource.RLIMIT_FSIZE, s.max_file_mb << 20),
                  (resource.RLIMIT_NOFILE, s.max_open_files), (resource.RLIMIT_CORE, 0)]

        procs_file = cgroup.procs_file() if cgroup else None

        def apply() -> None:
            if procs_file:
                join_cgroup(procs_file)
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


def _sandbox_init(proc: subprocess.Popen, info_fd: int, deadline: float) -> int | None:
    """A pidfd for the sandbox's init (pid 1 of its pid namespace), from the pid bwrap writes to --info-fd.

    _GONE when no process of the sandbox can exist any more (bwrap failed before starting one, or its init
    already ended, which takes every other process of the namespace with it); None when the init cannot be
    told, and then nothing is trusted to have ended.
    """
    data = b""
    while (found := _CHILD_PID.search(data)) is None:
        if not select.select([info_fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            return None
        chunk = os.read(info_fd, 4096)
        if not chunk:
            return _GONE
        data += chunk
    pid = int(found.group(1))
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # bwrap's child already ended and was reaped: its namespace is gone with it
        return _GONE if _parent_of(pid) is None else None
    # The pid could only have been reused if bwrap had already reaped its child: check it is still bwrap's.
    if _parent_of(pid) != proc.pid:
        os.close(pidfd)
        return None
    return pidfd


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rpartition(b")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _kill_sandbox(proc: subprocess.Popen, init: int | None, group: MemoryCgroup | None) -> bool:
    """Kill bwrap and the sandbox's init; True once every process of the sandbox is known to have ended.

    Killing a pid namespace's init makes the kernel kill every other process in it, and the init only
    finishes exiting (its pidfd becomes readable) after all of them are gone. Sandboxed code cannot
    keep its init alive (ptrace is refused by the seccomp filter).
    """
    ended = init == _GONE
    if init is not None and init != _GONE:
        try:
            signal.pidfd_send_signal(init, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            ended = bool(select.select([init], [], [], _REAP_SECONDS)[0])
        finally:
            os.close(init)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    if group is not None and group.pids():
        # Not seen through the pid namespace: kill what the cgroup still holds, which no process inside can leave.
        deadline = time.monotonic() + _REAP_SECONDS
        while (left := group.pids()) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        ended = ended and not group.pids()
    return ended


def _exit_code(returncode: int) -> int:
    """bwrap reports a command killed by signal N as 128+N; give it as -N like subprocess does."""
    return -(returncode - 128) if 128 < returncode < 160 else returncode
