"""The VM's ambiguous-block hook: reuse a saved module, or have one written (decompose/writing.py); run it."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.goal import Goal
from orgtree_lang.decompose.inputs import MEMORY_THRESHOLD, remember_inputs
from orgtree_lang.decompose.size import MAX_STATEMENTS
from orgtree_lang.decompose.limits import ChildLimits, output_size
from orgtree_lang.decompose.messages import block_node, replanned
from orgtree_lang.decompose.prompt import CONTEXT_SHARE
from orgtree_lang.decompose.repair import run_repaired
from orgtree_lang.decompose.repair_turns import RepairTurns
from orgtree_lang.decompose.reuse import (SIMILARITY, ReuseRefused, ask_reuse, checked_for_reuse,
                                         similar_modules)
from orgtree_lang.decompose.spec import OUTPUTS_RECORD, spec_hash
from orgtree_lang.decompose.store import ModuleStore, SavedModule, body_hash
# LANGUAGE_NOTES stays importable from here, where callers have always found the author's system message.
from orgtree_lang.decompose.writing import LANGUAGE_NOTES, generated_context, write_module  # noqa: F401
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, display

@dataclass(frozen=True)
class DecomposeSettings:
    """Limits of the decomposer; `[decompose]` in orgtree.toml overrides them."""

    max_repairs: int = 3  # answers sent back with their problems, after the first, per writing
    max_review_rounds: int = 3
    max_depth: int = 3  # generated modules inside generated modules
    context_share: float = CONTEXT_SHARE  # of the author's context window, for the synthesis request
    similarity: float = SIMILARITY  # relevance of a saved module of another block to be offered for reuse (reuse.py)
    child_max_steps: int = ChildLimits.steps  # what each generated module may take, even when its parent has
    child_max_seconds: float = ChildLimits.seconds  # no limit (decompose/limits.py)
    max_output_chars: int = ChildLimits.output_chars
    child_max_memory: int = ChildLimits.memory
    max_statements: int = MAX_STATEMENTS  # in one pipeline of a generated module; more is sent back to be split
    memory_threshold: int = MEMORY_THRESHOLD  # characters: a bigger input goes to the workspace memory
    protocol: bool = True  # author and reviewer take turns on the scratchpad and read it and the insights
    ask_human: bool = True  # a review disagreement the parent's author does not settle goes to a person
    max_research: int = 1  # research children per writing, for "needs research" answers (0: fail at once)
    research_module: str = ""  # the research child's source; "" is the stdlib's research.pipe
    data_driven: bool = False  # design (examples, expectations) and its review before the code (decompose/dataflow.py)
    simulation_rounds: int = 2  # failed simulations sent back to the author before the code review
    # Which runs of a block's module get an output review (decompose/output_review.py): "off", "first" (the first
    # run of each new or revised module, a run whose outputs fail an expectation, and a `review_sample` share of
    # the others) or "all".
    review_outputs: str = "first"
    review_sample: float = 0.1
    max_run_repairs: int = 2  # repairs of a module on real data per run (decompose/repair.py), before escalating

    @property
    def limits(self) -> ChildLimits:
        return ChildLimits(self.child_max_steps, self.child_max_seconds, self.max_output_chars, self.child_max_memory)

    @classmethod
    def from_config(cls, path: Path | str = "orgtree.toml") -> DecomposeSettings:
        from orgtree_lang.runtime.config import ConfigError, config_section

        section = config_section("decompose", path, types={
            "max_repairs": int, "max_review_rounds": int, "max_depth": int, "context_share": (int, float),
            "similarity": (int, float), "child_max_steps": int, "child_max_seconds": (int, float),
            "max_output_chars": int, "child_max_memory": int, "max_statements": int,
            "memory_threshold": int, "protocol": bool, "ask_human": bool,
            "max_research": int, "research_module": str, "data_driven": bool, "simulation_rounds": int,
            "review_outputs": (bool, str), "review_sample": (int, float), "max_run_repairs": int})
        from orgtree_lang.decompose.output_review import MODES, review_mode

        for key in ("simulation_rounds", "max_run_repairs"):
            if section.get(key, 0) < 0:
                raise ConfigError(f"{path}: [decompose] {key} must be 0 or more, got {section[key]!r}")
        if "review_outputs" in section:
            section["review_outputs"] = review_mode(section["review_outputs"])
            if section["review_outputs"] not in MODES:
                raise ConfigError(f"{path}: [decompose] review_outputs must be one of "
                                  f"{', '.join(repr(m) for m in MODES)}, got {section['review_outputs']!r}")
        if not 0 <= section.get("review_sample", 0) <= 1:
            raise ConfigError(f"{path}: [decompose] review_sample must be a share from 0 to 1, got "
                              f"{section['review_sample']!r}")
        for key in ("child_max_steps", "child_max_seconds", "max_output_chars", "child_max_memory", "max_statements",
                    "memory_threshold"):
            if key in section and section[key] <= 0:
                raise ConfigError(f"{path}: [decompose] {key} must be more than 0, got {section[key]!r} (a generated "
                                  "module's limits can be raised, not switched off)")
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})


class Decomposer:
    """Resolves ambiguous blocks for one program; `depth` counts how many generated modules enclose it."""

    def __init__(self, *, author, reviewer, registry, workspace: Path, parent_file: str, parent_source: str,
                 settings: DecomposeSettings | None = None, depth: int = 0, max_repairs: int | None = None,
                 max_review_rounds: int | None = None, max_depth: int | None = None, goal=None,
                 parent_author: tuple[str, str] | None = None, human=None, config=None,
                 notices: set[str] | None = None, repair_turns: RepairTurns | None = None) -> None:
        """`parent_author` is (module path, conversation) of the author that wrote the module this program is, for
        a generated one; `human(question) -> answer` asks the human node. Both settle review disagreements.
        `config` is the run's orgtree.toml as read at its start (runtime.config.ConfigSnapshot; its `[web]` says
        whether research may search the web); None reads the workspace's file when asked."""
        settings = settings or DecomposeSettings()
        from orgtree_lang.decompose.output_review import review_mode

        if not isinstance(settings.review_outputs, str):  # true/false, as callers of earlier versions say it
            import dataclasses

            settings = dataclasses.replace(settings, review_outputs=review_mode(settings.review_outputs))
        overrides = {k: v for k, v in (("max_repairs", max_repairs), ("max_review_rounds", max_review_rounds),
                                       ("max_depth", max_depth)) if v is not None}
        if overrides:
            import dataclasses

            settings = dataclasses.replace(settings, **overrides)
        self.settings = settings
        self.author = author
        self.reviewer = reviewer
        self.registry = registry
        self.workspace = Path(workspace)
        self.config = config if config is not None else self.workspace / "orgtree.toml"
        self.parent_file = parent_file
        self.parent_source = parent_source
        self.depth = depth
        # What encloses this program's blocks: a child inherits the root program's description and path.
        self.goal = goal if goal is not None else Goal.of_program(parent_file, parent_source)
        self.parent_author = parent_author
        # Spec hash -> (block node, set when done) while a block finds or writes the module for that spec.
        self._writing: dict[str, tuple[str, threading.Event]] = {}
        self.human = human
        self.store = ModuleStore(self.workspace)
        self.notices = notices if notices is not None else set()  # what this run tree said once (shared by children)
        self._messages = None  # decompose.messages.MessageSettings, read from `[org]` when a child first runs
        self._programs: dict[str, tuple[SavedModule, Any]] = {}  # spec hash -> module and program, this run
        self.repairs: dict[str, int] = {}  # spec hash -> repairs made on real data in this run (decompose/repair.py)
        self.repair_turns = repair_turns or RepairTurns()  # one repair of a module at a time, in the whole run tree
        self.ran: dict[str, tuple[SavedModule, Any]] = {}  # block node -> the module its reach ran last (a re-plan's)
        self.checks: dict[str, Any] = {}  # spec hash -> the compiled check of the block's `expect` lines, this run

    @property
    def max_depth(self) -> int:
        return self.settings.max_depth

    def __call__(self, block) -> dict[str, Any]:
        """The outputs of `block` (a vm.blocks.BlockContext): from a module saved or written for it, run as a child."""
        spec = block.spec
        if self.depth >= self.max_depth:
            raise PipeRuntimeError(f"ambiguous block `{spec.name}` is {self.depth} generated modules deep, the "
                                   f"limit is {self.max_depth}", kind="ambiguous", catchable=False,
                                   hint="the blocks keep breaking down into more unknown steps; write this step "
                                        "yourself or raise the limit ([decompose] max_depth in orgtree.toml)")
        digest = spec_hash(spec)
        self._await_writer(digest, block)
        saved, program = self._module(block, digest)
        return run_repaired(self, program, block, saved, self.metered(block)[0])

    def remember(self, digest: str, saved: SavedModule, program) -> None:
        """Later reaches of the block in this run run `program` (a repaired or re-planned module's)."""
        self._programs[digest] = (saved, program)

    def current(self, digest: str) -> tuple[SavedModule, Any] | None:
        """The module (and program) this run runs for the spec `digest` now, if it has found or written one."""
        return self._programs.get(digest)

    def _module(self, block, digest: str) -> tuple[SavedModule, Any]:
        """The module for `block` and its program: found or written, as `_find_or_write`. In a durable run that is a
        journaled step (kind `module`) whose result is the module's text: a resume or replay runs the module the run
        ran (not whatever the file holds by then: a re-plan may have revised it), and the steps journaled while it
        was written (model answers, scratchpad turns) keep their numbers."""
        if block.effects is None or block.effects.mode == "retry":
            # A retry runs the module as the store has it now: a person may have fixed it (docs/durability.md).
            return self._this_runs(block, digest) or self._find_or_write(block, digest)
        numbering = block.numbering
        # Every reach of the block takes this step, a block reached again in the run too: a resume that stops
        # inside that reach (with no earlier reach run again in its process) then asks the journal in the same order.
        # A module this run has already taken is read from the run's own journal: nobody outside sees that step.
        step = block.effect_step("module", f"module for {block.spec.name}", [digest], {},
                                 observed=self._this_runs(block, digest) is None)
        ran: list[tuple[SavedModule, Any]] = []

        def find(_key: str | None) -> dict[str, Any]:
            known = self._this_runs(block, digest)
            if known is not None:  # the journal has its text from the reach that first took it: its hash will do
                ran.append(known)
                return {"path": str(known[0].path), "body-hash": body_hash(known[0].body), "effects:": 0}
            ran.append(self._find_or_write(block, digest))
            saved = ran[0][0]
            return {"path": str(saved.path), "provenance": saved.provenance, "body": saved.body, "text": saved.text,
                    "effects:": numbering.effect_seq - step.seq}

        found = block.effects.perform(step, find)
        if ran:
            return ran[0]
        numbering.effect_seq = max(numbering.effect_seq, step.seq + found["effects:"])
        from orgtree_lang.compile.api import compile_source

        known = self._programs.get(digest)
        if known is not None and ("text" not in found and body_hash(known[0].body) == found["body-hash"]
                                  or known[0].text == found.get("text")):
            return known  # compiled already by an earlier reach of this resumed run
        if "text" not in found:
            found = self._text_of(Path(found["path"]), found["body-hash"], block)
        saved = SavedModule(Path(found["path"]), found["provenance"], found["body"], found["text"])
        program = compile_source(saved.text, str(saved.path), self.registry).program
        self._programs[digest] = (saved, program)
        return saved, program

    def _text_of(self, path: Path, digest: str, block) -> dict[str, Any]:
        """The module at `path` whose body has hash `digest`, as the journal's module step holds one: from its
        versions (state.db), or the file if it still holds that body."""
        from orgtree_lang.decompose.store import split_header
        from orgtree_lang.decompose.versions import ModuleVersions

        with ModuleVersions(self.workspace) as versions:
            version = versions.with_body(path, digest)
        text = version.text if version is not None else None
        if text is None and path.is_file():
            current = self.store.read(path)
            text = current.text if body_hash(current.body) == digest else None
        if text is None:
            raise PipeRuntimeError(f"ambiguous block `{block.spec.name}`: the module this run ran ({path}, body "
                                   f"{digest}) is no longer in the workspace", kind="ambiguous", catchable=False,
                                   hint="start the run over (`pipe resume RUN --from-scratch`)")
        provenance, body = split_header(text, "# orgtree: ")
        return {"path": str(path), "provenance": provenance, "body": body, "text": text}

    def _this_runs(self, block, digest: str) -> tuple[SavedModule, Any] | None:
        """The module an earlier reach of the block in this run found, wrote or repaired: no file is read and
        nothing compiled again."""
        known = self._programs.get(digest)
        if known is not None:
            block.note(f"reused {known[0].path}")
        return known

    def _find_or_write(self, block, digest: str) -> tuple[SavedModule, Any]:
        """A saved module for `block`'s spec that may be reused, else one written for it; with its program."""
        from orgtree_lang.decompose.store import StoreError
        from orgtree_lang.models.base import ModelError
        from orgtree_lang.review.errors import ReviewError

        spec, inputs = block.spec, block.inputs
        writing = threading.Event()
        self._writing[digest] = (block.node, writing)
        try:
            saved = self.store.find(digest)
            author, reviewer = self.metered(block)
            program = None
            if saved is not None:
                try:
                    program = checked_for_reuse(saved, spec, self.registry)
                except ReuseRefused as err:
                    raise PipeRuntimeError(f"ambiguous block `{spec.name}`: {err}", kind="ambiguous", catchable=False,
                                           hint=err.hint) from None
                block.note(f"reused {saved.path}")
            elif self.author is None:
                raise PipeRuntimeError(
                    f"ambiguous block `{spec.name}` cannot run: no module is saved for it and no model is configured "
                    "to write one", kind="ambiguous", catchable=False,
                    hint="configure a model for the decomposer with `--model NAME` or the PIPE_MODEL environment "
                         "variable (or replace the block with skill calls)")
            else:
                try:
                    # Saved modules that fit this block's signature: the most similar may be reused as they are; the
                    # author sees the rest, down to half the similarity, for reference.
                    similar = similar_modules(self.store, spec, self.registry, self.settings.similarity / 2)
                    if getattr(block, "concurrent", False):
                        # Resolved concurrently (org/block_calls.py): whether a sibling block's module is saved yet
                        # depends on timing, and a resume must make the same choices as the run.
                        similar = [(score, m) for score, m in similar
                                   if not m.provenance.get("parent", "").startswith(f"{self.parent_file}:")]
                    saved = self._reuse_similar(spec, digest, reviewer, block,
                                                [m for score, m in similar if score >= self.settings.similarity])
                    if saved is None:
                        block.note("writing a module")
                        saved = write_module(self, spec, inputs, digest, author, reviewer, block,
                                             [m for _, m in similar])
                        block.note(f"written to {saved.path} ({saved.provenance.get('review-rounds')} "
                                            "review round(s))")
                except (ModelError, ReviewError, StoreError) as err:
                    kind = "model" if isinstance(err, ModelError) else "ambiguous"
                    raise PipeRuntimeError(f"ambiguous block `{spec.name}`: {err}", kind=kind, catchable=False,
                                           hint=getattr(err, "hint", None) or "nothing was saved; fix the cause "
                                           "and run again") from err
            if program is None:
                from orgtree_lang.compile.api import compile_source

                program = compile_source(saved.text, str(saved.path), self.registry).program
            self._programs[digest] = (saved, program)
        finally:
            if self._writing.get(digest, (None, None))[1] is writing:
                del self._writing[digest]
            writing.set()
        return saved, program

    def _await_writer(self, digest: str, block) -> None:
        """While another block of this run finds or writes the module for the same spec (blocks of parallel
        branches resolve concurrently, org/block_calls.py), wait for it, so the module is written and saved once;
        never for a block this one runs inside."""
        while digest in self._writing:
            node, writing = self._writing[digest]
            if block.node.startswith(node + "/"):
                return
            block.spend.away(writing.wait)

    def metered(self, block, work: str = "writing", review: str = "reviewing"):
        """The author and reviewer, their calls counted against the run tree's budget and charged to the block;
        `work` and `review` name what they do in budget errors and the trace (`repairing block X`)."""
        from orgtree_lang.durable.model_steps import journaled_calls
        from orgtree_lang.models.metered import MeteredModel

        if self.author is None:
            return self.author, self.reviewer
        spec, spend, journal = block.spec, block.spend, journaled_calls(block)
        return (MeteredModel(self.author, spend=spend, what=f"{work} block `{spec.name}`", journal=journal),
                MeteredModel(self.reviewer, spend=spend, what=f"{review} block `{spec.name}`", journal=journal))

    def agent(self, block, role: str, model):
        """`model` as the agent `<role> of <block>`, taking its turn on the scratchpad (unless `protocol = false`);
        the insights it offers are reviewed by the block's other model (protocol.insight_reviewer)."""
        if not self.settings.protocol:
            return model
        from orgtree_lang.decompose.protocol import insight_reviewer, pad_summarizer, take_turns, task_of

        author, reviewer = self.metered(block)
        return take_turns(model, block, agent=f"{role} of {block.spec.name}", task=task_of(block.spec),
                          workspace=self.workspace, reviewer=insight_reviewer(model, author, reviewer),
                          summarizer=pad_summarizer(block, author, self.workspace))

    _metered = metered  # the name decompose/messages.py knows

    # ---- reusing a module made for another block ----------------------------------

    def _reuse_similar(self, spec: AmbiguousSpec, digest: str, reviewer, block,
                       candidates: list[SavedModule]) -> SavedModule | None:
        """A saved module of a similar block that fits this one and that a reviewer accepts, saved for this block."""
        reviewer = self.agent(block, "reuse reviewer", reviewer) if candidates else reviewer
        for module in candidates[:2]:
            block.note(f"asking a reviewer whether {module.path.name} can be reused")
            conversation = uuid.uuid4().hex
            verdict = ask_reuse(reviewer, spec, module, conversation)
            if not verdict.accept:
                continue
            provenance = {
                **self.provenance_base(spec, digest),
                "reused-from": str(module.path),
                "reuse-accepted-by": f"{reviewer.name} conversation {conversation}: {verdict.reasons}",
                "review-rounds": "0",
                "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
            return self.store.save(self.parent_file, spec.name, module.body, provenance, self.registry)
        return None

    # ---- writing a module (decompose/writing.py) ----------------------------------

    def provenance_base(self, spec: AmbiguousSpec, digest: str) -> dict[str, str]:
        return {"block": spec.name, "description": spec.doc, "parent": f"{self.parent_file}:{spec.span.line}",
                "spec-hash": digest}

    def human_for(self, block):
        """How to ask the human node for `block`: the given seam, else the run's inbox (a durable run only)."""
        if self.human is not None or not self.settings.ask_human:
            return self.human
        return block.ask_human if block.effects is not None else None

    # ---- running it ------------------------------------------------------------

    def run_child(self, program, block, saved: SavedModule, author, name: str = ""):
        """The outputs of one run of `saved` for `block`, fitted to its outputs' types (no review: see
        decompose/repair.py); `name` tells a run again after a repair apart (`<block node>/<name>`)."""
        from orgtree_lang.decompose.coerce import fit_outputs, model_reshaper
        from orgtree_lang.vm.blocks import ChildOverLimit, Replan

        spec, path = block.spec, saved.path
        if any(use == "ctx" or use.startswith("ctx.") for use in program.uses):
            # The module reads its inputs from the workspace memory: this run's values, under their tags, whatever
            # their size (a module written for a big input may be reused for a small one).
            remember_inputs(spec, block.inputs, self.workspace, 0)
        child_decomposer = Decomposer(
            author=self.author, reviewer=self.reviewer, registry=self.registry, workspace=self.workspace,
            parent_file=str(path), parent_source=saved.text, settings=self.settings, depth=self.depth + 1,
            goal=self.goal.inside(self.parent_file, spec), human=self.human, config=self.config,
            parent_author=(str(path), saved.provenance.get("author-conversation") or f"module:{path}"),
            notices=self.notices, repair_turns=self.repair_turns)
        limits = self.settings.limits
        replans = 0
        try:
            while True:
                # The block's node, which the child's `send parent` reaches; its agent reads what no handler does.
                block.desk = block_node(self, block)
                self.ran[block.node] = (saved, program)
                try:
                    # Every child runs within a generated module's limits, even when the parent has none, and its
                    # workspace keeps program sources read-only whatever the settings say.
                    result = block.run_child(program, child_decomposer, context=generated_context(block.context),
                                             limits=limits.budget(), name=name)
                    break
                except Replan as replan:
                    replans += 1
                    saved, program = replanned(self, block, saved, replan, replans)
                    path = saved.path
        except ChildOverLimit as err:
            raise self._over_limits(spec, saved, limits.describe(err.limit), err) from err
        except PipeRuntimeError as err:
            # Point at the child's line, with the child's text to show it, and keep its frames on the stack.
            inside = err.span is not None and Path(err.span.file) == path
            wrapped = PipeRuntimeError(f"the generated module for `{spec.name}` ({path}) failed: {err.message}",
                                       kind=err.kind, span=err.span, hint=err.hint or f"read or fix it: {path}",
                                       catchable=err.catchable,
                                       source=err.source or (path.read_text(encoding="utf-8") if inside else None))
            wrapped.frames_below = list(err.stack)
            raise wrapped from err
        if len(spec.outputs) == 1:
            outputs = {spec.outputs[0][0]: result}
        elif isinstance(result, RecordValue) and result.record_name == OUTPUTS_RECORD:
            outputs = dict(result.fields)
        else:
            raise PipeRuntimeError(f"the generated module for `{spec.name}` returned {display(result, True)}, not "
                                   f"an {OUTPUTS_RECORD} record", kind="ambiguous")
        if limits.output_chars is not None and output_size(outputs, limits.output_chars) > limits.output_chars:
            raise self._over_limits(spec, saved, limits.describe("output"), None)
        reshaper = None
        if author is not None:
            conversation = uuid.uuid4().hex

            def reshaper(value, ptype):
                # The coercer is an agent of the block, seated only when no exact rule fits: its reshape is a turn.
                return model_reshaper(self.agent(block, "output coercer", author), block.records,
                                      conversation)(value, ptype)
        return fit_outputs(outputs, spec, block.records, reshaper)

    def _over_limits(self, spec: AmbiguousSpec, saved: SavedModule, limit: str, err: PipeRuntimeError | None):
        """The error for a child that went over a generated module's limit, after marking its module so that later
        runs refuse it rather than run it again with no model."""
        from orgtree_lang.decompose.reuse import accept_name

        self.store.mark_budget_failure(saved, f"went over {limit}")
        self._programs.pop(spec_hash(spec), None)
        where = f"; stopped at {err.span}" if err is not None and err.span else ""
        return PipeRuntimeError(
            f"the generated module for `{spec.name}` ({saved.path}) went over the {limit} a generated module may "
            f"take{where}", kind="budget", span=err.span if err is not None else None, catchable=False,
            hint=f"later runs refuse it until a person acts: fix it and approve it with `pipe modules accept "
                 f"{accept_name(saved)}`, raise the limit in orgtree.toml and approve it, or delete the file and a "
                 "model writes a new one")
