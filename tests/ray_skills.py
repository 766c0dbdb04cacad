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


@skill("ledger.apply_waiting", remote=True, cpu=0.1)
def apply_waiting(ctx: SkillContext, folder: str, tag: str, hold: bool = False) -> str:
    """ledger.apply as a skill that mostly waits (a tenth of a CPU): under Ray it runs on the waiting pool.

    Args:
        folder: A folder the test reads.
        tag: Returned, with the key.
        hold: Wait to be killed on the first try.
    """
    return apply(ctx, folder, tag, hold)


@skill("ledger.gather", slow=True, remote=True, cpu=0.1)
def gather(folder: str, count: int) -> str:
    """Log this process to `folder`/arrived, then wait until `count` calls have arrived: calls that ran one after
    another would never all arrive, so the call fails after 60 s instead of returning.

    Args:
        folder: A folder the test reads.
        count: How many calls must be waiting at once.
    """
    arrived = Path(folder) / "arrived"
    with open(arrived, "a", encoding="utf-8") as out:
        out.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + 60
    while len(arrived.read_text(encoding="utf-8").splitlines()) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(arrived.read_text().splitlines())} of {count} calls waited at once")
        time.sleep(0.02)
    return "met"


def registry() -> SkillRegistry:
    """The stdlib and the ledger skills."""
    from orgtree_lang.run.registries import default_registry

    skills = default_registry(plugins=False)
    for found in (apply, apply_waiting, gather, wait):
        skills.register(found)
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
