"""Every table and index of the workspace's state.db, declared once as data, and the ordered migrations that build them.

state.db has one schema version, kept in `PRAGMA user_version`. A database at version N has had migrations
1..N applied, each in one transaction together with the version bump, so a crash leaves either the old
version or the new one. Version 0 is every workspace written before versions existed (fa31da4 and earlier):
each module then created its own tables when it first opened the file, so a version-0 database holds any
subset of the tables of migration 1, created with exactly the statements below. Migration 1 therefore
creates only what is missing (IF NOT EXISTS); every later migration runs exactly once.

No other module creates, alters or drops a table of state.db: they open it with
`runtime.state_db.open_state_db`, which applies what is missing, and write through its `Transaction`.

To add a table (or an index, or a column), append one `Migration` to `MIGRATIONS`; nothing else changes:

    Migration(3, "what each run wrote down for later", tables=(
        Table("run_notes", "orgtree_lang.<package>.<module>", '''
            run_id TEXT NOT NULL,
            text TEXT NOT NULL
        ''', indexes=(Index("run_notes_by_run", "run_notes (run_id)"),)),
    )),

An index on an existing table goes in `indexes=(Index(...),)`; a column is added with
`statements=("ALTER TABLE run_notes ADD COLUMN at REAL NOT NULL DEFAULT 0",)`. What ALTER TABLE cannot change
(a CHECK constraint) takes a `Rebuild`: the table is made again under its new declaration from a SELECT over the
old one, which says how each old row reads in the new shape (migration 6). Never edit a
migration that has shipped: workspaces at its version have already run it. tests/test_state_schema.py checks
that the migrations are numbered 1, 2, 3 ..., that every table and index a migrated database holds is
declared here, and that the committed workspace of fa31da4 (tests/fixtures/workspace_v0) still migrates.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Index:
    """An index: its name and what follows ON in CREATE INDEX (`table (columns)`, with an optional WHERE)."""

    name: str
    on: str

    def create(self, if_not_exists: bool) -> str:
        return f"CREATE INDEX {'IF NOT EXISTS ' if if_not_exists else ''}{self.name} ON {self.on}"


@dataclass(frozen=True)
class Table:
    """A table: its name, the module that reads and writes it, its column definitions, and its indexes."""

    name: str
    owner: str
    columns: str
    indexes: tuple[Index, ...] = ()
    # Rows kept in the primary key's b-tree alone, not in a rowid table plus a copy in the key's index: for
    # tables that are little more than their key (SQLite's "WITHOUT ROWID"; half the bytes, migration 9).
    without_rowid: bool = False

    def definition(self, name: str) -> str:
        """CREATE TABLE for this table's columns under `name`."""
        return f"CREATE TABLE {name} ({self.columns}){' WITHOUT ROWID' if self.without_rowid else ''}"

    def create(self, if_not_exists: bool) -> list[str]:
        exists = "IF NOT EXISTS " if if_not_exists else ""
        return [self.definition(exists + self.name), *(index.create(if_not_exists) for index in self.indexes)]


@dataclass(frozen=True)
class Rebuild:
    """An existing table made again under a new declaration (`table`, same name): `select` reads every row of the
    old table as a row of the new one (its columns in the new table's order); the old table and its indexes go."""

    table: Table
    select: str

    def sql(self) -> list[str]:
        name = self.table.name
        rebuilt = f"{name}_rebuilt"
        return [self.table.definition(rebuilt), f"INSERT INTO {rebuilt} {self.select}", f"DROP TABLE {name}",
                f"ALTER TABLE {rebuilt} RENAME TO {name}", *(index.create(False) for index in self.table.indexes)]


@dataclass(frozen=True)
class Migration:
    """One step from version `version - 1` to `version`: tables to create, indexes on older tables, tables
    rebuilt, statements."""

    version: int
    summary: str
    tables: tuple[Table, ...] = ()
    indexes: tuple[Index, ...] = ()
    statements: tuple[str, ...] = ()
    rebuilds: tuple[Rebuild, ...] = ()

    def sql(self) -> list[str]:
        # Migration 1 meets databases that already hold some of its tables (version 0); later ones never do.
        baseline = self.version == 1
        return ([statement for table in self.tables for statement in table.create(baseline)]
                + [index.create(baseline) for index in self.indexes]
                + [statement for rebuild in self.rebuilds for statement in rebuild.sql()] + list(self.statements))


