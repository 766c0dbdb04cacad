"""Requirements to a cached virtualenv: one folder per hash of the requirement list, installed inside the sandbox."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from orgtree_lang.sandbox.bubblewrap import BubblewrapBackend
from orgtree_lang.sandbox.settings import SandboxError, SandboxSettings

_DONE = ".orgtree-env-complete"
# A requirement is a name with optional extras and version specifiers; no URLs, paths or pip options.
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?\s*([<>=!~]=?\s*[A-Za-z0-9.*+!-]+\s*,?\s*)*$")
# pip's settings from the environment (index, certificates, timeouts) reach the installer; nothing else does.
_PASSED = ("PIP_", "SSL_CERT", "REQUESTS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
           "http_proxy", "https_proxy", "no_proxy")


def requirements_key(requirements: tuple[str, ...], interpreter: str) -> str:
    """The cache key: a hash of the sorted requirements and the interpreter they are installed for."""
    text = "\n".join(sorted(r.strip() for r in requirements)) + "\n" + os.path.realpath(interpreter)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def check_requirements(requirements: tuple[str, ...]) -> None:
    """SandboxError for anything that is not a plain requirement (a URL, a path or a pip option)."""
    for req in requirements:
        if not _REQUIREMENT.match(req.strip()):
            raise SandboxError(f"code.run: requirement {req!r} is not a package name with optional versions",
                               hint='write requirements like "six" or "attrs>=23,<24"; URLs, paths and '
                                    "pip options are not accepted")


def cached_environment(requirements: tuple[str, ...], settings: SandboxSettings,
                       backend: BubblewrapBackend) -> Path:
    """The virtualenv folder with `requirements` installed, installing it once if the settings allow."""
    check_requirements(requirements)
    cache = settings.env_cache_dir()
    final = cache / requirements_key(requirements, settings.interpreter())
    if _complete(final):
        return final
    if not settings.allow_install:
        raise SandboxError(
            f"code.run: requirements {', '.join(requirements)} are not installed, and installing is switched off",
            hint="set `allow_install = true` under [sandbox] in orgtree.toml to let code.run install "
                 "requirements (with network access during the install only), or drop the requirements",
        )
    cache.mkdir(parents=True, exist_ok=True)
    os.chmod(cache, 0o755)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=cache))
    try:
        _install(requirements, building, settings, backend)
        _mark_complete(building, requirements)
        try:
            building.rename(final)
        except OSError:  # another run finished the same environment first: use theirs
            if not _complete(final):
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final


def _mark_complete(folder: Path, requirements: tuple[str, ...]) -> None:
    """Write the completion marker into a folder the install's code could write: never through a link.

    The folder is opened without following a link and the marker created only if nothing is there yet
    (O_EXCL does not follow a link either); a file the install left in its place fails the install.
    """
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(_DONE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=folder_fd)
    except FileExistsError:
        raise SandboxError(f"code.run: installing {', '.join(requirements)} left a file at {_DONE}, the name "
                           "that marks a finished environment; the environment is not used",
                           hint="a requirement's build code wrote where it must not; check the requirements") from None
    finally:
        os.close(folder_fd)
    with os.fdopen(fd, "w", encoding="utf-8") as marker:
        marker.write("\n".join(requirements) + "\n")


def _complete(folder: Path) -> bool:
    """True when the folder holds the marker as a regular file the host wrote (a link does not count)."""
    try:
        found = os.stat(folder / _DONE, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid()


def _install(requirements: tuple[str, ...], folder: Path, settings: SandboxSettings,
             backend: BubblewrapBackend) -> None:
    """Create a venv in `folder` and pip-install into it, inside a sandbox that has the network and /etc."""
    os.chmod(folder, 0o755)
    if os.geteuid() == 0:
        os.chown(folder, settings.uid, settings.uid)
    python = settings.interpreter()
    script = (f"{python} -m venv --without-pip /env && "
              f"{python} -m pip --python /env/bin/python install --no-input --quiet --disable-pip-version-check "
              + " ".join(_quote(r) for r in requirements))
    env = {key: value for key, value in os.environ.items() if key.startswith(_PASSED)}
    result = backend.execute(["--ro-bind", "/etc", "/etc", "--bind", str(folder), "/env"], ["/bin/sh", "-c", script],
                             settings.install_timeout, max(settings.memory_mb, 1024), network=True, env=env)
    if result.exit_code != 0 or not result.contained:
        why = ("timed out" if result.timed_out else f"exited with {result.exit_code}" if result.exit_code
               else "left processes that could not be shown to have ended")
        raise SandboxError(f"code.run: installing {', '.join(requirements)} {why}: {result.stderr.strip()[-600:]}",
                           hint="check the requirement names and versions")


def _quote(text: str) -> str:
    return "'" + text.strip().replace("'", "'\\''") + "'"
