"""Key-value skills: store JSON-able values under string keys, per namespace, in the workspace's state."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill
from orgtree_lang.runtime.values import decode, encode

MAX_VALUE_CHARS = 10_000_000


def _db(ctx: SkillContext) -> sqlite3.Connection:
    # The table `kv` of the workspace's state.db (declared in runtime/schema.py); every call is one short
    # transaction.
    db = ctx.state_db()
    assert db is not None  # created when missing
    return db


def _check_namespace(skill_name: str, namespace: str) -> None:
    if not namespace:
        raise SkillError(f"{skill_name}: the namespace is empty", hint='the default namespace is "default"')


@skill("kv.get", unobserved=True)
def get(ctx: SkillContext, key: str, default: Any = None, namespace: str = "default") -> Any:
    """The value stored under `key`, or `default` if there is none.

    Example: `count = kv.get("visits", 0)`

    Args:
        key: The key.
        default: What to return when the key is not set.
        namespace: Keeps the keys of one program or purpose apart from others.
    """
    _check_namespace("kv.get", namespace)
    db = _db(ctx)
    try:
        row = db.execute("SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key)).fetchone()
    finally:
        db.close()
    return default if row is None else decode(json.loads(row["value"]))


@skill("kv.set", idempotent=True)
def set_value(ctx: SkillContext, key: str, value: Any, namespace: str = "default") -> None:
    """Store `value` under `key`, replacing what was there; it stays in the workspace for later runs.

    Example: `kv.set("visits", count + 1)`

    Args:
        key: The key.
        value: Any value (text, numbers, lists, dicts, records, ...).
        namespace: Keeps the keys of one program or purpose apart from others.
    """
    _check_namespace("kv.set", namespace)
    text = json.dumps(encode(value), ensure_ascii=False)
    if len(text) > MAX_VALUE_CHARS:
        raise SkillError(f"kv.set: the value is {len(text):,} characters of JSON, more than the "
                         f"{MAX_VALUE_CHARS:,} allowed", hint="store large data in a file with fs.write")
    db = _db(ctx)
    try:
        with db.transaction():
            db.execute("INSERT INTO kv (namespace, key, value) VALUES (?, ?, ?) "
                       "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value", (namespace, key, text))
    finally:
        db.close()


@skill("kv.delete", idempotent=True)
def delete(ctx: SkillContext, key: str, namespace: str = "default") -> bool:
    """Remove `key`; true if it was set.

    Example: `kv.delete("visits")`

    Args:
        key: The key.
        namespace: Keeps the keys of one program or purpose apart from others.
    """
    _check_namespace("kv.delete", namespace)
    db = _db(ctx)
    try:
        with db.transaction():
            removed = db.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key)).rowcount
    finally:
        db.close()
    return removed > 0


@skill("kv.keys", unobserved=True)
def keys(ctx: SkillContext, namespace: str = "default", prefix: str = "") -> list[str]:
    """The keys set in a namespace, sorted, optionally only those starting with `prefix`.

    Example: `for key in kv.keys(prefix="user:"):`

    Args:
        namespace: The namespace to list.
        prefix: Only keys starting with this text.
    """
    _check_namespace("kv.keys", namespace)
    db = _db(ctx)
    try:
        rows = db.execute("SELECT key FROM kv WHERE namespace = ? ORDER BY key", (namespace,)).fetchall()
    finally:
        db.close()
    return [row["key"] for row in rows if row["key"].startswith(prefix)]