_CONCERNS = Table("concerns", "orgtree_lang.review.ledger", """
    subject TEXT NOT NULL,
    concern_id TEXT NOT NULL,
    round INT NOT NULL,
    severity TEXT NOT NULL CHECK(severity IN ('blocking', 'minor')),
    spec_basis TEXT NOT NULL,
    evidence TEXT NOT NULL,
    suggested_fix TEXT NOT NULL,
    status TEXT NOT NULL CHECK(status IN ('open', 'resolved', 'rejected', 'out_of_scope')),
    rationale TEXT NOT NULL DEFAULT '',
    author_conversation TEXT NOT NULL,
    reviewer_conversation TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (subject, concern_id)
""")
_CONCERN_EVENTS = Table("concern_events", "orgtree_lang.review.ledger", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    subject TEXT NOT NULL,
    concern_id TEXT NOT NULL,
    round INT,
    event TEXT NOT NULL,
    status TEXT NOT NULL,
    rationale TEXT NOT NULL DEFAULT '',
    conversation TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL
""")
_REVIEW_ROUNDS = Table("review_rounds", "orgtree_lang.review.ledger", """
    subject TEXT NOT NULL,
    round INT NOT NULL,
    author_conversation TEXT NOT NULL,
    reviewer_conversation TEXT NOT NULL,
    reviewer_model TEXT NOT NULL DEFAULT '',
    concerns INT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL,
    PRIMARY KEY (subject, round)
""")
_TREE_NODES = Table("tree_nodes", "orgtree_lang.runlog.store", """
    id TEXT PRIMARY KEY,          -- <run id>/<node path>, e.g. 3f2a9c1b7d0e/main/fetch#2
    run_id TEXT NOT NULL,         -- the run (a generated child's run id is its ambiguous node's id)
    parent_id TEXT,               -- NULL for a top-level run's entry pipeline
    seq INTEGER NOT NULL,         -- order of opening within the process that wrote it
    name TEXT NOT NULL,           -- pipeline, skill or block name
    kind TEXT NOT NULL CHECK(kind IN ('pipeline', 'skill', 'ambiguous')),
    caller TEXT NOT NULL DEFAULT '',  -- the pipeline that made the call
    status TEXT NOT NULL CHECK(status IN ('running', 'ok', 'error')),
    inputs TEXT NOT NULL DEFAULT '',
    output TEXT NOT NULL DEFAULT '',
    error TEXT,
    started_at REAL NOT NULL,     -- seconds since the epoch
    duration_ms REAL,
    tokens INTEGER NOT NULL DEFAULT 0,   -- model tokens spent by this node itself (not its children)
    cost REAL NOT NULL DEFAULT 0,        -- model cost in USD spent by this node itself
    detail TEXT NOT NULL DEFAULT ''      -- e.g. `reused`, `written in 2 rounds`, the module's path
""", indexes=(Index("tree_nodes_by_name", "tree_nodes (name, started_at)"),
              Index("tree_nodes_by_run", "tree_nodes (run_id, seq)")))
_DECOMPOSE_ATTEMPTS = Table("decompose_attempts", "orgtree_lang.decompose.attempts", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    block TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    attempt INTEGER NOT NULL,      -- 1, 2, ... within one writing or revision of the module
    phase TEXT NOT NULL,           -- write | revise
    model TEXT NOT NULL,
    conversation TEXT NOT NULL,
    answer TEXT NOT NULL,
    problems TEXT NOT NULL,        -- JSON list: why the answer was not accepted (empty when it was)
    accepted INTEGER NOT NULL,
    at REAL NOT NULL
""")
_RESEARCH_NEEDS = Table("research_needs", "orgtree_lang.decompose.research", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    block TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    parent TEXT NOT NULL,          -- file:line of the block
    reasons TEXT NOT NULL,         -- JSON list of strings
    questions TEXT NOT NULL,       -- JSON list of strings
    model TEXT NOT NULL,
    conversation TEXT NOT NULL,
    at REAL NOT NULL
""")
_SKILL_BUGS = Table("skill_bugs", "orgtree_lang.pool.store", """
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    skill TEXT NOT NULL,
    use_case TEXT NOT NULL,
    expected TEXT NOT NULL,
    observed TEXT NOT NULL,
    notes TEXT NOT NULL DEFAULT '',
    reporter TEXT NOT NULL,
    reporter_conversation TEXT NOT NULL,
    reporter_model TEXT NOT NULL DEFAULT '',
    idempotency_key TEXT UNIQUE,
    status TEXT NOT NULL CHECK(status IN ('open', 'fixed', 'modified', 'removed')),
    created REAL NOT NULL,
    updated REAL NOT NULL
""")
_SKILL_BUG_DECISIONS = Table("skill_bug_decisions", "orgtree_lang.pool.store", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    bug INTEGER NOT NULL REFERENCES skill_bugs(id),
    skill TEXT NOT NULL,
    decision TEXT NOT NULL CHECK(decision IN ('fix', 'modify', 'remove')),
    outcome TEXT NOT NULL CHECK(outcome IN ('applied', 'refused')),
    reasoning TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '[]',
    detail TEXT NOT NULL DEFAULT '',
    reviewer_model TEXT NOT NULL DEFAULT '',
    reviewer_conversation TEXT NOT NULL,
    at REAL NOT NULL
""")
_SKILL_NOTES = Table("skill_notes", "orgtree_lang.pool.store", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    skill TEXT NOT NULL,
    bug INTEGER NOT NULL,
    note TEXT NOT NULL,
    at REAL NOT NULL
""")
_SKILL_REMOVALS = Table("skill_removals", "orgtree_lang.pool.store", """
    skill TEXT PRIMARY KEY,
    bug INTEGER NOT NULL,
    reasoning TEXT NOT NULL,
    at REAL NOT NULL
""")
_SKILL_PROMOTIONS = Table("skill_promotions", "orgtree_lang.pool.store", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    module TEXT NOT NULL,
    name TEXT NOT NULL,
    accepted INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    cases TEXT NOT NULL,
    reviewer_model TEXT NOT NULL DEFAULT '',
    reviewer_conversation TEXT NOT NULL,
    at REAL NOT NULL
""")
_INSIGHTS = Table("insights", "orgtree_lang.memory.insights", """
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    text TEXT NOT NULL,
    evidence TEXT NOT NULL,
    author TEXT NOT NULL,
    tags TEXT NOT NULL,          -- JSON list of strings
    status TEXT NOT NULL CHECK(status IN ('proposed', 'active', 'rejected', 'removed')),
    created REAL NOT NULL,
    updated REAL NOT NULL
""")
_INSIGHT_PROPOSALS = Table("insight_proposals", "orgtree_lang.memory.insights", """
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    insight_id INTEGER NOT NULL REFERENCES insights(id),
    action TEXT NOT NULL CHECK(action IN ('add', 'remove')),
    author TEXT NOT NULL,
    author_conversation TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',          -- remove: why the author wants it gone
    status TEXT NOT NULL CHECK(status IN ('pending', 'accepted', 'rejected')),
    decision TEXT NOT NULL DEFAULT '',        -- the reviewer's summary, or why it was rejected
    reviewer_model TEXT NOT NULL DEFAULT '',
    reviewer_conversations TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL,
    decided REAL,
    key TEXT UNIQUE                           -- the idempotency key of the skill call that proposed it, if any
""")
_INSIGHT_EVENTS = Table("insight_events", "orgtree_lang.memory.insights", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    insight_id INTEGER NOT NULL,
    proposal_id INTEGER,
    event TEXT NOT NULL,         -- proposed, added, add_rejected, removal_proposed, removed, removal_rejected
    detail TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL
""")
_PAD_NOTES = Table("pad_notes", "orgtree_lang.memory.scratchpad", """
    seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- the order notes were written in, which is lock order
    turn INTEGER NOT NULL,                  -- the lock turn that wrote it
    agent TEXT NOT NULL,
    kind TEXT NOT NULL CHECK(kind IN ('plan', 'plan_changed', 'lock_recovered')),
    text TEXT NOT NULL,                     -- the whole note as readers see it
    before TEXT NOT NULL DEFAULT '',        -- plan_changed: what the agent meant to do
    why TEXT NOT NULL DEFAULT '',           -- plan_changed: what it read that changed that
    now TEXT NOT NULL DEFAULT '',           -- plan_changed: how it goes on instead ('' if it does not know yet)
    pid INTEGER NOT NULL,
    at REAL NOT NULL,
    key TEXT UNIQUE                         -- the idempotency key of the skill call that wrote it, if any
""", indexes=(Index("pad_notes_agent", "pad_notes (agent, seq)"),))
_MEMORY_NODES = Table("memory_nodes", "orgtree_lang.memory.store", """
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK(kind IN ('document', 'piece', 'summary')),
    level INTEGER NOT NULL,
    blob TEXT NOT NULL,           -- sha256 of the blob under .orgtree/blobs holding the node's bytes
    start INTEGER NOT NULL,       -- the node's text is bytes start:end of that blob
    end INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    document INTEGER,             -- a piece's document (a document's own id), NULL for summaries
    name TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    key TEXT NOT NULL UNIQUE,     -- what makes the node: a document's name+hash, a piece's range, a summary's inputs
    created REAL NOT NULL
