"""An MCP tool answer's content blocks as .pipe values: text as str, images, audio and embedded resources as bytes.

Blocks come from the SDK (pydantic models, `mime_type`) or from the stdio client (the wire's JSON keys, `mimeType`);
both are read the same way."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from orgtree_lang.runtime.artifacts import OCTET_STREAM, BytesValue, sniff_media_type
from orgtree_lang.runtime.errors import SkillError


def _field(item: Any, *names: str) -> Any:
    for name in names:
        value = item.get(name) if isinstance(item, dict) else getattr(item, name, None)
        if value is not None:
            return value
    return None


def _decoded(skill: str, what: str, data: Any) -> bytes:
    try:
        return base64.b64decode(data or "", validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise SkillError(f"{skill}: the MCP server sent {what} whose data is not base64",
                         hint="this is a bug in the MCP server") from None


def block_value(skill: str, block: Any) -> Any:
    """One block's value: str for text (and a resource link's URI), a BytesValue for the rest."""
    kind = _field(block, "type")
    if kind == "text":
        return _field(block, "text") or ""
    if kind in ("image", "audio"):
        data = _decoded(skill, f"an {kind}", _field(block, "data"))
        return BytesValue(data, _field(block, "mime_type", "mimeType") or sniff_media_type(data) or OCTET_STREAM)
    if kind == "resource":
        resource = _field(block, "resource") or {}
        media = _field(resource, "mime_type", "mimeType")
        text = _field(resource, "text")
        if text is not None:
            return BytesValue(str(text).encode("utf-8"), media or "text/plain")
        data = _decoded(skill, "a resource", _field(resource, "blob"))
        return BytesValue(data, media or sniff_media_type(data) or OCTET_STREAM)
    if kind == "resource_link":
        return str(_field(block, "uri") or "")
    return None  # a kind this version does not know: left out, as clients skip what they cannot show


def content_value(skill: str, blocks: list) -> Any:
    """The value of an answer without structured content: its text blocks joined by newlines when they are all
    text; the one value when it is a single image or resource; else the list of every block's value, in order."""
    values = [value for value in (block_value(skill, block) for block in blocks) if value is not None]
    if all(isinstance(value, str) for value in values):
        return "\n".join(values)
    if len(values) == 1:
        return values[0]
    return values
