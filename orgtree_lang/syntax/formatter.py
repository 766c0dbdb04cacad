"""Print a syntax tree back as canonical .pipe source, keeping comments; formatting twice changes nothing."""

from __future__ import annotations

from orgtree_lang.syntax import contracts as c
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.parser import parse, source_comments
from orgtree_lang.syntax.unparse import POSTFIX, example_text, expression_text, parenthesized, string_text

INDENT = "    "
MAX_WIDTH = 100  # statements longer than this that end in a list, dict or call get one item per line


def format_source(source: str, file: str = "<string>") -> str:
    """Parse `source` and print it canonically (raises CompileError if it does not parse)."""
    module = parse(source, file)
    return _Printer(source).module(module)


class _Printer:
    """Writes a module's declarations and statements with their comments, blank lines and long-line wraps."""

    def __init__(self, source: str) -> None:
        self.source_lines = source.splitlines()
        self.comments = source_comments(source)  # (line, col, text, own_line), in order
        self.next_comment = 0
        self.out: list[str] = []

    # -- comments and layout

    def _comments_before(self, line: int, indent: str) -> None:
        """Emit own-line comments that come before source line `line`, keeping a blank line that follows one."""
        while self.next_comment < len(self.comments) and self.comments[self.next_comment][0] < line:
            comment_line = self.comments[self.next_comment][0]
            self.out.append(indent + self.comments[self.next_comment][2].rstrip())
            self.next_comment += 1
            if self._blank_between(comment_line, min(line, comment_line + 2)):
                self._blank()

    def _blank(self) -> None:
        """One empty line, never two in a row and never at the top of the file."""
        if self.out and self.out[-1] != "":
            self.out.append("")

    def _trailing(self, first: int, last: int, indent: str) -> str:
        """Take the comments on lines first..last; the last one trails the line, others go above it."""
        taken = []
        while self.next_comment < len(self.comments) and self.comments[self.next_comment][0] <= last:
            taken.append(self.comments[self.next_comment])
            self.next_comment += 1
        if not taken:
            return ""
        for comment in taken[:-1]:
            self.out.append(indent + comment[2].rstrip())
        return "  " + taken[-1][2].rstrip()

    def _line(self, indent: str, text: str, first: int, last: int) -> None:
        self._comments_before(first, indent)
        trailing = self._trailing(first, last, indent)
        self.out.append(indent + text + trailing)

    def _block_end_comments(self, body: tuple[n.Stmt, ...], indent: str) -> None:
        """Keep comments that close a block (indented like it, before the next code line) inside it."""
        if not body:
            return
        column = body[0].span.col
        limit = self._next_code_line(body[-1].span.end_line)
        while self.next_comment < len(self.comments):
            line, col, text, own_line = self.comments[self.next_comment]
            if line >= limit or not own_line or col < column:
                break
            self.out.append(indent + text.rstrip())
            self.next_comment += 1

    def _next_code_line(self, after: int) -> int:
        for number in range(after + 1, len(self.source_lines) + 1):
            stripped = self.source_lines[number - 1].strip()
            if stripped and not stripped.startswith("#"):
                return number
        return len(self.source_lines) + 1

    def _blank_between(self, previous_end: int, next_start: int) -> bool:
        """True if the source has an empty line between two statements."""
        for number in range(previous_end + 1, next_start):
            if 1 <= number <= len(self.source_lines) and not self.source_lines[number - 1].strip():
                return True
        return False

    # -- module

    def module(self, module: n.Module) -> str:
        previous = None
        for item in _group_uses(module.items):
            if previous is not None:
                both_uses = isinstance(previous, list) and isinstance(item, list)
                both_routes = isinstance(previous, n.Route) and isinstance(item, n.Route)
                if not (both_uses or both_routes):
                    self._blank()
            if isinstance(item, list):
                span = item[0].span
                self._line("", "use " + ", ".join(u.name for u in item), span.line, item[-1].span.end_line)
            elif isinstance(item, n.RecordDecl):
                self._record(item)
            elif isinstance(item, n.Route):
                self._line("", f"route {string_text(item.topic)}" + (f" -> {item.pipeline}" if item.pipeline else ""),
                           item.span.line, item.span.end_line)
            elif isinstance(item, c.TestDecl):
                self._line("", f"test {string_text(item.name)}:", item.span.line, item.span.line)
                if item.doc is not None:
                    self._docstring(item.doc, INDENT)
                self._block(item.body, INDENT, item.span.line)
            else:
                self._pipeline(item)
            previous = item
        self._comments_before(10**9, "")
        while self.out and not self.out[-1].strip():
            self.out.pop()
        return "\n".join(self.out) + "\n"

    def _record(self, r: n.RecordDecl) -> None:
        self._line("", f"record {r.name}:", r.span.line, r.span.line)
        if r.doc is not None:
            self._docstring(r.doc, INDENT)
        for f in r.fields:
            text = f"{f.name}: {f.type}" + (f" = {expression_text(f.default)}" if f.default is not None else "")
            self._line(INDENT, text, f.span.line, f.span.end_line)

    def _pipeline(self, p: n.Pipeline) -> None:
        params = ", ".join(
            f"{q.name}: {q.type}" + (f" = {expression_text(q.default)}" if q.default is not None else "") for q in p.params
        )
        returns = f" -> {p.returns}" if p.returns is not None else ""
        header_end = p.returns.span.end_line if p.returns is not None else p.name_span.line
        self._line("", f"pipeline {p.name}({params}){returns}:", p.span.line, header_end)
        if p.doc is not None:
            self._docstring(p.doc, INDENT)
        self._contracts(p.examples, p.expects, INDENT)
        self._block(p.body, INDENT, p.span.line)

    def _contracts(self, examples: tuple, expects: tuple, indent: str) -> None:
        """The `examples:` block and `expect` lines after a docstring."""
        if examples:
            self._line(indent, "examples:", examples[0].span.line - 1, examples[0].span.line - 1)
            for example in examples:
                self._line(indent + INDENT, example_text(example), example.span.line, example.span.end_line)
        for expect in expects:
            self._stmt(expect, indent)

    def _docstring(self, doc: str, indent: str) -> None:
        text = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        lines = text.split("\n")
        if len(lines) == 1:
            self.out.append(f'{indent}"""{lines[0]}"""')
            return
        self.out.append(f'{indent}"""{lines[0]}')
        for line in lines[1:]:
            self.out.append(indent + line if line.strip() else "")
        self.out.append(f'{indent}"""')

    # -- statements

    def _block(self, body: tuple[n.Stmt, ...], indent: str, previous_end: int) -> None:
        for stmt in body:
            starts_block = self.out and self.out[-1].rstrip().endswith(":")
            if not starts_block and self._blank_between(previous_end, stmt.span.line):
                self._blank()
            self._stmt(stmt, indent)
            previous_end = _last_line(stmt)
        self._block_end_comments(body, indent)

    def _stmt(self, s: n.Stmt, indent: str) -> None:
        if isinstance(s, n.If):
            self._compound(indent, f"if {expression_text(s.tests[0])}:", s.span.line, s.tests[0].span.end_line)
            self._block(s.bodies[0], indent + INDENT, s.span.line)
            clauses = list(zip(s.tests[1:], s.bodies[1:]))
            spans = list(s.keyword_spans)
            for (test, body), span in zip(clauses, spans):
                self._compound(indent, f"elif {expression_text(test)}:", span.line, test.span.end_line)
                self._block(body, indent + INDENT, span.line)
            if s.orelse is not None:
                span = spans[len(clauses)] if len(spans) > len(clauses) else s.span
                self._compound(indent, "else:", span.line, span.line)
                self._block(s.orelse, indent + INDENT, span.line)
        elif isinstance(s, n.While):
            self._compound(indent, f"while {expression_text(s.test)}:", s.span.line, s.test.span.end_line)
            self._block(s.body, indent + INDENT, s.span.line)
        elif isinstance(s, n.For):
            targets = ", ".join(t.id for t in s.targets)
            head = f"{s.collect.id} = " if s.collect is not None else ""
            tail = (f" parallel(limit={expression_text(s.limit)})" if s.limit is not None else " parallel") if s.parallel else ""
            end = s.limit.span.end_line if s.limit is not None else s.iterable.span.end_line
            self._compound(indent, f"{head}for {targets} in {expression_text(s.iterable)}{tail}:", s.span.line, end)
            self._block(s.body, indent + INDENT, s.span.line)
        elif isinstance(s, n.OnMessage):
            self._compound(indent, f"on message {s.name}:", s.span.line, s.span.line)
            self._block(s.body, indent + INDENT, s.span.line)
        elif isinstance(s, n.Parallel):
            limit = f"(limit={expression_text(s.limit)})" if s.limit is not None else ""
            self._compound(indent, f"parallel{limit}:", s.span.line,
                           s.limit.span.end_line if s.limit is not None else s.span.line)
            self._block(s.branches, indent + INDENT, s.span.line)
        elif isinstance(s, n.Try):
            self._compound(indent, "try:", s.span.line, s.span.line)
            self._block(s.body, indent + INDENT, s.span.line)
            name = f" {s.name.id}" if s.name is not None else ""
            line = s.except_span.line
            self._compound(indent, f"except{name}:", line, line)
            self._block(s.handler, indent + INDENT, line)
        elif isinstance(s, n.Ambiguous):
            inputs = ", ".join(
                f"{i.name}: {i.type}" + (f" = {expression_text(i.default)}" if i.default is not None else "")
                for i in s.inputs
            )
            outputs = ", ".join(f"{o.name}: {o.type}" for o in s.outputs)
            header_end = s.outputs[-1].span.end_line if s.outputs else s.span.line
            self._compound(indent, f"ambiguous {s.name}({inputs}) -> {outputs}:", s.span.line, header_end)
            if s.doc is not None:
                self._docstring(s.doc, indent + INDENT)
            if s.uses:
                line = s.uses[0].span.line
                self._line(indent + INDENT, "use " + ", ".join(u.name for u in s.uses), line, s.uses[-1].span.line)
            self._contracts(s.examples, s.expects, indent + INDENT)
            self._block(s.body, indent + INDENT, s.span.line)
        elif isinstance(s, c.Examples):
            self._contracts(s.items, (), indent)
        else:
            self._comments_before(s.span.line, indent)
            exploded = self._commented_items(s, indent)
            if exploded is not None:
                self.out.extend(exploded)
                return
            text = self._simple(s)
            if len(indent) + len(text) > MAX_WIDTH:
                text = self._wrapped(s, indent) or text
            self._line(indent, text, s.span.line, s.span.end_line)

    def _items(self, value: n.Expr) -> tuple[str, str, list[tuple[str, int, int]]] | None:
        """Opener, closer and (text, first line, last line) of each item of a list, dict or call."""
        if isinstance(value, n.ListExpr) and value.items:
            return "[", "]", [(expression_text(i), i.span.line, i.span.end_line) for i in value.items]
        if isinstance(value, n.DictExpr) and value.keys:
            return "{", "}", [(f"{expression_text(k)}: {expression_text(v)}", k.span.line, v.span.end_line)
                              for k, v in zip(value.keys, value.values)]
        if isinstance(value, n.Call) and (value.args or value.keywords):
            items = [(expression_text(a), a.span.line, a.span.end_line) for a in value.args]
            items += [(f"{k.name}={expression_text(k.value)}", k.span.line, k.span.end_line) for k in value.keywords]
            return parenthesized(value.func, POSTFIX) + "(", ")", items
        return None

    def _commented_items(self, s: n.Stmt, indent: str) -> list[str] | None:
        """A statement ending in a list, dict or call with comments among its items: one item per line, each
        comment kept with the item it follows on its line, or above the item it precedes."""
        value = getattr(s, "value", None) or getattr(s, "expr", None)
        parts = self._items(value) if isinstance(value, n.Expr) else None
        end = s.span.end_line
        inside = [c for c in self.comments[self.next_comment:] if c[0] < end]
        if parts is None or not inside or value.span.end_line != end:
            return None
        opener, closer, items = parts
        head = self._simple(s)
        lines = [indent + head[: len(head) - len(expression_text(value))] + opener]
        if items[0][1] > value.span.line:  # a comment after the opener, before the first item's line
            lines[0] += "".join("  " + c[2].rstrip() for c in self._take_comments(value.span.line, own_line=False))
        inner = indent + INDENT
        for text, first, last in items:
            lines.extend(inner + c[2].rstrip() for c in self._take_comments(first - 1, own_line=None))
            trailing = self._take_comments(min(last, end - 1), own_line=False)  # the closer's line keeps its own
            lines[-1] += "".join("  " + c[2].rstrip() for c in trailing if c[0] < first)
            lines.append(inner + text + "," + "".join("  " + c[2].rstrip() for c in trailing if c[0] >= first))
        lines.extend(inner + c[2].rstrip() for c in self._take_comments(end - 1, own_line=None))
        closing = self._take_comments(end, own_line=None)
        lines.append(indent + closer + "".join("  " + c[2].rstrip() for c in closing))
        return lines

    def _take_comments(self, up_to_line: int, own_line: bool | None) -> list[tuple[int, int, str, bool]]:
        """Consume the comments up to line `up_to_line` (only trailing ones when own_line is False)."""
        taken = []
        while self.next_comment < len(self.comments):
            comment = self.comments[self.next_comment]
            if comment[0] > up_to_line or (own_line is False and comment[3]):
                break
            taken.append(comment)
            self.next_comment += 1
        return taken

    def _wrapped(self, s: n.Stmt, indent: str) -> str | None:
        """A too-long statement ending in a list, dict or call, with one item per line."""
        value = getattr(s, "value", None) or getattr(s, "expr", None)
        inner = indent + INDENT
        if isinstance(value, n.ListExpr) and len(value.items) > 1:
            opener, closer, items = "[", "]", [expression_text(i) for i in value.items]
        elif isinstance(value, n.DictExpr) and len(value.keys) > 1:
            opener, closer = "{", "}"
            items = [f"{expression_text(k)}: {expression_text(v)}" for k, v in zip(value.keys, value.values)]
        elif isinstance(value, n.Call) and len(value.args) + len(value.keywords) > 1:
            opener, closer = parenthesized(value.func, POSTFIX) + "(", ")"
            items = [expression_text(a) for a in value.args] + [f"{k.name}={expression_text(k.value)}" for k in value.keywords]
        else:
            return None
        head = self._simple(s)
        prefix = head[: len(head) - len(expression_text(value))]
        body = "".join(f"\n{inner}{item}," for item in items)
        return f"{prefix}{opener}{body}\n{indent}{closer}"

    def _compound(self, indent: str, header: str, first: int, last: int) -> None:
        self._line(indent, header, first, last)

    def _simple(self, s: n.Stmt) -> str:
        if isinstance(s, n.Assign):
            return f"{', '.join(t.id for t in s.targets)} = {expression_text(s.value)}"
        if isinstance(s, n.AugAssign):
            return f"{s.target.id} {s.op}= {expression_text(s.value)}"
        if isinstance(s, n.ExprStmt):
            return expression_text(s.expr)
        if isinstance(s, n.Break):
            return "break"
        if isinstance(s, n.Continue):
            return "continue"
        if isinstance(s, n.Pass):
            return "pass"
        if isinstance(s, n.Label):
            return f"label {s.name}"
        if isinstance(s, n.Goto):
            return f"goto {s.name}"
        if isinstance(s, n.Fail):
            return f"fail {expression_text(s.value)}"
        if isinstance(s, n.Cancel):
            return f"cancel {expression_text(s.value)}"
        if isinstance(s, n.Send):
            topic = f", topic={expression_text(s.topic)}" if s.topic is not None else ""
            return f"send {expression_text(s.target)}, {expression_text(s.body)}{topic}"
        if isinstance(s, n.Return):
            return "return" if s.value is None else f"return {expression_text(s.value)}"
        if isinstance(s, n.UseStmt):
            return "use " + ", ".join(u.name for u in s.names)
        if isinstance(s, (c.Expect, c.Assume)):
            word = "expect" if isinstance(s, c.Expect) else "assume"
            return f"{word} {expression_text(s.condition)}, {expression_text(s.reason)}"
        raise TypeError(f"cannot format {type(s).__name__}")