""")
_MEMORY_EDGES = Table("memory_edges", "orgtree_lang.memory.store", """
    parent INTEGER NOT NULL,
    position INTEGER NOT NULL,
    child INTEGER NOT NULL,
    PRIMARY KEY (parent, position)
""", indexes=(Index("memory_edges_child", "memory_edges(child)"),))
# Every node -> the documents whose bytes it stands for.
_MEMORY_COVERS = Table("memory_covers", "orgtree_lang.memory.store", """
    node INTEGER NOT NULL,
    document INTEGER NOT NULL,
    PRIMARY KEY (node, document)
""", indexes=(Index("memory_covers_document", "memory_covers(document)"),))
# The summary cache: input hash + summarizer id + target -> text.
_MEMORY_SUMMARIES = Table("memory_summaries", "orgtree_lang.memory.store", """
    key TEXT PRIMARY KEY,
    blob TEXT NOT NULL,
    tokens INTEGER NOT NULL
""")
_MEMORY_VECTORS = Table("memory_vectors", "orgtree_lang.memory.store", """
    node INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
""")
_MEMORY_META = Table("memory_meta", "orgtree_lang.memory.store", "key TEXT PRIMARY KEY, value TEXT NOT NULL")
_FS_APPENDS = Table("fs_appends", "orgtree_lang.stdlib.fs_ledger", """
    key    TEXT PRIMARY KEY,      -- the caller's idempotency key, e.g. `<run id>:<step>`
    path   TEXT NOT NULL,         -- the file, relative to the workspace root
    offset INTEGER NOT NULL,      -- the file's size when this append started
    size   INTEGER NOT NULL,      -- how many bytes the append adds
    digest TEXT NOT NULL,         -- sha256 of those bytes, to catch a key reused for another append
    data   BLOB,                  -- the bytes while the append is pending; NULL once done
    done   INTEGER NOT NULL DEFAULT 0
