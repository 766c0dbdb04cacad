"""Run the grammar's LALR tables over Lark's token stream, calling the node builder's rule at each reduction.

Lark's own `parse` builds a parse tree, works out every tree node's position on the way (propagate_positions),
and the builder (a Lark Transformer) then walks that tree a second time; most reductions of the expression
grammar only pass one child up the precedence chain, and each paid for a wrapper chain and a meta lookup.
This driver uses the same tables and the same contextual lexer and postlexer, keeps the same positions
(a node spans from its first token to its last, counting the tokens its children were inlined from and the
punctuation Lark filters out), and calls the builder's functions with the same children, in the same
order, so the nodes, spans and diagnostics are Lark's. A rule it has no plan for (a rule with no builder
function that would make a parse tree node) raises `Unsupported`, and the caller uses Lark's own path.
A token the tables refuse raises `Rejected`: Lark's own parse then raises the exception diagnostics read.
"""

from __future__ import annotations

import functools

from lark import Lark, Token
from lark.lexer import UnlessCallback
from lark.parsers.lalr_analysis import Shift


_new_str = str.__new__


class Rejected(Exception):
    """The input is not in the language; Lark's own parse reports where and why."""


class Unsupported(Exception):
    """A reduction this driver cannot mirror exactly; Lark's own parse and transform build the module."""


class Meta:
    """The position of a node as the builder's rules read it (Lark's tree meta, only what they use)."""

    __slots__ = ("line", "column", "end_line", "end_column", "empty")

    def __init__(self, line, column, end_line, end_column, empty=False) -> None:
        self.line, self.column, self.end_line, self.end_column, self.empty = line, column, end_line, end_column, empty


EMPTY_META = Meta(None, None, None, None, True)


class _Plan:
    """What one grammar rule's reduction does: how many values it takes, which it keeps, what it calls."""

    __slots__ = ("size", "origin", "include", "nones_after", "single", "expand1", "inline", "func", "unit", "keep")

    def __init__(self, rule, builder_class) -> None:
        self.size = len(rule.expansion)
        self.origin = rule.origin.name
        keep_all = rule.options.keep_all_tokens
        empty = rule.options.empty_indices  # the parser is built with maybe_placeholders
        if empty:
            ones = "".join(str(int(b)) for b in empty).split("0")
            nones = [len(run) for run in ones]
        else:
            nones = [0] * (self.size + 1)
        include, pending = [], 0
        for i, symbol in enumerate(rule.expansion):
            pending += nones[i]
            if keep_all or not (symbol.is_term and symbol.filter_out):
                include.append((i, not symbol.is_term and symbol.name.startswith("_"), pending))
                pending = 0
        self.include = tuple(include)
        self.nones_after = pending + nones[self.size]
        # `?rule` without an alias passes a lone child up unchanged (Lark's ExpandSingleChild).
        self.expand1 = bool(rule.options.expand1 and not rule.alias)
        plain = not empty and not any(expand for _, expand, _ in include)
        # The kept children's indices when no placeholder is added and no inlined rule spliced in.
        self.keep = tuple(i for i, _, _ in include) if plain and not self.nones_after else None
        self.single = include[0][0] if self.expand1 and plain and len(include) == 1 else None
        # A one-symbol `?rule` whose symbol is kept: the value and its position stay as they are.
        self.unit = self.expand1 and self.size == 1 and self.single == 0
        self.inline = self.origin.startswith("_")
        name = rule.alias or rule.options.template_source or self.origin
        self.func = None if self.inline else _builder_function(builder_class, name)


def _builder_function(builder_class, name: str):
    """The plain function behind the builder's rule `name` (unwrapped from Lark's v_args), or None."""
    for klass in builder_class.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            return getattr(found, "base_func", found)
    return None


@functools.lru_cache(maxsize=4)
def _tables(parser: Lark, builder_class) -> tuple[dict, dict, dict, dict, dict]:
    """Per state: terminal or rule name -> the next state (an int) to shift or go to, or the plan to reduce;
    the start and end states per start rule; an empty memo of unit-reduction runs (see `_unit_run`); and
    per state its lexer (the contextual lexer's, see `_tokens`)."""
    table = parser.parser.parser.parser.parse_table
    plans: dict = {}
    states = {}
    for state, actions in table.states.items():
        row = {}
        for symbol, (action, arg) in actions.items():
            if action is Shift:
                row[symbol] = arg
            else:
                plan = plans.get(id(arg))
                if plan is None:
                    plan = plans[id(arg)] = _Plan(arg, builder_class)
                row[symbol] = plan
        states[state] = row
    return states, table.start_states, table.end_states, {}, _StateLexers(parser.parser.lexer.lexer)


def _unit_run(states: dict, below, state, kind: str):
    """The state a run of unit reductions (`?expr: or_test`, ...) ends in, from `state` over `below`.

    Each pops one state and pushes the goto of the same `below`, so the end state depends only on
    (below, state, lookahead): an atom climbing the ten levels of the precedence chain is one memo lookup."""
    plan = states[state][kind]
    while True:
        state = states[below][plan.origin]
        plan = states[state].get(kind)
        if plan is None or plan.__class__ is int or not plan.unit:
            return state


class _StateLexer:
    """What the contextual lexer's lexer for one set of parser states matches, read out once."""

    __slots__ = ("patterns", "ignore", "newlines", "keywords", "unless")

    def __init__(self, lexer) -> None:
        scanner = lexer.scanner  # Lark builds it on first use
        self.patterns = tuple(scanner._mres)
        self.ignore = lexer.ignore_types
        self.newlines = lexer.newline_types
        self.unless = {}
        for kind, callback in lexer.callback.items():
            if not isinstance(callback, UnlessCallback):
                raise Unsupported(f"lexer callback for {kind}")
            self.unless[kind] = callback.scanner
        self.keywords: dict = {}  # (kind, text) -> the keyword terminal it is here, or None


