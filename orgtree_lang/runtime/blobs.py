"""Content stored by its sha256 under `.orgtree/blobs/`, and JSON data whose big values are stored there once.

`BlobStore` keeps immutable files: bytes in, a digest out, exact byte ranges back (the memory store keeps full
texts there). `spill` replaces every string and every list or object of JSON data that is larger than a
threshold by a reference, `{"$blob": {"sha256": ..., "bytes": ..., "kind": "str" | "json", "preview": ...}}`,
storing its content once however often it is spilled; `resolve` puts the content back. The journal uses them
for run inputs, results, step results and checkpoints, so a big value costs its size once per workspace.

A bytes value (runtime/artifacts.py) is always stored as a blob, whatever its size: its encoding
`{"$bytes": {..., "base64": ...}}` is spilled to `{"$bytes": {"media_type", "sha256", "size"}}` over the raw bytes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.runtime.artifacts import ENCODING_KEY as _BYTES
from orgtree_lang.runtime.files import write_atomic
from orgtree_lang.runtime.values import MEMO_MIN_ITEMS, IdentityMemo

INLINE_BYTES = 4096  # the default threshold: values larger than this are stored as blobs
# New files `put_many` writes side by side: the file system commits fsyncs that wait together in one journal
# commit, where one after another each waits for its own (800 small files: 1.8 s alone, 0.05 s 16 at a time).
WRITERS = 16
PREVIEW_CHARS = 120
_TAG = "$blob"
_USER_DICT = "$dict"  # runtime.values.encode's wrapper: its one key is the program's, never a reference


class BlobStore:
    """A folder of immutable files named by the sha256 of their bytes (`ab/cdef…`); writes are atomic."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        """Store `data` (once) and return its sha256; a crash leaves either the whole file or none."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)
        return digest

    def put_many(self, datas: list[bytes], digests: list[str] | None = None) -> list[str]:
        """`put` of each of `datas` (their sha256s, in order; `digests`: those sha256s, when the caller has them),
        the new files written and fsynced side by side: when it returns every one is on disk, as after `put`."""
        if digests is None:
            digests = [hashlib.sha256(data).hexdigest() for data in datas]
        new = {digest: data for digest, data in zip(digests, datas) if not self.path(digest).exists()}
        if len(new) <= 1:
            for data in new.values():
                self.put(data)
            return digests
        for digest in new:
            self.path(digest).parent.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(min(WRITERS, len(new)), thread_name_prefix="blob-write") as pool:
            # A failure is raised here once the pool has closed: every other write has ended by then.
            list(pool.map(write_atomic, map(self.path, new), new.values()))
        return digests

    def read(self, digest: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes `start:end` of the blob `digest` (all of it by default)."""
        path = self.path(digest)
        try:
            with open(path, "rb") as blob:
                if end is None:
                    blob.seek(start)
                    return blob.read()
                return os.pread(blob.fileno(), end - start, start)
        except FileNotFoundError:
            raise FileNotFoundError(f"the blob {digest} is missing from {self.root}; a run or the memory store "
                                    f"refers to content that was deleted by hand") from None

    def delete(self, digest: str) -> None:
        self.path(digest).unlink(missing_ok=True)


class Spiller:
    """Spills and resolves the big values of JSON data through one BlobStore, above `threshold` characters.

    A string seen again (the same object, as a value kept across checkpoints is) is not hashed again."""

    def __init__(self, store: BlobStore, threshold: int = INLINE_BYTES) -> None:
        self.store = store
        self.threshold = threshold
        self._known: dict[int, tuple[str, str, int]] = {}  # id(string) -> (the string, its digest, its bytes)
        # Big containers seen at the last spill and this one, by identity: an encoded state keeps the encoding of
        # a value that did not change (runtime.values.EncodingMemo), so its blob reference is not made again.
        self._containers = IdentityMemo()

    def spill(self, data: Any, *, generation: bool = False) -> Any:
        """`data` with each string, list or object larger than the threshold replaced by a blob reference.

        With `generation` (a checkpoint's whole state), the big containers it did not reuse are forgotten after it."""
        if not generation:
            return self._spill(data)[0]
        try:
            return self._spill(data)[0]
        finally:
            self._containers.turn()

    def _spill_container(self, data: Any, spill_items: Callable[[Any], tuple[Any, int]]) -> tuple[Any, int]:
        if len(data) < MEMO_MIN_ITEMS:
            return spill_items(data)
        return self._containers.get(data, spill_items)

    def _spill(self, data: Any) -> tuple[Any, int]:
        """The spilled data and about how many characters its JSON text takes."""
        if type(data) is str:
            if len(data) <= self.threshold:
                return data, len(data) + 2
            return self._reference(data, "str"), 200
        if isinstance(data, list):
            return self._spill_container(data, self._spill_list)
        if isinstance(data, dict):
            if len(data) == 1 and _TAG in data:
                return data, 200  # already a reference
            if len(data) == 1 and _BYTES in data:
                return self._bytes_reference(data[_BYTES]), 200
            if len(data) == 1 and _USER_DICT in data:  # a program's dict whose one key starts with "$"
                inner, size = self._spill_fields(data[_USER_DICT])
                return self._container({_USER_DICT: inner}, size + 12)
            return self._spill_container(data, lambda fields: self._container(*self._spill_fields(fields)))
        return data, 24

    def _spill_list(self, data: list) -> tuple[Any, int]:
        items, size = [], 2
        for item in data:
            spilled, item_size = self._spill(item)
            items.append(spilled)
            size += item_size + 2
        return self._container(items, size)

    def _spill_fields(self, data: dict) -> tuple[dict, int]:
        fields, size = {}, 2
        for key, value in data.items():
            spilled, value_size = self._spill(value)
            fields[key] = spilled
            size += len(key) + value_size + 4
        return fields, size

    def _container(self, data: Any, size: int) -> tuple[Any, int]:
        if size <= self.threshold:
            return data, size
        return self._reference(json.dumps(data), "json"), 200

    def _stored(self, text: str, to_data: Callable[[str], bytes]) -> tuple[str, int]:
        """(digest, bytes) of `to_data(text)` put in the store, once per string object (by identity)."""
        known = self._known.get(id(text))
        if known is not None and known[0] is text:
            return known[1], known[2]
        data = to_data(text)
        digest, size = self.store.put(data), len(data)
        if len(self._known) > 1024:
            self._known.clear()
        self._known[id(text)] = (text, digest, size)
        return digest, size

    def _reference(self, text: str, kind: str) -> dict[str, Any]:
        # .pipe strings may hold any code point JSON can
        digest, size = self._stored(text, lambda t: t.encode("utf-8", "surrogatepass"))
        return {_TAG: {"sha256": digest, "bytes": size, "kind": kind, "preview": text[:PREVIEW_CHARS]}}

    def _bytes_reference(self, inner: dict[str, Any]) -> dict[str, Any]:
        """A bytes value's encoding without its data, which is stored once (by identity, decoded and hashed once)."""
        text = inner.get("base64")
        if text is None:
            return {_BYTES: inner}  # already a reference
        digest, _size = self._stored(text, base64.b64decode)
        return {_BYTES: {"media_type": inner.get("media_type"), "sha256": digest, "size": inner.get("size")}}

    def spill_text(self, text: str | None) -> str | None:
        """A JSON text with its big values and bytes spilled (unchanged, and not parsed, when it is small)."""
        if text is None or (len(text) <= self.threshold and _BYTES not in text):
            return text
        return json.dumps(self.spill(json.loads(text)))

    def resolve(self, data: Any) -> Any:
        """`data` with every blob reference replaced by its content."""
        return resolve(data, self.store)

    def resolve_text(self, text: str | None) -> str | None:
        """A JSON text with its references resolved (unchanged, and not parsed, when it has none)."""
        if text is None or (_TAG not in text and _BYTES not in text):
            return text
        return json.dumps(resolve(json.loads(text), self.store))


def resolve(data: Any, store: BlobStore) -> Any:
    """`data` with every blob reference replaced by its content (read from `store`)."""
    if isinstance(data, list):
        return [resolve(item, store) for item in data]
    if isinstance(data, dict):
        if len(data) == 1 and _TAG in data:
            ref = data[_TAG]
            text = store.read(ref["sha256"]).decode("utf-8", "surrogatepass")
            return text if ref["kind"] == "str" else resolve(json.loads(text), store)
        if len(data) == 1 and _BYTES in data:
            ref = data[_BYTES]
            if "base64" in ref:
                return data
            return {_BYTES: {**ref, "base64": base64.b64encode(store.read(ref["sha256"])).decode("ascii")}}
        if len(data) == 1 and _USER_DICT in data:
            return {_USER_DICT: {key: resolve(value, store) for key, value in data[_USER_DICT].items()}}
        return {key: resolve(value, store) for key, value in data.items()}
    return data


def is_reference(data: Any) -> bool:
    return isinstance(data, dict) and len(data) == 1 and _TAG in data