""", indexes=(Index("fs_appends_pending", "fs_appends(path) WHERE done = 0"),))

# Version 5 of the org tree's tables: the same columns, with a `branch` kind and the organization's node states.
_TREE_NODES_V5 = Table("tree_nodes", "orgtree_lang.runlog.store", _TREE_NODES.columns.replace(
    "CHECK(kind IN ('pipeline', 'skill', 'ambiguous'))", "CHECK(kind IN ('pipeline', 'skill', 'ambiguous', 'branch'))"
).replace("CHECK(status IN ('running', 'ok', 'error'))",
          "CHECK(status IN ('running', 'ok', 'error', 'waiting', 'receiving', 'cancelled', 'interrupted'))"),
    indexes=_TREE_NODES.indexes)
_TREE_CALLS_V5_COLUMNS = """
    run_id TEXT NOT NULL,
    parent_id TEXT NOT NULL,      -- the node that made the calls
    name TEXT NOT NULL,           -- skill, pipeline or branch name
    kind TEXT NOT NULL CHECK(kind IN ('pipeline', 'skill', 'branch')),
    caller TEXT NOT NULL DEFAULT '',
    first_started REAL NOT NULL,
    last_started REAL NOT NULL,
    ok INTEGER NOT NULL,          -- how many of the calls ended ok ...
    errors INTEGER NOT NULL,      -- ... and how many with an error (the others were cancelled)
    calls TEXT NOT NULL           -- JSON: [[id, seq, status, inputs, output, error, started_at, duration_ms,
                                  --         tokens, cost, detail], ...] (runlog/store.py)