class _StateLexers(dict):
    """Per parser state, its _StateLexer, made on first use (states allowing the same terminals share one)."""

    def __init__(self, contextual) -> None:
        super().__init__()
        self.contextual = contextual
        self.by_lexer: dict = {}

    def __missing__(self, state):
        lexer = self.contextual.lexers[state]
        found = self.by_lexer.get(id(lexer))
        if found is None:
            found = self.by_lexer[id(lexer)] = _StateLexer(lexer)
        self[state] = found
        return found


def _tokens(lexers: dict, text: str, stack: list):
    """Lark's contextual lexer, token for token: each token matched with the terminals the parser state
    allows when it is read (the state on top of `stack`), a name turned into a keyword only where that
    keyword is allowed, positions counted the same way. Input no terminal matches raises Rejected."""
    pos, line, line_start, end = 0, 1, 0, len(text)
    while pos < end:
        lexer = lexers[stack[-1]]
        for pattern in lexer.patterns:
            match = pattern.match(text, pos)
            if match:
                break
        else:
            raise Rejected("no terminal matches")
        value, kind = match.group(0), match.lastgroup
        start, column = pos, pos - line_start + 1
        start_line = line
        pos += len(value)
        if kind in lexer.newlines:
            newlines = value.count("\n")
            if newlines:
                line += newlines
                line_start = start + value.rindex("\n") + 1
        if kind in lexer.ignore:
            continue
        keywords = lexer.unless.get(kind)
        if keywords is not None:
            memo = lexer.keywords
            found = memo.get((kind, value), 0)
            if found == 0:
                found = memo[(kind, value)] = keywords.fullmatch(value)
            if found is not None:
                kind = found
        # Lark's Token, made without its __new__ (which checks for deprecated keywords): a quarter of the time.
        token = _new_str(Token, value)
        token.type, token.value, token.start_pos, token.line, token.column = kind, value, start, start_line, column
        token.end_line, token.end_column, token.end_pos = line, pos - line_start + 1, pos
        yield token


def _with_end(tokens):
    """The token stream followed by Lark's `$END` token (placed at the last token, as Lark places it)."""
    token = None
    for token in tokens:
        yield token
    yield Token.new_borrow_pos("$END", "", token) if token is not None else Token("$END", "", 0, 1, 1)


def parse_with(parser: Lark, text: str, start: str, builder, postlexer):
    """Parse `text` from rule `start`, building with `builder`; raise Rejected or Unsupported.

    `postlexer` is a fresh instance of the parser's postlexer class: the builder parses f-string fields while
    the module is still being parsed, and the postlexer keeps the state of one token stream."""
    states, start_states, end_states, runs, lexers = _tables(parser, type(builder))
    end_state = end_states[start]
    stack = [start_states[start]]
    values: list = []
    places: list = []  # per value: a token's (line, col, end_line, end_col); a node's span and its container's
    for token in _with_end(postlexer.process(_tokens(lexers, text, stack))):
        kind = token.type
        while True:
            state = stack[-1]
            step = states[state].get(kind)
            if step is None:
                raise Rejected(kind)
            if step.__class__ is int:  # shift
                if kind == "$END":
                    raise Rejected(kind)
                stack.append(step)
                values.append(token)
                places.append((token.line, token.column, token.end_line, token.end_column))
                break
            plan = step
            if plan.unit:
                key = (stack[-2], state, kind)
                end = runs.get(key)
                if end is None:
                    end = runs[key] = _unit_run(states, stack[-2], state, kind)
                stack[-1] = end
            else:
                value, place = _reduce(plan, builder, stack, values, places)
                values.append(value)
                places.append(place)
                stack.append(states[stack[-1]][plan.origin])
            if kind == "$END" and stack[-1] == end_state:
                return values[-1]
    raise Rejected("$END")


def _reduce(plan: _Plan, builder, stack: list, values: list, places: list):
    """Pop the rule's values and give the value and place of what they reduce to (Lark's tree node, built)."""
    size = plan.size
    if size:
        children = values[-size:]
        spots = places[-size:]
        del stack[-size:], values[-size:], places[-size:]
    else:
        children = spots = ()
    first = spots[0] if size else None
    if first is None:
        for first in spots:
            if first is not None:
                break
    if first is not None:
        last = spots[-1]
        if last is None:
            for last in reversed(spots):
                if last is not None:
                    break
        container = (first[-4], first[-3], last[-2], last[-1])
    keep = plan.keep
    if keep is not None:
        filtered = children if len(keep) == size else [children[i] for i in keep]
    else:
        filtered = []
        for i, expand, nones in plan.include:
            if nones:
                filtered.extend([None] * nones)
            if expand:
                if filtered:
                    filtered.extend(children[i])
                else:
                    filtered = children[i]
            else:
                filtered.append(children[i])
        if plan.nones_after:
            filtered.extend([None] * plan.nones_after)
    if plan.expand1 and len(filtered) == 1:
        if plan.single is None:
            raise Unsupported(plan.origin)
        spot = spots[plan.single]
        if spot is None:  # a node with no tokens takes the container's position
            return filtered[0], (container + container if first is not None else None)
        if len(spot) == 4:  # a token is passed up as it is
            return filtered[0], spot
        return filtered[0], (spot[:4] + container if first is not None else spot)
    if plan.inline:
        return filtered, (container + container if first is not None else None)
    func = plan.func
    if func is None:
        raise Unsupported(plan.origin)
    if first is None:
        return func(builder, EMPTY_META, filtered), None
    return func(builder, Meta(*container), filtered), container + container
