"""The review subject of a writing as a journaled step: a resumed block reviews under the same subject, so its
questions repeat word for word and their answers (a person's among them) come from the journal."""

from __future__ import annotations


def review_subject(block, ledger, base: str) -> str:
    """The subject `<base>:<n>` for this writing of a module: numbered afresh (`n` = writings reviewed so far + 1)
    on a first run, the stopped attempt's own on a resume or replay of the block (`block` a vm.blocks.BlockContext).

    On a resume, what the stopped attempt recorded in `ledger` under that subject is forgotten first: replaying
    its journaled answers records the same rounds and concerns again."""

    def numbered(_key: str | None = None) -> str:
        fresh.append(True)
        return f"{base}:{len(ledger.subjects(base + ':')) + 1}"

    fresh: list[bool] = []
    if block.effects is None:
        return numbered()
    subject = block.effects.perform(block.effect_step("review", base, [], {}), numbered)
    if not fresh:
        ledger.forget(subject)
    return subject