def _last_line(stmt: n.Stmt) -> int:
    """The last source line of a statement, looking inside nested blocks."""
    blocks = []
    if isinstance(stmt, n.If):
        blocks = list(stmt.bodies) + ([stmt.orelse] if stmt.orelse else [])
    elif isinstance(stmt, (n.While, n.For)):
        blocks = [stmt.body]
    elif isinstance(stmt, n.Parallel):
        blocks = [stmt.branches]
    elif isinstance(stmt, n.Try):
        blocks = [stmt.body, stmt.handler]
    elif isinstance(stmt, n.Ambiguous):
        contracts = [x.span.end_line for x in (*stmt.examples, *stmt.expects)]
        header = stmt.span.line if stmt.doc is None else max(stmt.span.line, *(o.span.end_line for o in stmt.outputs))
        return max([header, *contracts])
    elif isinstance(stmt, c.Examples):
        return stmt.items[-1].span.end_line
    last_block = [b for b in blocks if b]
    return _last_line(last_block[-1][-1]) if last_block else stmt.span.end_line


def _group_uses(items: tuple[n.Node, ...]) -> list:
    """Uses written on one line stay together; records and pipelines pass through."""
    grouped: list = []
    for item in items:
        if isinstance(item, n.Use):
            if grouped and isinstance(grouped[-1], list) and grouped[-1][-1].span.line == item.span.line:
                grouped[-1].append(item)
            else:
                grouped.append([item])
        else:
            grouped.append(item)
    return grouped
