"""Give every expression a static type, resolve calls (built-in, skill, pipeline, record) and report misuse."""

from __future__ import annotations

from orgtree_lang.check.module import CallTarget, CheckedModule, resolve_type
from orgtree_lang.runtime.builtins import BUILTINS, ERROR_RECORD, HANDLE_RECORD, MESSAGE_RECORD
from orgtree_lang.runtime.people import HUMAN, HUMAN_CALLS
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.diagnostics import DiagnosticSink, did_you_mean

_NUMERIC = ("int", "float", "bool")
_PYTHON_SPELLINGS = {word: f"the .pipe spelling is `{word.lower()}`" for word in ("True", "False", "None")}
_OP_WORDS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "divide", "%": "take the remainder of",
             "**": "raise"}


class ExprTyper:
    """Computes static types; records call targets in the CheckedModule; reports only when `report` is set."""

    def __init__(self, checked: CheckedModule, registry, sink: DiagnosticSink, scope) -> None:
        self.checked = checked
        self.registry = registry
        self.sink = sink
        self.scope = scope  # the PipelineChecker: .variables, .assigned, .decl
        self.report = False

    def error(self, message: str, span, hint: str | None = None) -> None:
        if self.report:
            self.sink.error(message, span, hint)

    # -- expressions

    def expr(self, e: n.Expr) -> t.PipeType:
        method = getattr(self, "_" + type(e).__name__)
        return method(e)

    def _Const(self, e: n.Const) -> t.PipeType:
        return t.type_of_value(e.value)

    def _Name(self, e: n.Name) -> t.PipeType:
        return self.name(e)

    def name(self, e: n.Name) -> t.PipeType:
        scope = self.scope
        if e.id in scope.assigned:
            return scope.variables.get(e.id, t.ANY)
        if e.id in BUILTINS:
            self.error(f"built-in `{e.id}` is a function, not a value", e.span, f"call it: `{e.id}(...)`")
        elif e.id in self.checked.pipelines or e.id in self.checked.records:
            self.error(f"`{e.id}` is a {'pipeline' if e.id in self.checked.pipelines else 'record'}, not a value",
                       e.span, f"call it: `{e.id}(...)`")
        elif e.id in self.registry.namespaces():
            self.error(f"`{e.id}` is a skill namespace, not a value", e.span,
                       f"call one of its skills, e.g. `{self._example_skill(e.id)}(...)`")
        else:
            candidates = set(scope.assigned) | set(BUILTINS) | set(self.checked.pipelines)
            hint = _PYTHON_SPELLINGS.get(e.id) or did_you_mean(e.id, candidates)
            self.error(f"undefined name `{e.id}`", e.span, hint)
        return t.ANY

    def _FString(self, e: n.FString) -> t.PipeType:
        for part in e.parts:
            if isinstance(part, n.FormattedValue):
                self.expr(part.value)
        return t.STR

    def _ListExpr(self, e: n.ListExpr) -> t.PipeType:
        element = None
        for item in e.items:
            item_type = self.expr(item)
            element = item_type if element is None else t.join(element, item_type)
        return t.list_of(element or t.ANY)

    def _DictExpr(self, e: n.DictExpr) -> t.PipeType:
        value = None
        for key, val in zip(e.keys, e.values):
            key_type = self.expr(key)
            if key_type.kind not in ("str", "any", "path"):
                self.error(f"dict keys must be str, got {key_type}", key.span, "convert the key with str(...)")
            val_type = self.expr(val)
            value = val_type if value is None else t.join(value, val_type)
        return t.dict_of(value or t.ANY)

    def _BinOp(self, e: n.BinOp) -> t.PipeType:
        return self.binop(e.op, self.expr(e.left), self.expr(e.right), e.span)

    def binop(self, op: str, left: t.PipeType, right: t.PipeType, span) -> t.PipeType:
        left, right = _unwrap(left), _unwrap(right)
        kinds = {left.kind, right.kind}
        if "any" in kinds:
            return t.FLOAT if op == "/" and kinds <= {"any", "int", "float", "bool"} else t.ANY
        if kinds <= set(_NUMERIC):
            if op == "/":
                return t.FLOAT
            if op == "**":
                return t.ANY if kinds <= {"int", "bool"} else t.FLOAT
            return t.FLOAT if "float" in kinds else t.INT
        if op == "+" and left.kind == right.kind and left.kind in ("str", "list"):
            return t.join(left, right)
        if op == "+" and kinds == {"str", "path"}:
            return t.STR
        if op == "*" and (left.kind in ("str", "list") and right.kind in ("int", "bool")):
            return left
        if op == "*" and (right.kind in ("str", "list") and left.kind in ("int", "bool")):
            return right
        if op == "%" and left.kind == "str":
            return t.STR
        hint = t.operator_hint(left, right)
        if op == "+" and "str" in kinds and hint is None:
            hint = "convert the other side with str(...), or use an f-string"
        self.error(f"cannot {_OP_WORDS[op]} {left} and {right} with `{op}`", span, hint)
        return t.ANY

    def _UnaryOp(self, e: n.UnaryOp) -> t.PipeType:
        operand = _unwrap(self.expr(e.operand))
        if e.op == "not":
            return t.BOOL
        if operand.kind in ("int", "float", "any"):
            return operand
        if operand.kind == "bool":
            return t.INT
        self.error(f"cannot apply unary `{e.op}` to {operand}", e.span)
        return t.ANY

    def _BoolOp(self, e: n.BoolOp) -> t.PipeType:
        return t.join(self.expr(e.left), self.expr(e.right))

    def _Compare(self, e: n.Compare) -> t.PipeType:
        left = self.expr(e.left)
        for op, comparator in zip(e.ops, e.comparators):
            right = self.expr(comparator)
            if op in ("in", "not in"):
                self._check_membership(left, _unwrap(right), comparator.span)
            elif op not in ("==", "!=") and not _orderable(_unwrap(left), _unwrap(right)):
                self.error(f"cannot compare {left} and {right} with `{op}`", e.span)
            left = right
        return t.BOOL

    def _TypeTest(self, e: n.TypeTest) -> t.PipeType:
        self.expr(e.value)
        if not e.type.args:
            sink = self.sink if self.report else DiagnosticSink("<quiet>")
            resolve_type(e.type, self.checked.records, sink, self.checked)
        return t.BOOL

    def _check_membership(self, item: t.PipeType, container: t.PipeType, span) -> None:
        if container.kind == "str" and _unwrap(item).kind not in ("str", "any", "path"):
            self.error(f"`in` on a str needs a str on the left, got {item}", span)
        elif container.kind not in ("str", "list", "dict", "any", "path"):
            self.error(f"`in` needs a str, list or dict on the right, got {container}", span)

    def _Index(self, e: n.Index) -> t.PipeType:
        value = _unwrap(self.expr(e.value))
        index = _unwrap(self.expr(e.index))
        if value.kind in ("list", "str"):
            if index.kind not in ("int", "bool", "any"):
                self.error(f"a {value.kind} index must be an int, got {index}", e.index.span)
            return value.arg if value.kind == "list" else t.STR
        if value.kind == "dict":
            if index.kind not in ("str", "any", "path"):
                self.error(f"a dict key must be a str, got {index}", e.index.span)
            return value.arg
        if value.kind == "record":
            self.error("records are not indexed; read a field with `.`", e.span,
                       f"e.g. `value.{next(iter(self.checked.records[value.name].fields), 'field')}`")
        elif value.kind != "any":
            self.error(f"cannot index {t.a(value)}", e.span)
        return t.ANY

    def _Slice(self, e: n.Slice) -> t.PipeType:
        value = _unwrap(self.expr(e.value))
        for part in (e.lower, e.upper, e.step):
            if part is not None:
                kind = _unwrap(self.expr(part)).kind
                if kind not in ("int", "bool", "any", "none"):
                    self.error(f"slice bounds must be int, got {kind}", part.span)
        if value.kind not in ("list", "str", "any"):
            self.error(f"cannot slice {t.a(value)}", e.span, "only lists and strings can be sliced")
            return t.ANY
        return value

    def _Attribute(self, e: n.Attribute) -> t.PipeType:
        dotted = n.dotted_name(e)
        if dotted is not None and dotted.split(".")[0] not in self.scope.assigned:
            if self.registry.get(dotted) is not None or dotted.split(".")[0] in self.registry.namespaces():
                self.error(f"`{dotted}` is a skill; call it", e.span, f"write `{dotted}(...)`")
                return t.ANY
        value = _unwrap(self.expr(e.value))
        if value.kind == "record":
            fields = self.checked.records[value.name].fields
            if e.attr not in fields:
                self.error(f"record `{value.name}` has no field `{e.attr}`", e.attr_span,
                           did_you_mean(e.attr, fields) or f"its fields are: {', '.join(fields)}")
                return t.ANY
            return fields[e.attr]
        if value.kind == "dict":
            return value.arg
        if value.kind == "bytes":
            if e.attr not in t.BYTES_FIELDS:
                self.error(f"a bytes value has no field `{e.attr}`", e.attr_span,
                           did_you_mean(e.attr, t.BYTES_FIELDS) or f"its fields are: {', '.join(t.BYTES_FIELDS)}")
                return t.ANY
            return t.BYTES_FIELDS[e.attr]
        if value.kind != "any":
            self.error(f"{t.a(value)} has no fields, so `.{e.attr}` is not defined", e.attr_span,
                       self._method_hint(value, e.attr))
        return t.ANY

    def _method_hint(self, value: t.PipeType, attr: str) -> str | None:
        for namespace in ("text", "lists", "dicts"):
            if self.registry.get(f"{namespace}.{attr}") is not None:
                return f"values have no methods; call the skill with the value: `{namespace}.{attr}(value, ...)`"
        return None

    def _FormattedValue(self, e: n.FormattedValue) -> t.PipeType:
        self.expr(e.value)
        return t.STR

    # -- calls

    def _Call(self, e: n.Call) -> t.PipeType:
        arg_types = [self.expr(a) for a in e.args]
        kw_types = {k.name: self.expr(k.value) for k in e.keywords}
        self._check_duplicate_keywords(e)
        func = e.func
        if isinstance(func, n.Name) and func.id not in self.scope.assigned:
            name = func.id
            if name in BUILTINS:
                return self._builtin_call(e, name, arg_types, kw_types)
            if name in HUMAN_CALLS and name not in self.checked.pipelines:
                return self._human_call(e, name, arg_types)
            if name == "receive" and name not in self.checked.pipelines:
                return self._receive_call(e, arg_types, kw_types)
            if name in self.checked.pipelines:
                self.checked.calls[e] = CallTarget("pipeline", name)
                info = self.checked.pipelines[name]
                params = [(p.name, p.type, p.default is None) for p in info.params]
                self._check_arguments(e, f"pipeline `{name}`", params, arg_types, kw_types)
                return info.returns
            if name in self.checked.records:
                return self._record_call(e, name, arg_types, kw_types)
            candidates = set(BUILTINS) | set(self.checked.pipelines) | set(self.checked.records)
            hint = did_you_mean(name, candidates)
            if name in ("isinstance", "type"):
                hint = "test a value's kind with `is`: `x is int`, `x is list`, `x is MyRecord`, `x is none`"
            self.error(f"undefined function `{name}`", func.span, hint)
            return t.ANY
        dotted = n.dotted_name(func)
        if dotted is not None and "." in dotted:
            return self._skill_call(e, dotted, arg_types, kw_types)
        callee = self.expr(func)
        self.error(f"{t.a(callee)} value cannot be called", func.span,
                   "only built-ins, skills, pipelines and records can be called")
        return t.ANY

    def _Spawn(self, e: n.Spawn) -> t.PipeType:
        func = e.call.func
        if isinstance(func, n.Name) and func.id in self.checked.pipelines and func.id not in self.scope.assigned:
            self._Call(e.call)
        else:
            for arg in (*e.call.args, *(k.value for k in e.call.keywords)):
                self.expr(arg)
            self.error("`spawn` needs a call of one of this module's pipelines", e.call.span,
                       "skills and built-ins run where they are called; put the work in a pipeline and spawn that")
        return t.record(HANDLE_RECORD)

    def _Await(self, e: n.Await) -> t.PipeType:
        self.handle(e.value, "await")
        return t.ANY

    def handle(self, e: n.Expr, word: str) -> None:
        """Check that `e` (the operand of `await` or `cancel`) is a Handle."""
        value = self.expr(e)
        if not t.is_assignable(value, t.record(HANDLE_RECORD)):
            self.error(f"`{word}` needs a Handle (what `spawn` gives), got {value}", e.span,
                       "write `h = spawn some_pipeline(args)`, then `" + word + " h`")

    def _check_duplicate_keywords(self, e: n.Call) -> None:
        seen = set()
        for k in e.keywords:
            if k.name in seen:
                self.error(f"keyword argument `{k.name}` is given twice", k.span)
            seen.add(k.name)

    def _builtin_call(self, e: n.Call, name: str, arg_types, kw_types) -> t.PipeType:
        builtin = BUILTINS[name]
        self.checked.calls[e] = CallTarget("builtin", name)
        count = len(arg_types)
        if count < builtin.min_args or (builtin.max_args is not None and count > builtin.max_args):
            if builtin.max_args is None:
                expected = f"at least {builtin.min_args}"
            elif builtin.min_args == builtin.max_args:
                expected = str(builtin.min_args)
            else:
                expected = f"{builtin.min_args} to {builtin.max_args}"
            self.error(f"`{name}` takes {expected} positional argument{'s' if expected != '1' else ''}, got {count}",
                       e.span, f"signature: {builtin.signature}")
        for k in e.keywords:
            if k.name not in builtin.keywords:
                self.error(f"`{name}` has no keyword argument `{k.name}`", k.span,
                           did_you_mean(k.name, builtin.keywords) or f"signature: {builtin.signature}")
        return builtin.returns(arg_types)

    def _human_call(self, e: n.Call, name: str, arg_types) -> t.PipeType:
        """`ask("human", question)` or `approve(question)`: a question to the human node (docs/org.md)."""
        call = HUMAN_CALLS[name]
        self.checked.calls[e] = CallTarget("human", name)
        for k in e.keywords:
            self.error(f"`{name}` takes no keyword arguments, got `{k.name}`", k.span, f"signature: {call.signature}")
        if len(arg_types) != len(call.params):
            count = len(call.params)
            self.error(f"`{name}` takes {count} positional argument{'s' if count > 1 else ''}, got {len(arg_types)}",
                       e.span, f"signature: {call.signature}")
            return call.returns
        for (param, expected), actual, arg in zip(call.params, arg_types, e.args):
            if not t.is_assignable(actual, expected):
                self.error(f"argument `{param}` of `{name}` expects {expected}, got {actual}", arg.span,
                           t.mismatch_hint(actual, expected) or f"signature: {call.signature}")
        if name == "ask" and not (isinstance(e.args[0], n.Const) and e.args[0].value == HUMAN):
            self.error(f'`ask` can only ask "{HUMAN}" so far: its first argument must be the string "{HUMAN}"',
                       e.args[0].span, "to ask another node, `send` it a message and `receive` its reply")
        return call.returns

    def _receive_call(self, e: n.Call, arg_types, kw_types) -> t.PipeType:
        """`receive()` or `receive(timeout=S)`: the next message of this node's mailbox (docs/org.md)."""
        self.checked.calls[e] = CallTarget("receive", "receive")
        signature = "receive(timeout: float = none) -> Message"
        if e.args:
            self.error(f"`receive` takes no positional arguments, got {len(e.args)}", e.args[0].span,
                       f"signature: {signature}")
        for k in e.keywords:
            if k.name != "timeout":
                self.error(f"`receive` has no keyword argument `{k.name}`", k.span, f"signature: {signature}")
            elif not t.is_assignable(kw_types[k.name], t.optional(t.FLOAT)):
                self.error(f"`timeout` of `receive` expects a number of seconds, got {kw_types[k.name]}", k.span)
        return t.record(MESSAGE_RECORD)

    def _record_call(self, e: n.Call, name: str, arg_types, kw_types) -> t.PipeType:
        if name == HANDLE_RECORD:
            self.error(f"`{name}` records are made by `spawn`", e.span, "write `h = spawn some_pipeline(args)`")
            return t.record(name)
        if name == MESSAGE_RECORD:
            self.error(f"`{name}` records are made by `receive`", e.span, "write `send target, body` to send one")
            return t.record(name)
        if name == ERROR_RECORD:
            # Error records come only from caught errors; the program carries no record type to build one.
            self.error(f"`{name}` records are made by the runtime when an error is caught", e.span,
                       "raise an error with `fail VALUE`; catch it with `except err:`")
            return t.record(name)
        info = self.checked.records[name]
        self.checked.calls[e] = CallTarget("record", name)
        params = [(field, ftype, field not in info.defaults) for field, ftype in info.fields.items()]
        self._check_arguments(e, f"record `{name}`", params, arg_types, kw_types, noun="field")
        return t.record(name)

    def _skill_call(self, e: n.Call, dotted: str, arg_types, kw_types) -> t.PipeType:
        skill = self.registry.get(dotted)
        root = dotted.split(".")[0]
        if skill is None:
            if root in self.scope.assigned:
                attr = dotted.rsplit(".", 1)[1]
                self.error(f"values have no methods, so `{dotted}(...)` cannot be called", e.func.span,
                           self._method_hint(t.ANY, attr) or "call a skill with the value as an argument")
            else:
                namespace = dotted.rsplit(".", 1)[0]
                where = (f"namespace `{namespace}` has no skill `{dotted.rsplit('.', 1)[1]}`"
                         if namespace in self.registry.namespaces() else f"no skill named `{dotted}`")
                self.error(where, e.func.span,
                           did_you_mean(dotted, self.registry.names()) or "`pipe skills` lists the installed skills")
            return t.ANY
        self.checked.calls[e] = CallTarget("skill", dotted)
        if not self._allowed(dotted):
            namespace = skill.namespace
            self.error(f"skill `{dotted}` is not allowed: this module does not `use` it", e.func.span,
                       f"add `use {namespace}` (or `use {dotted}`) at the top of the file")
        params = [(p.name, p.type, p.required) for p in skill.params]
        self._check_arguments(e, f"skill `{dotted}`", params, arg_types, kw_types)
        return skill.returns

    def _allowed(self, name: str) -> bool:
        parts = name.split(".")
        prefixes = {".".join(parts[: i + 1]) for i in range(len(parts))}
        return any(use in prefixes for use in self.checked.uses)

    def _check_arguments(self, e: n.Call, what: str, params, arg_types, kw_types, noun: str = "argument") -> None:
        """Match positional and keyword arguments to (name, type, required) params; report every mismatch."""
        names = [p[0] for p in params]
        if len(arg_types) > len(params):
            self.error(f"{what} takes at most {len(params)} positional {noun}s, got {len(arg_types)}",
                       e.args[len(params)].span, f"its {noun}s are: {', '.join(names) or '(none)'}")
        bound: dict[str, tuple[t.PipeType, n.Node]] = {}
        for (name, _, _), arg_type, arg in zip(params, arg_types, e.args):
            bound[name] = (arg_type, arg)
        for k in e.keywords:
            if k.name not in names:
                self.error(f"{what} has no {noun} `{k.name}`", k.span,
                           did_you_mean(k.name, names) or f"its {noun}s are: {', '.join(names) or '(none)'}")
            elif k.name in bound:
                self.error(f"{noun} `{k.name}` of {what} is given twice", k.span)
            else:
                bound[k.name] = (kw_types[k.name], k)
        missing = [name for name, _, required in params if required and name not in bound]
        if missing:
            self.error(f"{what} is missing {noun}{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(f'`{m}`' for m in missing)}", e.span)
        for name, expected, _ in params:
            if name in bound:
                actual, node = bound[name]
                if not t.is_assignable(actual, expected):
                    self.error(f"{noun} `{name}` of {what} expects {expected}, got {actual}", node.span,
                               t.mismatch_hint(actual, expected))

    def element_type(self, iterable: t.PipeType, span) -> t.PipeType:
        iterable = _unwrap(iterable)
        if iterable.kind == "list":
            return iterable.arg
        if iterable.kind in ("str", "dict"):
            return t.STR
        if iterable.kind != "any":
            self.error(f"cannot loop over {t.a(iterable)}", span, "`for` needs a list, str or dict")
        return t.ANY

    def _example_skill(self, namespace: str) -> str:
        names = [s for s in self.registry.names() if s.startswith(namespace + ".")]
        return names[0] if names else namespace + ".NAME"


def _unwrap(value: t.PipeType) -> t.PipeType:
    return value.arg if value.kind == "optional" else value


def _orderable(left: t.PipeType, right: t.PipeType) -> bool:
    kinds = {left.kind, right.kind}
    if "any" in kinds:
        return True
    if kinds <= set(_NUMERIC):
        return True
    return left.kind == right.kind and left.kind in ("str", "list", "path") or kinds == {"str", "path"}
