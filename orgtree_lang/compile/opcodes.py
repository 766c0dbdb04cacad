"""The instruction set: one table of opcodes (operand kind, stack effect, stack picture) read by every layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Opcode:
    """One instruction. `effect(arg, code)` is the stack change when execution falls through;
    `jump_effect` is the change when the instruction jumps (None if it never jumps)."""

    code: int
    name: str
    # What the argument means: one field kind (none, const, local, jump, count, binop, compare, unary, call,
    # attr, ambiguous, check, branch, branches), or for a superinstruction several, space-separated, and its
    # argument a list with one item per field in the order the instruction uses them ("local const binop").
    operand: str
    picture: str  # stack before -- stack after
    doc: str
    effect: Callable[[object, object], int]
    jump_effect: int | None = None
    # For an instruction of the organization (tasks, messages, people): how a program writes it. The machine hands
    # it to its Org (vm/organization.py), and a machine built without one names it in its error.
    org: str = ""

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.operand.split())

    def field(self, arg, kind: str):
        """The item of field `kind` in an argument of this instruction (the argument itself for one field)."""
        fields = self.fields
        return arg if len(fields) == 1 else arg[fields.index(kind)]

    def jump_target(self, arg) -> int:
        """Where a jumping instruction goes (a superinstruction's target is its last field)."""
        return arg[-1] if isinstance(arg, list) else arg


def _fixed(n: int) -> Callable[[object, object], int]:
    return lambda arg, code: n


def _call_effect(arg, code) -> int:
    site = code.calls[arg]
    return 1 - site.nargs - len(site.kwnames)


def _ambiguous_effect(arg, code) -> int:
    spec = code.ambiguous[arg]
    return len(spec.outputs) - len(spec.inputs)


_TABLE = [
    # name, operand, picture, effect, jump_effect, doc[, org]
    ("STMT", "none", "--", _fixed(0), None,
     "Start of a statement: counts one step against the budget and is where the run may pause."),
    ("LOAD_CONST", "const", "-- value", _fixed(1), None, "Push constant number `arg`."),
    ("LOAD_LOCAL", "local", "-- value", _fixed(1), None,
     "Push local variable `arg`; a runtime error if it has not been assigned yet."),
    ("LOAD_LOCAL2", "local local", "-- a b", _fixed(2), None,
     "Push local variables `arg[0]` and `arg[1]` (a superinstruction for two LOAD_LOCALs)."),
    ("STORE_LOCAL", "local", "value --", _fixed(-1), None, "Pop the top of the stack into local variable `arg`."),
    ("POP", "none", "value --", _fixed(-1), None, "Discard the top of the stack."),
    ("DUP", "none", "a -- a a", _fixed(1), None, "Duplicate the top of the stack."),
    ("ROT2", "none", "a b -- b a", _fixed(0), None, "Swap the two top items."),
    ("ROT3", "none", "a b c -- c a b", _fixed(0), None, "Move the top item below the next two."),
    ("BINARY", "binop", "a b -- a<op>b", _fixed(-1), None,
     "Apply arithmetic operator `arg` (+ - * / // % **) to the two top items."),
    ("BINARY_CONST", "const binop", "a -- a<op>const", _fixed(0), None,
     "Apply operator `arg[1]` to the top of the stack and constant `arg[0]` (LOAD_CONST + BINARY fused)."),
    ("BINARY_LOCAL_CONST", "local const binop", "-- a<op>const", _fixed(1), None,
     "Push local `arg[0]` <op `arg[2]`> constant `arg[1]` (LOAD_LOCAL + BINARY_CONST fused)."),
    ("BINARY_LOCALS", "local local binop", "-- a<op>b", _fixed(1), None,
     "Push local `arg[0]` <op `arg[2]`> local `arg[1]` (LOAD_LOCAL2 + BINARY fused)."),
    ("BINARY_LOCALS_STORE", "local local binop local", "--", _fixed(0), None,
     "Store local `arg[0]` <op `arg[2]`> local `arg[1]` in local `arg[3]`, as in `total += x` "
     "(BINARY_LOCALS + STORE_LOCAL fused)."),
    ("BINARY_STORE", "binop local", "a b --", _fixed(-2), None,
     "Apply operator `arg[0]` to the two top items and store the result in local `arg[1]` (BINARY + "
     "STORE_LOCAL fused)."),
    ("BINARY_CONST_STORE", "const binop local", "a --", _fixed(-1), None,
     "Store the top of the stack <op `arg[1]`> constant `arg[0]` in local `arg[2]` (BINARY_CONST + "
     "STORE_LOCAL fused)."),
    ("BINARY_LOCAL_CONST_STORE", "local const binop local", "--", _fixed(0), None,
     "Store local `arg[0]` <op `arg[2]`> constant `arg[1]` in local `arg[3]`, as in `i = i + 1` "
     "(BINARY_LOCAL_CONST + STORE_LOCAL fused)."),
    ("COMPARE", "compare", "a b -- bool", _fixed(-1), None,
     "Compare the two top items with operator `arg` (< <= > >= == != in, not in); `is`/`is not` test the "
     "kind of `a` against the type tag `b` (a constant: `int`, `list`, a record name, `T?`, ...)."),
    ("COMPARE_JUMP_IF_FALSE", "compare jump", "a b --", _fixed(-2), -2,
     "Compare the two top items with operator `arg[0]` and jump to `arg[1]` if the result is false "
     "(COMPARE + JUMP_IF_FALSE fused)."),
    ("COMPARE_LOCALS_JUMP_IF_FALSE", "local local compare jump", "--", _fixed(0), 0,
     "Compare local `arg[0]` with local `arg[1]` by operator `arg[2]`; jump to `arg[3]` if the result is "
     "false (LOAD_LOCAL2 + COMPARE_JUMP_IF_FALSE fused)."),
    ("COMPARE_CONST_JUMP_IF_FALSE", "const compare jump", "a --", _fixed(-1), -1,
     "Compare the top of the stack (popped) with constant `arg[0]` by operator `arg[1]`; jump to `arg[2]` "
     "if the result is false (LOAD_CONST + COMPARE_JUMP_IF_FALSE fused)."),
    ("COMPARE_LOCAL_CONST_JUMP_IF_FALSE", "local const compare jump", "--", _fixed(0), 0,
     "Compare local `arg[0]` with constant `arg[1]` by operator `arg[2]`; jump to `arg[3]` if the result is "
     "false, as in `while i < 10` (LOAD_LOCAL + COMPARE_CONST_JUMP_IF_FALSE fused)."),
    ("UNARY", "unary", "a -- <op>a", _fixed(0), None, "Apply unary operator `arg` (-, +, not)."),
    ("JUMP", "jump", "--", _fixed(0), 0, "Continue at instruction `arg`."),
    ("JUMP_STMT", "jump", "--", _fixed(0), 0,
     "Continue at instruction `arg`, a STMT, and run that STMT here (JUMP + STMT fused: a loop's way back "
     "to its condition); if the run stops there, it stops at `arg`."),
    ("JUMP_IF_FALSE", "jump", "cond --", _fixed(-1), -1, "Pop the condition; jump to `arg` if it is false."),
    ("JUMP_IF_FALSE_OR_POP", "jump", "a -- a | --", _fixed(-1), 0,
     "If the top is false, jump to `arg` keeping it (the value of `and`); else pop it."),
    ("JUMP_IF_TRUE_OR_POP", "jump", "a -- a | --", _fixed(-1), 0,
     "If the top is true, jump to `arg` keeping it (the value of `or`); else pop it."),
    ("BUILD_LIST", "count", "items... -- list", lambda arg, code: 1 - arg, None, "Collect the top `arg` items into a list."),
    ("BUILD_DICT", "count", "k1 v1 ... -- dict", lambda arg, code: 1 - 2 * arg, None,
     "Collect `arg` key/value pairs into a dict; keys must be str."),
    ("BUILD_STRING", "count", "parts... -- str", lambda arg, code: 1 - arg, None,
     "Concatenate the top `arg` strings (the pieces of an f-string)."),
    ("FORMAT", "const", "value -- str", _fixed(0), None,
     "Format a value for an f-string with the format spec in constant `arg` ('' for plain display)."),
    ("INDEX", "none", "container key -- item", _fixed(-1), None, "Index a list or str by int, or a dict by key."),
    ("SLICE", "none", "seq lower upper step -- part", _fixed(-3), None,
     "Slice a list or str; none bounds mean the ends."),
    ("GET_ATTR", "attr", "value -- field", _fixed(0), None, "Read field `arg` of a record, or key `arg` of a dict."),
    ("UNPACK", "count", "seq -- item_n ... item_1", lambda arg, code: arg - 1, None,
     "Split a list of exactly `arg` items onto the stack, first item on top."),
    ("GET_ITER", "none", "iterable -- items 0", _fixed(1), None,
     "Start a loop: replace a list, str or dict by its items (a list) and the position 0."),
    ("GET_RANGE_ITER", "count", "start? stop step? -- range 0", lambda arg, code: 2 - arg, None,
     "Start a `for` loop over `range(...)` of the top `arg` ints without building the list: the loop state is "
     "a range and the position 0, which a checkpoint stores in constant space however long the loop."),
    ("FOR_ITER", "jump", "items i -- items i+1 item | --", _fixed(1), -2,
     "Push the next item and advance; when done, pop the loop state and jump to `arg`."),
    ("FOR_ITER_STORE", "local jump", "items i -- items i+1 | --", _fixed(0), -2,
     "FOR_ITER + STORE_LOCAL fused: store the next item in local `arg[0]`, or pop the loop state and jump "
     "to `arg[1]` when done."),
    ("JUMP_FOR_ITER_STORE", "jump", "items i -- items i+1 | --", _fixed(0), 0,
     "Continue at instruction `arg`, a FOR_ITER_STORE, and run it here (JUMP + FOR_ITER_STORE fused: a `for` "
     "loop's way back): store the next item and go on after `arg`, or pop the loop state and leave the loop."),
    ("CALL_BUILTIN", "call", "args... kwargs... -- result", _call_effect, None, "Call the built-in of call site `arg`."),
    ("CALL_SKILL", "call", "args... kwargs... -- result", _call_effect, None,
     "Call the skill of call site `arg` through the skill registry (counts against the skill-call budget)."),
    ("CALL_PIPELINE", "call", "args... kwargs... -- result", _call_effect, None,
     "Call a pipeline of this module in a new frame."),
    ("MAKE_RECORD", "call", "args... kwargs... -- record", _call_effect, None,
     "Build and validate a record of the type named by call site `arg`."),
    ("AMBIGUOUS", "ambiguous", "inputs... -- outputs...", _ambiguous_effect, None,
     "Hand ambiguous block `arg` (its spec and input values) to the decomposer; push its outputs."),
    ("SETUP_TRY", "jump", "--", _fixed(0), 1,
     "Enter a try block whose handler starts at `arg`; the handler starts with the Error record on the stack."),
    ("POP_TRY", "none", "--", _fixed(0), None, "Leave the innermost try block of this frame."),
    ("FAIL", "none", "message --", _fixed(-1), None, "Raise a catchable runtime error with the given message."),
    # Contracts (`assume`, `expect`, examples): one check instruction reads its spec from `checks`.
    ("CHECK", "check", "cond --", _fixed(-1), None,
     "Pop a bool; if it is false, raise the error of check `arg` (an assumption, expectation or example that "
     "does not hold), naming the condition, its reason and the values of the locals it reads."),
    ("RETURN", "none", "value --", _fixed(-1), None, "Return the top of the stack to the calling frame."),
    # ---- people are nodes (docs/org.md) ----
    ("ASK_HUMAN", "call", "args... -- answer", _call_effect, None,
     "Put the question of call site `arg` (`ask(\"human\", q)` or `approve(q)`) to the human node: push its "
     "journaled answer, or stop the run, left at this instruction, to wait for one.",
     "a question to a person (`ask(\"human\", ...)`, `approve(...)`)"),
    # ---- messages (docs/org.md; org/mailboxes.py) ----
    ("SEND", "count", "target body topic? --", lambda arg, code: -arg, None,
     "Send a message: `arg` 2 pops target and body, 3 also a topic. The target is a Handle (that node's mailbox), "
     "a route's topic (its live node, started if there is none) or \"human\" (a note in `pipe inbox`).", "`send`"),
    ("SEND_PARENT", "count", "body topic? --", lambda arg, code: -arg, None,
     "Send the body to this node's parent: `arg` 1 pops the body, 2 a body and a topic.", "`send parent`"),
    ("RECEIVE", "call", "timeout? -- message", _call_effect, None,
     "Take the oldest message of this node's mailbox (a Message record); with none, the node waits for one "
     "(call site `arg` may give `timeout=`).", "`receive()`"),
    ("ON_MESSAGE", "local jump", "--", _fixed(0), 0,
     "Install this frame's message handler: when a message is in the node's mailbox at a statement boundary, "
     "it goes into local `arg[0]` and the handler at `arg[1]` runs (the interrupted statement's stack and try "
     "blocks set aside).", "`on message`"),
    ("END_HANDLER", "none", "--", _fixed(0), None,
     "End of a message handler: continue at the interrupted statement, with its stack and try blocks back.",
     "`on message`"),
    ("LEAVE_HANDLER", "none", "--", _fixed(0), None,
     "Leave a message handler by `goto`: the interrupted statement, its stack and try blocks are dropped.",
     "`on message`"),
    # ---- structured concurrency (issue #9; org/scheduler.py, org/parallel.py, org/handles.py) ----
    ("PARALLEL", "branches", "limit --", _fixed(-1), None,
     "Start a task for each branch of a parallel block (`arg`: per branch, its first instruction and the "
     "locals it copies back), at most `limit` at once (none: all), each in a frame with a copy of this "
     "frame's locals; this task waits until every branch has ended, then goes on, or raises the block's "
     "error when a branch failed.", "a `parallel:` block"),
    ("END_BRANCH", "count", "values... --", lambda arg, code: -arg, None,
     "End the branch (or parallel-loop iteration) this task runs: a block's branch copies the locals it "
     "assigned back to the block's frame; an iteration of `ys = for ... parallel:` hands over its value "
     "(`arg` 1: the top of the stack).", "a `parallel:` branch"),
    ("PARALLEL_FOR", "branch", "items limit -- results", _fixed(-1), None,
     "Start a task per item (at most `limit` at once), each running the loop body at instruction `arg` with "
     "its item on the stack and a copy of this frame's locals; wait for them all; push the list of their "
     "values in item order (nones when the loop collects nothing).", "a parallel `for` loop"),
    ("SPAWN", "call", "args... kwargs... -- handle", _call_effect, None,
     "Start the pipeline of call site `arg` as a task of its own (a spawned node); push its Handle.", "`spawn`"),
    ("AWAIT", "none", "handle -- result", _fixed(0), None,
     "Wait for the spawned task of the handle to end; its result, or its error raised here.", "`await`"),
    ("CANCEL", "none", "handle --", _fixed(-1), None,
     "Ask the spawned task of the handle to stop: it sees a `cancelled` error at its next statement boundary.",
     "`cancel`"),
]

OPCODES: list[Opcode] = [
    Opcode(i, name, operand, picture, doc, effect, jump, *org)
    for i, (name, operand, picture, effect, jump, doc, *org) in enumerate(_TABLE)
]
BY_NAME: dict[str, Opcode] = {op.name: op for op in OPCODES}

# Integer opcodes by name (CODE["STMT"], ...): every layer names an opcode by its name in this table.
CODE: dict[str, int] = {op.name: op.code for op in OPCODES}

BINARY_OPS = ("+", "-", "*", "/", "//", "%", "**")
COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not")
UNARY_OPS = ("-", "+", "not")
