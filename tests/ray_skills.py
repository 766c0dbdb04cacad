"""Skills for the Ray tests: an effect applied once per idempotency key, whose first try can be killed mid-task."""

from __future__ import annotations

import os
import time
from pathlib import Path

from orgtree_lang.runtime.skills import SkillContext, SkillRegistry, skill


@skill("ledger.apply", remote=True)
def apply(ctx: SkillContext, folder: str, tag: str, hold: bool = False) -> str:
    """Append the call's idempotency key to `folder`/ledger unless it is there already (the effect, at most once).

    Every try is logged in `folder`/tries as `key pid`. With `hold`, the first try applies the effect, writes
    its process id to `folder`/pid and waits there to be killed before it can return.

    Args:
        folder: A folder the test reads.
        tag: Returned, with the key.
        hold: Wait to be killed on the first try.
    """
    base = Path(folder)
    key = ctx.idempotency_key
    with open(base / "tries", "a", encoding="utf-8") as tries:
        tries.write(f"{key} {os.getpid()}\n")
    ledger = base / "ledger"
    applied = ledger.read_text(encoding="utf-8").split() if ledger.exists() else []
    if key not in applied:
        with open(ledger, "a", encoding="utf-8") as out:
            out.write(f"{key}\n")
    if hold and not (base / "pid").exists():
        (base / "pid").write_text(str(os.getpid()), encoding="utf-8")
        time.sleep(120)
    return f"{tag} {key}"


def registry() -> SkillRegistry:
    """The stdlib, ledger.apply and ledger.wait."""
    from orgtree_lang.run.registries import default_registry

    skills = default_registry(plugins=False)
    skills.register(apply)
    skills.register(wait)
    return skills


@skill("ledger.wait", slow=True, remote=True, cpu=0.1)
def wait(folder: str, seconds: float) -> None:
    """Wait `seconds`, then log the CPU share Ray gave the task to `folder`/waits (the fractional-CPU test).

    Args:
        folder: A folder the test reads.
        seconds: How long to wait.
    """
    import ray

    time.sleep(seconds)
    cpu = ray.get_runtime_context().get_assigned_resources().get("CPU")
    with open(Path(folder) / "waits", "a", encoding="utf-8") as out:
        out.write(f"{cpu} {os.getpid()}\n")
