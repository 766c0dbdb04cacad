"""Text and bytes values, each way: text.from_bytes decodes a bytes value's data, text.to_bytes encodes text."""

from __future__ import annotations

from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import skill


@skill("text.from_bytes", pure=True)
def from_bytes(value: BytesValue, encoding: str = "utf-8") -> str:
    """The text a bytes value holds (a text resource of an MCP tool, a file read with fs.read_bytes).

    Example: `text.from_bytes(fs.read_bytes("notes.md"))`

    Args:
        value: The bytes value.
        encoding: How its data encodes text: `utf-8` (the default), `latin-1`, `utf-16`, ...

    Returns:
        The decoded text; data that is not text in that encoding is an error naming the first bad byte.
    """
    try:
        return value.data.decode(encoding)
    except LookupError:
        raise SkillError(f"text.from_bytes: there is no text encoding {encoding!r}",
                         hint="use a Python codec name such as utf-8, latin-1 or utf-16") from None
    except UnicodeDecodeError as exc:
        raise SkillError(f"text.from_bytes: the {value.media_type} data is not {encoding} text "
                         f"(byte {exc.start} cannot be decoded)",
                         hint="it may be binary data: write it with fs.write_bytes, or name its encoding") from None


@skill("text.to_bytes", pure=True)
def to_bytes(text: str, media_type: str = "text/plain") -> BytesValue:
    """A bytes value holding a text as UTF-8, with a media type (to write an SVG or CSV with fs.write_bytes, or to
    return a file from an MCP tool).

    Example: `text.to_bytes(svg, media_type="image/svg+xml")`

    Args:
        text: The text.
        media_type: The value's media type; `text/plain` by default.

    Returns:
        The bytes value.
    """
    try:
        return BytesValue(text.encode("utf-8"), media_type)
    except UnicodeEncodeError as exc:
        raise SkillError(f"text.to_bytes: the text holds a lone surrogate at {exc.start}, which UTF-8 cannot "
                         "encode") from None
