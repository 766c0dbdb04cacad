"""What a generated child module must be for an ambiguous block: its spec hash and its required signature."""

from __future__ import annotations

import hashlib
import json

from orgtree_lang.compile.code import AmbiguousSpec

OUTPUTS_RECORD = "Outputs"


def spec_hash(spec: AmbiguousSpec) -> str:
    """Identical for blocks with the same name, typed inputs and outputs, docstring, capabilities, and stated
    examples and expectations."""
    canonical = {
        "name": spec.name,
        "inputs": [[name, str(ptype)] for name, ptype in spec.inputs],
        "outputs": [[name, str(ptype)] for name, ptype in spec.outputs],
        "doc": spec.doc.strip(),
        "uses": sorted(spec.uses),
    }
    # Stated examples and expectations are part of the spec; a block without them hashes as it always did.
    if spec.examples:
        canonical["examples"] = [example.to_json() | {"line": 0} for example in spec.examples]
    if spec.expects:
        canonical["expects"] = [list(expect) for expect in spec.expects]
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def required_signature(spec: AmbiguousSpec) -> str:
    """The entry pipeline a child module must declare, written as .pipe source (for prompts and errors)."""
    params = ", ".join(f"{name}: {ptype}" for name, ptype in spec.inputs)
    if len(spec.outputs) == 1:
        return f"pipeline main({params}) -> {spec.outputs[0][1]}"
    fields = "\n".join(f"    {name}: {ptype}" for name, ptype in spec.outputs)
    return f"record {OUTPUTS_RECORD}:\n{fields}\n\npipeline main({params}) -> {OUTPUTS_RECORD}"

