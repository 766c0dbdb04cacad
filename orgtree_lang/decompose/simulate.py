"""Simulation: run a written module on its block's examples, with side-effecting skills sealed, before any review.

The examples become `test` blocks appended to the module (the saved module keeps them, so `pipe test` checks
them again); each runs in a machine of its own with a small budget and a registry in which every skill that
could change the world is replaced (see SEALED and DRY_RUN below and docs/decomposer.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from orgtree_lang.compile.code import AmbiguousSpec, BlockExample
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import UNBOUND, display_short
from orgtree_lang.vm.budget import Budget

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

# Non-pure skills that run as they are in a simulation: they read the workspace, or the clock and randomness.
READ_ONLY = frozenset({"fs.read", "fs.exists", "fs.list", "kv.get", "kv.keys", "ctx.search", "ctx.expand", "ctx.fit",
                       "insight.relevant", "pad.context", "random.choice", "random.int", "random.number",
                       "random.shuffle", "time.now", "ids.new"})
# Skills that write: a simulated call is recorded and not performed, and gives what a successful call would.
DRY_RUN = {"fs.write": lambda args: len(args.get("text", "")), "fs.append": lambda args: len(args.get("text", "")),
           "kv.set": lambda args: None, "kv.delete": lambda args: True, "time.sleep": lambda args: None}
# Every other non-pure skill (code.run, http.fetch, web.search, llm.*, ctx.add, pad.note, pad.focus,
# insight.propose, insight.remove, and any plugin's) is sealed: calling it makes the case inconclusive.
SEALED_KIND = "sealed"
# What one simulated case may take: far less than a generated module's own limits.
SIMULATION_BUDGET = Budget(max_steps=200_000, max_seconds=5, max_skill_calls=500, max_memory=64 * 1024 * 1024)
# Where the tests start in a module as saved: everything above is the author's module.
TESTS_MARKER = "# ---- examples this module was accepted with (`pipe test` runs them) ----"
EVIDENCE_MARKER = "# ---- execution evidence (not part of the module) ----"


@dataclass(frozen=True)
class Case:
    """One example to simulate: its values and where it came from (the program, the design, a reviewer)."""

    inputs: dict[str, Any]
    outputs: dict[str, Any]
    source: str  # "spec" | "design" | "reviewer"
    fails: str | None = None  # the text the error the case must raise contains, instead of outputs

    @classmethod
    def of(cls, example: BlockExample, source: str) -> Case:
        return cls(dict(example.inputs), dict(example.outputs), source, example.fails)


@dataclass
class CaseResult:
    """How one case ran: passed, failed (with what it gave and where), or inconclusive (a sealed skill)."""

    number: int
    case: Case
    outcome: str  # passed | failed | inconclusive
    got: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    location: str = ""
    calls: list[str] = field(default_factory=list)  # dry-run calls the case made

    def evidence(self, spec: AmbiguousSpec) -> str:
        inputs = ", ".join(f"{k} = {_short(v)}" for k, v in self.case.inputs.items()) or "(none)"
        expected = ", ".join(f"{k} = {_short(v)}" for k, v in self.case.outputs.items())
        if self.case.fails is not None:
            expected = f"an error whose message contains {_short(self.case.fails)}"
        got = ", ".join(f"{k} = {_short(v)}" for k, v in self.got.items()) or "(no value)"
        if self.outcome == "passed":
            got = "refused them with `fail` (right only if the spec says to refuse them)" if self.error else \
                "as expected"
        text = f"input: {inputs}; expected: {expected}; got: {got}"
        if self.error:
            text += f"; error: {self.error}"
        if self.location:
            text += f"; at {self.location}"
        return text


def pipe_literal(value: Any) -> str:
    """A value as .pipe source (the example values are literals, lists and dicts)."""
    if value is None or isinstance(value, bool):
        return {None: "none", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value} has no .pipe literal")
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(pipe_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {pipe_literal(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"{type(value).__name__} has no .pipe literal")


def _short(value: Any) -> str:
    return display_short(value, 160)


def test_name(number: int, case: Case) -> str:
    return f"example {number} ({case.source})"


def tests_text(spec: AmbiguousSpec, cases: list[Case]) -> str:
    """The `test` blocks for `cases`: call `main`, compare each output, check every expectation of `spec` (give it
    the design's expectations too)."""
    inputs = [name for name, _ in spec.inputs]
    outputs = [name for name, _ in spec.outputs]
    taken = set(inputs) | set(outputs)
    got = next(name for name in ("got", "got_value", "got_outputs") if name not in taken)
    blocks = [TESTS_MARKER]
    for number, case in enumerate(cases, 1):
        lines = [f'test "{test_name(number, case)}":']
        lines += [f"    {name} = {pipe_literal(case.inputs[name])}" for name in inputs if name in case.inputs]
        args = ", ".join(name for name in inputs if name in case.inputs)
        if case.fails is not None:
            lines += _failing_call(case.fails, args, taken)
            blocks.append("\n".join(lines))
            continue
        if len(outputs) == 1:
            lines.append(f"    {outputs[0]} = main({args})")
        else:
            lines.append(f"    {got} = main({args})")
            lines += [f"    {name} = {got}.{name}" for name in outputs]
        for name, value in case.outputs.items():
            lines.append(f'    expect {name} == {pipe_literal(value)}, "the expected {name}"')
        for condition, why in spec.expects:
            lines.append(f"    expect {condition}, {json.dumps(why, ensure_ascii=False)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _failing_call(fails: str, args: str, taken: set[str]) -> list[str]:
    """A test's lines for a case that must fail: call `main`, keep the message of the error it raises, check it."""
    error, message = (next(f"{base}{suffix}" for suffix in ("", "_", "__") if f"{base}{suffix}" not in taken)
                      for base in ("caught", "message"))
    why = f"main must fail with a message containing {pipe_literal(fails)}"
    return [f'    {message} = "(main returned normally)"', "    try:", f"        main({args})",
            f"    except {error}:", f"        {message} = {error}.message",
            f"    expect {pipe_literal(fails)} in {message}, {json.dumps(why, ensure_ascii=False)}"]


def with_tests(body: str, spec: AmbiguousSpec, cases: list[Case]) -> str:
    """The module followed by its examples as tests (replacing tests appended before)."""
    body = module_part(body).rstrip()
    return body + "\n\n\n" + tests_text(spec, cases) if cases else body + "\n"


def module_part(text: str) -> str:
    """The author's module without appended tests or evidence."""
    for marker in (EVIDENCE_MARKER, TESTS_MARKER):
        at = text.find(marker)
        if at != -1:
            text = text[:at]
    return text.rstrip() + "\n"


def without_evidence(text: str) -> str:
    at = text.find(EVIDENCE_MARKER)
    return text if at == -1 else text[:at].rstrip() + "\n"


def simulation_registry(registry, calls: list[str]):
    """A copy of `registry` in which DRY_RUN skills only record their calls and other side effects are sealed."""
    from orgtree_lang.runtime.errors import SkillError
    from orgtree_lang.runtime.skills import SkillRegistry

    sealed = SkillRegistry()
    for name in registry.names():
        skill = registry.get(name)
        if skill.pure or name in READ_ONLY:
            sealed.register(skill, origin=skill.origin)
            continue
        if name in DRY_RUN:
            def dry(*, _name=name, _result=DRY_RUN[name], **kwargs):
                kwargs.pop("ctx", None)
                calls.append(f"{_name}({', '.join(f'{k}={_short(v)}' for k, v in kwargs.items())})")
                return _result(kwargs)
            func = dry
        else:
            def func(*, _name=name, **kwargs):
                raise SkillError(f"{_name} is sealed in simulation: a case that calls it is not simulated",
                                 hint=SEALED_KIND)
        sealed.register(replace(skill, func=func), origin=skill.origin)
    return sealed


def simulate(text: str, file: str, spec: AmbiguousSpec, cases: list[Case], registry, context) -> list[CaseResult]:
    """Run each case's test of `text` (a module with its tests, as `with_tests` builds it) in a sealed machine."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.compile.code import Program
    from orgtree_lang.org.scheduler import Scheduler
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.services import Services

    from orgtree_lang.syntax.diagnostics import CompileError

    calls: list[str] = []
    sealed = simulation_registry(registry, calls)
    try:
        program = compile_source(text, file, sealed).program
    except CompileError as err:  # e.g. a pipeline of the module named like an input the tests assign
        first = err.render().splitlines()[0]
        return [CaseResult(number, case, "inconclusive", error=f"the examples do not compile with this module: "
                                                                  f"{first}")
                for number, case in enumerate(cases, 1)]
    module_lines = module_part(text).count("\n")
    results = []
    for number, case in enumerate(cases, 1):
        name = f'test "{test_name(number, case)}"'
        runnable = Program(program.file, program.source_hash, program.uses, program.records,
                           {**program.pipelines, name: program.tests[name]})
        calls.clear()
        machine = Machine(runnable, Services(registry=sealed, context=context, budget=SIMULATION_BUDGET,
                                             printer=lambda line: None, org=Scheduler))
        result = CaseResult(number, case, "passed")
        try:
            machine.start(name)
            machine.run()
        except PipeRuntimeError as err:
            result.outcome = "inconclusive" if _sealed(err) or _to_block_node(err) or err.kind == "ambiguous" \
                else "failed"
            if refusal_allowed(case, err):
                result.outcome = "passed"
            result.error = err.message
            if err.span is not None and err.span.line <= module_lines:
                result.location = f"{file}:{err.span.line}"
            result.got = _outputs_so_far(machine, spec)
        result.calls = list(calls)
        results.append(result)
    return results


def refusal_allowed(case: Case, err: PipeRuntimeError) -> bool:
    """A case from real inputs (source `run`: its outputs are not known) passes when `main` refuses them with `fail`:
    the spec may say to refuse such inputs (an unknown unit), and whether it does is the code reviewer's to judge,
    who reads the refusal in the evidence."""
    return case.source == "run" and case.fails is None and not case.outputs and err.kind == "fail"


def _to_block_node(err: PipeRuntimeError) -> bool:
    """`send parent` from the module's main: at run time it reaches the block's node, which a simulation has none of
    (so, like a sealed skill, the case is not simulated past it)."""
    return err.kind == "send" and "it has no parent" in err.message


def _sealed(err: PipeRuntimeError) -> bool:
    return err.kind == "skill" and err.hint == SEALED_KIND


def _outputs_so_far(machine: Machine, spec: AmbiguousSpec) -> dict[str, Any]:
    """The outputs the test had bound when it stopped (its frame stays on the stack after an uncaught error)."""
    frames = machine.state.frames if machine.state is not None else []
    if not frames:
        return {}
    frame = frames[0]
    found = {}
    for name, _ in spec.outputs:
        if name in frame.code.varnames:
            value = frame.locals[frame.code.varnames.index(name)]
            if value is not UNBOUND:
                found[name] = value
    return found


def evidence_text(spec: AmbiguousSpec, results: list[CaseResult]) -> str:
    """What the reviewer (and the saved attempt log) are told about the runs, one line per case."""
    counts = {k: sum(r.outcome == k for r in results) for k in ("passed", "failed", "inconclusive")}
    lines = [EVIDENCE_MARKER,
             f"# simulated {len(results)} example(s) with side effects sealed: {counts['passed']} passed, "
             f"{counts['failed']} failed, {counts['inconclusive']} inconclusive"]
    for r in results:
        lines.append(f"# example {r.number} ({r.case.source}): {r.outcome.upper()}: {r.evidence(spec)}")
        if r.calls:
            lines.append(f"#   dry-run calls: {'; '.join(r.calls)}")
    return "\n".join(line.replace("\n", " ") for line in lines) + "\n"