"""
_TREE_CALLS_V5 = Table("tree_calls", "orgtree_lang.runlog.store", _TREE_CALLS_V5_COLUMNS, indexes=(
    Index("tree_calls_by_name", "tree_calls (name, last_started)"), Index("tree_calls_by_run", "tree_calls (run_id)"),
    Index("tree_calls_by_parent", "tree_calls (parent_id)")))
# Version 7: a `decision` kind, for the agent of a block's node deciding what a message means (docs/org.md).
_TREE_NODES_V7 = Table("tree_nodes", "orgtree_lang.runlog.store", _TREE_NODES_V5.columns.replace(
    "'ambiguous', 'branch'))", "'ambiguous', 'branch', 'decision'))"), indexes=_TREE_NODES.indexes)
# Version 9 (benchmarks/big_values.py): the context tree's links and summary cache are little more than their
# keys, and a rowid table stored each row twice, in the table and in its key's index: a 5 MB input's tree
# took 1.3 MB of state.db for them alone. Stored by their keys, they take half.
_MEMORY_BY_KEY = ((replace(_MEMORY_EDGES, without_rowid=True), "parent, position, child"),
                  (replace(_MEMORY_COVERS, without_rowid=True), "node, document"),
                  (replace(_MEMORY_SUMMARIES, without_rowid=True), "key, blob, tokens"))
# How version 4 named a branch node, and said that a node was cancelled (vm/scheduler.py then).
_BRANCH_NAME = "({name} GLOB 'branch [0-9]* (line [0-9]*)' OR {name} GLOB 'iteration [0-9]* (line [0-9]*)')"
_CANCELLED = "(coalesce({error}, '') = 'cancelled' OR coalesce({error}, '') LIKE '% was cancelled')"

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "the tables every module created for itself before state.db had a version (fa31da4)", tables=(
        _CONCERNS, _CONCERN_EVENTS, _REVIEW_ROUNDS, _TREE_NODES, _DECOMPOSE_ATTEMPTS, _RESEARCH_NEEDS,
        _SKILL_BUGS, _SKILL_BUG_DECISIONS, _SKILL_NOTES, _SKILL_REMOVALS, _SKILL_PROMOTIONS,
        _INSIGHTS, _INSIGHT_PROPOSALS, _INSIGHT_EVENTS, _PAD_NOTES,
        _MEMORY_NODES, _MEMORY_EDGES, _MEMORY_COVERS, _MEMORY_SUMMARIES, _MEMORY_VECTORS, _MEMORY_META,
        _FS_APPENDS)),
    Migration(2, "kv.get/set/delete/keys: values per namespace, kept across runs", tables=(
        Table("kv", "orgtree_lang.stdlib.kv", """
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,          -- the value encoded as JSON (runtime.values.encode)
    PRIMARY KEY (namespace, key)
