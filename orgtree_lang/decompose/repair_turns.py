"""One repair of a module at a time in a run tree: a reach of a block (a parallel branch) whose module failed waits
while another reach repairs that module, then runs the block again on the revision instead of repairing it twice."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from orgtree_lang.decompose.store import SavedModule, body_hash


class RepairTurns:
    """Who repairs the module of each spec hash now (one block reach at a time); shared by a run tree's decomposers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, threading.Event]] = {}  # spec hash -> (block node repairing, set when done)

    def take(self, decomposer, block, digest: str, ran: SavedModule, *, newer: bool = True):
        """None once `block`'s reach holds the turn to repair the module of `digest` (give it back with `release`);
        the (module, program) to run the block again on instead, when another reach has revised the module `ran`
        meanwhile (`newer=False`: hold the turn whatever the module is, as a resumed reach that repaired does)."""
        while True:
            with self._lock:
                revised = revision(decomposer, digest, ran) if newer else None
                if revised is not None:
                    return revised
                holder = self._held.get(digest)
                # Never wait for a reach this block runs inside (its module's nested block of the same spec).
                if holder is None or holder[0] == block.node or block.node.startswith(holder[0] + "/"):
                    self._held[digest] = (block.node, holder[1] if holder else threading.Event())
                    return None
            block.note(f"waiting while {holder[0]} repairs the module")
            block.spend.away(holder[1].wait)

    def release(self, block, digest: str) -> None:
        with self._lock:
            holder = self._held.get(digest)
            if holder is not None and holder[0] == block.node:
                del self._held[digest]
                holder[1].set()


def revision(decomposer, digest: str, ran: SavedModule):
    """The module of `digest` this run tree has now, with its program, when it is not the one `ran` (another reach
    repaired it), else None: this decomposer's, or the store's (a sibling decomposer's repair of a nested block)."""
    ran_hash = body_hash(ran.body)
    known = decomposer.current(digest)
    if known is not None and body_hash(known[0].body) != ran_hash:
        return known
    saved = decomposer.store.find(digest)
    if saved is None or body_hash(saved.body) == ran_hash or (known is not None and known[0].text == saved.text):
        return None
    return saved, compiled(decomposer, saved)


def compiled(decomposer, saved: SavedModule):
    from orgtree_lang.compile.api import compile_source

    return compile_source(saved.text, str(saved.path), decomposer.registry).program


def repair_turn(decomposer, block, digest: str, ran: SavedModule):
    """`RepairTurns.take` for this reach, as a journaled step of the block in a durable run (kind `module`): which
    way it went (this reach repairs, or runs again on another's revision, by its body hash) is the journal's on
    resume and replay, whatever the timing of the other reaches then."""
    turns = decomposer.repair_turns
    if block.effects is None or block.effects.mode == "retry":
        return turns.take(decomposer, block, digest, ran)
    step = block.effect_step("module", f"repair turn for {block.spec.name}", [digest, body_hash(ran.body)], {})
    taken: list[Any] = []

    def decide(_key: str | None) -> dict[str, Any]:
        taken.append(turns.take(decomposer, block, digest, ran))
        if taken[0] is None:
            return {"turn": "repair"}
        return {"turn": "run again", "path": str(taken[0][0].path), "body-hash": body_hash(taken[0][0].body)}

    found = block.effects.perform(step, decide)
    if taken:
        return taken[0]
    if found["turn"] == "repair":
        return turns.take(decomposer, block, digest, ran, newer=False)
    known = decomposer.current(digest)
    if known is not None and body_hash(known[0].body) == found["body-hash"]:
        return known
    text = decomposer._text_of(Path(found["path"]), found["body-hash"], block)
    saved = SavedModule(Path(text["path"]), text["provenance"], text["body"], text["text"])
    return saved, compiled(decomposer, saved)
