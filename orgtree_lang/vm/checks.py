"""The CHECK instruction: an `assume`, `expect` or example that does not hold stops with an error naming it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import UNBOUND, display_short
from orgtree_lang.syntax import types as t

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

# The error kind (`err.kind`) of each check, and how to fix a failure.
KINDS = {"assume": "assumption", "expect": "expectation", "example": "example", "fails": "example"}
_HINTS = {
    "assume": "the code after this line relies on it: check where these values come from, or handle this case "
              "before the `assume`",
    "expect": "these values break what the code promises: fix the code that produced them, or the `expect` if "
              "the promise is wrong",
    "example": "fix the pipeline, or the example if its expected value is wrong",
    "fails": "fix the pipeline so that it fails with that message, or the example if the message is wrong",
}


def op_check(m: Machine, frame, stack, arg):
    held = stack.pop()
    if held is True:
        return None
    check = frame.code.checks[arg]
    word = KINDS[check.kind]
    if held is not False:
        raise PipeRuntimeError(f"the condition of this {word} must be a bool, got {t.type_of_value(held)}",
                               kind="type", hint="compare it: `len(xs) > 0`, `x is not none`")
    values = [(label, frame.locals[slot]) for slot, label in zip(check.slots, check.labels)]
    if check.kind == "fails":
        (label, got), (_, expected) = values
        said = f"returned {display_short(got, 200)}" if label == "returned" else \
            f"failed with a `{got.fields['kind']}` error {display_short(got.fields['message'], 200)}"
        message = (f"{check.reason} does not hold: {check.text} {said}, expected it to fail with a message "
                   f"containing {display_short(expected, 200)}")
    elif check.kind == "example":
        (_, got), (_, expected) = values
        message = (f"{check.reason} does not hold: {check.text} gave {display_short(got, 200)}, expected "
                   f"{display_short(expected, 200)}")
    else:
        shown = "; ".join(f"{label} = {display_short(value, 120)}" for label, value in values
                          if value is not UNBOUND)
        message = f"{word} does not hold: {check.text} ({check.reason})" + (f"; {shown}" if shown else "")
    raise PipeRuntimeError(message, kind=word, hint=_HINTS[check.kind])