"""),)),
    # People are nodes (docs/org.md): the questions runs (and runtime code) put to the human node, and the answers.
    Migration(3, "the human node's inbox: open questions across runs, and their answers", tables=(
        Table("human_questions", "orgtree_lang.runlog.inbox", """
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- shown and answered as h<id>
    key TEXT NOT NULL UNIQUE,              -- <run id>:<journal step> for a run's question, else the asker's own key
    run_id TEXT,                           -- the run that waits for the answer (NULL: asked outside any run)
    seq INTEGER,                           -- the journal step of that run that takes the answer
    node TEXT NOT NULL DEFAULT '',         -- the node that asks (main/deploy#1), or what is asked about
    kind TEXT NOT NULL CHECK(kind IN ('ask', 'approve')),
    question TEXT NOT NULL,
    file TEXT NOT NULL DEFAULT '',
    line INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK(status IN ('open', 'answered')),
    answer TEXT,                           -- the answer encoded as JSON (a str for ask, a bool for approve)
    asked REAL NOT NULL,
    answered REAL
""", indexes=(Index("human_questions_open", "human_questions (status, asked)"),)),)),
    Migration(4, "org tree calls that finished before they were written, stored in groups", tables=(
        Table("tree_calls", "orgtree_lang.runlog.store", """
    run_id TEXT NOT NULL,
    parent_id TEXT NOT NULL,      -- the node that made the calls
    name TEXT NOT NULL,           -- skill or pipeline name
    kind TEXT NOT NULL CHECK(kind IN ('pipeline', 'skill')),
    caller TEXT NOT NULL DEFAULT '',
    first_started REAL NOT NULL,
    last_started REAL NOT NULL,
    ok INTEGER NOT NULL,          -- how many of the calls ended ok ...
    errors INTEGER NOT NULL,      -- ... and how many with an error
    calls TEXT NOT NULL           -- JSON: [[id, seq, status, inputs, output, error, started_at, duration_ms,
                                  --         tokens, cost, detail], ...] (runlog/store.py)
""", indexes=(Index("tree_calls_by_name", "tree_calls (name, last_started)"),
              Index("tree_calls_by_run", "tree_calls (run_id)"),
              Index("tree_calls_by_parent", "tree_calls (parent_id)"))),)),
    # `send "human", value` (docs/org.md): notes to people that need no answer, listed by `pipe inbox`.
    Migration(5, "the human node's notes: what runs tell people without asking", tables=(
        Table("human_notes", "orgtree_lang.runlog.inbox", """
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- shown as n<id>
    key TEXT NOT NULL UNIQUE,              -- <run id>:<journal step> (or :m<message id> in a run without a journal)
    run_id TEXT,
    node TEXT NOT NULL DEFAULT '',         -- the node that sent it (main/desk#2)
    topic TEXT NOT NULL DEFAULT 'note',
    text TEXT NOT NULL,
    file TEXT NOT NULL DEFAULT '',
    line INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK(status IN ('unread', 'read')),
    sent REAL NOT NULL
""", indexes=(Index("human_notes_unread", "human_notes (status, sent)"),)),)),
    # The organization's node states (docs/org.md). Version 4 stored an interrupted node as an error whose text
    # starts with `[interrupted] `, a cancelled one as an error saying it was cancelled, and a parallel branch as
    # a pipeline node named `branch K (line L)` or `iteration K (line L)`: each old row is read as what it was.
    Migration(6, "org tree nodes: the branch kind, and the states waiting, receiving, cancelled, interrupted",
              rebuilds=(Rebuild(_TREE_NODES_V5, f"""SELECT id, run_id, parent_id, seq, name,
    CASE WHEN kind = 'pipeline' AND {_BRANCH_NAME.format(name="name")} THEN 'branch' ELSE kind END,
    caller,
    CASE WHEN status = 'error' AND substr(error, 1, 14) = '[interrupted] ' THEN 'interrupted'
         WHEN status = 'error' AND {_CANCELLED.format(error="error")} THEN 'cancelled' ELSE status END,
    inputs, output,
    CASE WHEN status = 'error' AND substr(error, 1, 14) = '[interrupted] ' THEN nullif(substr(error, 15), '')
         ELSE error END,
    started_at, duration_ms, tokens, cost, detail FROM tree_nodes"""),
                        Rebuild(_TREE_CALLS_V5, f"""SELECT run_id, parent_id, name,
    CASE WHEN kind = 'pipeline' AND {_BRANCH_NAME.format(name="name")} THEN 'branch' ELSE kind END,
    caller, first_started, last_started,
    (SELECT count(*) FROM json_each(calls) WHERE json_extract(value, '$[2]') = 'ok'),
    (SELECT count(*) FROM json_each(calls) WHERE json_extract(value, '$[2]') = 'error'
        AND NOT {_CANCELLED.format(error="json_extract(value, '$[5]')")}),
    (SELECT json_group_array(CASE WHEN json_extract(value, '$[2]') = 'error'
                                       AND {_CANCELLED.format(error="json_extract(value, '$[5]')")}
                                  THEN json_set(value, '$[2]', 'cancelled') ELSE json(value) END)
       FROM (SELECT value FROM json_each(calls) ORDER BY key))
    FROM tree_calls"""))),
    Migration(7, "org tree nodes: the decision kind (a block node's agent deciding what a message means)",
              rebuilds=(Rebuild(_TREE_NODES_V7, """SELECT id, run_id, parent_id, seq, name, kind, caller, status, inputs,
    output, error, started_at, duration_ms, tokens, cost, detail FROM tree_nodes"""),)),
    # Repair on real data (docs/decomposer.md): every version of a generated module, the first as written and each
    # repair after a run-time failure, with the cases it must pass and the block reach that first ran it.
    Migration(8, "generated modules' versions: written, then repaired on real data", tables=(
        Table("module_versions", "orgtree_lang.decompose.versions", """
    key TEXT PRIMARY KEY,             -- <module> written:<body hash> | found:<body hash> | <block node>:repair-<n>
    module TEXT NOT NULL,             -- the module's path relative to the workspace root
    spec_hash TEXT NOT NULL,
    version INTEGER NOT NULL,         -- 1, 2, ... per module
    body_hash TEXT NOT NULL,
    previous TEXT NOT NULL DEFAULT '',-- the body hash of the version it revised ('' for the first)
    text TEXT NOT NULL,               -- the whole file as saved, header included
    reason TEXT NOT NULL,             -- written | found | what failed, for a repair
    cases TEXT NOT NULL,              -- JSON: the examples this version was simulated on
    run_id TEXT NOT NULL DEFAULT '',
    first_run TEXT,                   -- the block node that first ran this version (its output review: "first")
    at REAL NOT NULL
""", indexes=(Index("module_versions_by_module", "module_versions (module, version)"),)),)),
    Migration(9, "the context tree's edges, covers and summary cache kept by their keys (WITHOUT ROWID)",
              rebuilds=tuple(Rebuild(table, f"SELECT {columns} FROM {table.name}") for table, columns in _MEMORY_BY_KEY)),
    # Nothing to change in the file: from here on a tree_calls row's `calls` may hold its calls by column
    # (runlog/store.py), which an orgtree-lang of version 9 cannot read; it now says so instead of failing.
    Migration(10, "org tree call groups stored by column (tree_calls.calls a JSON object of columns)"),
)


SCHEMA_VERSION = MIGRATIONS[-1].version


def declared_tables(migrations: tuple[Migration, ...] = MIGRATIONS) -> dict[str, Table]:
    """Every table the migrations create, by name, as its latest rebuild declares it."""
    return {table.name: table for migration in migrations
            for table in (*migration.tables, *(rebuild.table for rebuild in migration.rebuilds))}


def declared_indexes(migrations: tuple[Migration, ...] = MIGRATIONS) -> dict[str, Index]:
    """Every index the migrations create, with their tables or on their own, by name."""
    found = {index.name: index for table in declared_tables(migrations).values() for index in table.indexes}
    return found | {index.name: index for migration in migrations for index in migration.indexes}
