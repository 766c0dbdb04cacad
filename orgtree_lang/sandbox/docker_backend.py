"""The Docker backend: run a CodeRequest in a locked-down container through the `docker` SDK, when an engine answers."""

from __future__ import annotations

import os
import signal
import time

from orgtree_lang.sandbox.output import truncation_marker
from orgtree_lang.sandbox.scratch import RunFolders
from orgtree_lang.sandbox.settings import CODE_ENV, SHELLS, CodeRequest, CodeResult, SandboxSettings

NAME = "docker"
CONTAINER_UID = 65534  # `nobody`: the user code runs as inside the container


class DockerBackend:
    """Containers with no network, a read-only root, dropped capabilities, and pids, memory and CPU limits."""

    name = NAME

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self._client = None

    def unavailable_reason(self) -> str | None:
        """None when a Docker engine answers a ping, else why not (no SDK, no engine)."""
        try:
            import docker
        except ImportError:
            return "the `docker` Python package is not installed (pip install 'orgtree-lang[docker]')"
        try:
            client = docker.from_env(timeout=3)
            client.ping()
        except Exception as exc:  # the SDK raises DockerException, requests errors or OSError by setup
            return f"no Docker engine is reachable: {exc}"
        self._client = client
        return None

    def run(self, request: CodeRequest, env_dir=None) -> CodeResult:
        assert self._client is not None, "unavailable_reason() is checked before run()"
        # The container runs as 65534, which must own (or, for a host user who cannot chown, be let into) scratch.
        root = os.geteuid() == 0
        folders = RunFolders.create(request, self.settings.scratch_parent(), owner=CONTAINER_UID if root else None)
        started = time.monotonic()
        try:
            if not root:
                os.chmod(folders.scratch, 0o777)
            container = self._client.containers.run(
                self.settings.docker_image, _command(request.language, folders.program_name),
                detach=True, network_disabled=True, read_only=True, cap_drop=["ALL"],
                user=f"{CONTAINER_UID}:{CONTAINER_UID}", security_opt=["no-new-privileges"],
                pids_limit=self.settings.max_processes, mem_limit=f"{request.memory_mb}m", nano_cpus=1_000_000_000,
                working_dir="/scratch", tmpfs={"/tmp": "size=64m"},
                environment={"HOME": "/scratch", "PYTHONPATH": "/scratch", **CODE_ENV},
                volumes={str(folders.program): {"bind": "/program", "mode": "ro"},
                         str(folders.scratch): {"bind": "/scratch", "mode": "rw"}},
            )
        except BaseException:  # the container never started: leave no run folder behind
            folders.remove()
            raise
        timed_out = False
        try:
            try:
                status = container.wait(timeout=request.timeout)["StatusCode"]
            except Exception:  # requests' ReadTimeout: the wall clock ran out
                timed_out = True
                container.kill()
                status = -signal.SIGKILL
            cap = self.settings.max_output_bytes
            stdout, out_cut = _capped(container.logs(stdout=True, stderr=False), cap)
            stderr, err_cut = _capped(container.logs(stdout=False, stderr=True), cap)
            files, files_cut, notes = folders.written_files(request.files, cap)
            stderr += "".join(f"\n[sandbox: {note}]" for note in notes)
        finally:
            container.remove(force=True)
            folders.remove()
        return CodeResult(status, stdout, stderr, files, timed_out, out_cut or err_cut or files_cut, NAME,
                          time.monotonic() - started)


def _command(language: str, program_name: str) -> list[str]:
    interpreter = ["python3", "-s"] if language == "python" else [SHELLS[language]]
    return interpreter + [f"/program/{program_name}"]


def _capped(data: bytes, cap: int) -> tuple[str, bool]:
    text = data[:cap].decode("utf-8", errors="replace")
    return (text + truncation_marker(cap), True) if len(data) > cap else (text, False)
