"""The code skill: take Python or shell source with input files and run it in a sandbox, returning its output and files."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.skills import SkillContext, skill


@skill("code.run", slow=True, remote=True)
def run(ctx: SkillContext, language: str, source: str, files: dict[str, str] | None = None,
        requirements: list[str] | None = None, timeout: float | None = None,
        memory: int | None = None) -> dict[str, Any]:
    """Run Python or shell code in a sandbox with no network and one private writable folder.

    The code sees only read-only system folders, its own source at /program, and a scratch folder
    (its working directory) holding `files`. It cannot reach the network, the workspace or anything
    of the host. If no sandbox can start (see [sandbox] in orgtree.toml), the call fails and the
    code is not run.

    Args:
        language: `python`, `sh` or `bash`.
        source: The program text.
        files: Text files to put in the scratch folder first, by relative name.
        requirements: Python packages to install into a cached virtualenv first (only if
            [sandbox] allow_install is true), e.g. `["attrs>=23"]`.
        timeout: Wall-clock seconds before every process of the run is killed (default [sandbox] timeout).
        memory: Address-space limit per process in MiB (default [sandbox] memory_mb).

    Returns:
        A dict with `exit_code` (negative signal number if killed), `stdout`, `stderr`, `files`
        (new or changed text files in scratch), `timed_out`, `truncated` (output or files were cut
        with a marker), `backend` and `duration` in seconds.
    """
    # Imported here: subprocess, tempfile and the backends are not needed by `pipe check` or `pipe --help`.
    from orgtree_lang.sandbox.backends import run_code
    from orgtree_lang.sandbox.settings import CodeRequest, SandboxSettings

    # The workspace's own orgtree.toml as read when the run started: the fs skills refuse to change the file,
    # and a change made some other way mid-run takes effect only on the next run.
    settings = SandboxSettings.from_config(ctx.config)
    request = CodeRequest(
        language=language, source=source, files=dict(files or {}), requirements=tuple(requirements or ()),
        timeout=float(timeout if timeout is not None else settings.timeout),
        memory_mb=int(memory if memory is not None else settings.memory_mb),
    )
    return run_code(request, settings).as_value()
