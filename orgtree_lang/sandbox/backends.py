"""Pick a sandbox backend from the settings, failing closed, and run one CodeRequest on it."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol, runtime_checkable

from orgtree_lang.sandbox.bubblewrap import BubblewrapBackend
from orgtree_lang.sandbox.environments import cached_environment
from orgtree_lang.sandbox.settings import (BACKEND_CLASSES, LANGUAGES, CodeRequest, CodeResult, SandboxError,
                                           SandboxSettings, SandboxUnavailable)


@runtime_checkable
class SandboxBackend(Protocol):
    """What code.run needs of a backend (a class of settings.BACKEND_CLASSES built with the SandboxSettings)."""

    name: str

    def unavailable_reason(self) -> str | None: ...

    def run(self, request: CodeRequest, env_dir: Path | None = None) -> CodeResult: ...


def backend_class(name: str) -> type:
    module, _, attribute = BACKEND_CLASSES[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def choose_backend(settings: SandboxSettings) -> SandboxBackend:
    """The first backend of the configured order that can start; SandboxUnavailable naming each one's reason."""
    reasons = []
    for name in tuple(BACKEND_CLASSES) if settings.backend == "auto" else (settings.backend,):
        backend = backend_class(name)(settings)
        reason = backend.unavailable_reason()
        if reason is None:
            return backend
        reasons.append(f"{name}: {reason}")
    raise SandboxUnavailable(
        "code.run refuses to run the code: no sandbox can start here (" + "; ".join(reasons) + ")",
        hint="install bubblewrap and libseccomp (`apt-get install -y bubblewrap libseccomp2`; pyseccomp comes with "
             "orgtree-lang) or start a Docker engine, and check "
             "[sandbox] backend and bwrap in orgtree.toml; code is never run outside a sandbox",
    )


def check_request(request: CodeRequest, settings: SandboxSettings) -> None:
    """SandboxError for a language the sandbox does not run or limits beyond the configured maximums."""
    if request.language not in LANGUAGES:
        raise SandboxError(f"code.run: language {request.language!r} is not supported",
                           hint="use one of " + ", ".join(sorted(LANGUAGES)))
    if not 0 < request.timeout <= settings.max_timeout:
        raise SandboxError(f"code.run: timeout {request.timeout} s is outside (0, {settings.max_timeout}]",
                           hint="raise [sandbox] max_timeout in orgtree.toml for longer runs")
    if not 16 <= request.memory_mb <= settings.max_memory_mb:
        raise SandboxError(f"code.run: memory {request.memory_mb} MiB is outside [16, {settings.max_memory_mb}]",
                           hint="raise [sandbox] max_memory_mb in orgtree.toml for bigger runs")


def run_code(request: CodeRequest, settings: SandboxSettings) -> CodeResult:
    """Run the request in the first sandbox that can start; never outside one."""
    check_request(request, settings)
    backend = choose_backend(settings)
    env_dir = None
    if request.requirements:
        if not isinstance(backend, BubblewrapBackend):
            raise SandboxError("code.run: requirements can only be installed with the bubblewrap backend",
                               hint="bake them into [sandbox] docker_image instead")
        env_dir = cached_environment(request.requirements, settings, backend)
    return backend.run(request, env_dir)
