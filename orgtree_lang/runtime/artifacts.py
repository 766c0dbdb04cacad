"""Binary values of .pipe programs (`bytes`): data with a media type, shown by size and hash, never as its bytes.

A `BytesValue` is immutable. In run state it encodes as `{"$bytes": {"media_type", "sha256", "size", "base64"}}`
(runtime/values.py); the journal's Spiller (runtime/blobs.py) stores the data once as a content-addressed blob and
keeps only the reference without `base64`, so journal rows and checkpoints never hold the bytes themselves."""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from typing import Any

OCTET_STREAM = "application/octet-stream"
FIELDS = ("media_type", "size", "sha256")  # what `.NAME` reads of a bytes value (syntax/types.py BYTES_FIELDS)
ENCODING_KEY = "$bytes"


class BytesValue:
    """Binary data and its media type (`image/png`, `application/pdf`, ...); its sha256 is computed once."""

    __slots__ = ("data", "media_type", "_sha256", "_base64")
    pipe_kind = "bytes"  # read by syntax/types.py, which may not import this layer

    def __init__(self, data: bytes, media_type: str | None = None) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"a bytes value holds bytes, not {type(data).__name__}")
        self.data = bytes(data)
        self.media_type = (media_type or OCTET_STREAM).strip().lower() or OCTET_STREAM
        self._sha256: str | None = None
        self._base64: str | None = None

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = hashlib.sha256(self.data).hexdigest()
        return self._sha256

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def base64(self) -> str:
        """The data as base64 text, made once (a value kept in run state is encoded at every checkpoint)."""
        if self._base64 is None:
            self._base64 = base64.b64encode(self.data).decode("ascii")
        return self._base64

    @property
    def is_image(self) -> bool:
        return self.media_type.startswith("image/")

    def data_url(self) -> str:
        """`data:MEDIA;base64,...`: how an image reaches a model (OpenAI's `image_url` content part)."""
        return f"data:{self.media_type};base64,{self.base64}"

    def field(self, name: str) -> Any:
        """`value.media_type`, `value.size`, `value.sha256` in a program; KeyError for any other name."""
        if name not in FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def with_media_type(self, media_type: str) -> BytesValue:
        same = BytesValue(self.data, media_type)
        same._sha256, same._base64 = self._sha256, self._base64
        return same

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BytesValue) and other.media_type == self.media_type and (
            other.data is self.data or other.sha256 == self.sha256)

    def __hash__(self) -> int:
        return hash(self.sha256)

    def __repr__(self) -> str:
        return describe(self)

    def encoded(self) -> dict[str, Any]:
        """The run-state encoding (see the module's docstring)."""
        return {ENCODING_KEY: {"media_type": self.media_type, "sha256": self.sha256, "size": self.size,
                               "base64": self.base64}}

    @classmethod
    def from_encoded(cls, inner: dict[str, Any]) -> BytesValue:
        if "base64" not in inner:
            raise ValueError(f"the bytes value sha256:{inner.get('sha256', '?')} was read without its data; "
                             "read the journal through its Spiller, which puts blobs back")
        value = cls(base64.b64decode(inner["base64"]), inner.get("media_type"))
        value._base64 = inner["base64"]
        return value


def from_plain(value: dict[str, Any]) -> BytesValue:
    """A bytes value from its JSON form `{"media_type", "base64"}` (what `pipe run --json` and MCP give, and take
    as an argument); ValueError when the data is not base64 or a sha256 given does not match it."""
    try:
        data = base64.b64decode(value.get("base64") or "", validate=True)
    except (ValueError, TypeError):
        raise ValueError("its `base64` is not base64 text") from None
    made = BytesValue(data, value.get("media_type"))
    if value.get("sha256") not in (None, made.sha256):
        raise ValueError(f"its sha256 {value['sha256']} is not that of its data ({made.sha256})")
    return made


def describe(value: BytesValue) -> str:
    """`<bytes image/png 12,345 B sha256:abcd1234…>`: how print, `pipe show` and traces show a bytes value."""
    return f"<bytes {value.media_type} {value.size:,} B sha256:{value.sha256[:12]}…>"


def guess_media_type(name: str) -> str:
    """The media type of a file name by its suffix (Python's `mimetypes`), `application/octet-stream` when unknown."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or OCTET_STREAM


def sniff_media_type(data: bytes) -> str | None:
    """The media type of common image data by its first bytes (for MCP contents that name none), or None."""
    for magic, media in ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
                         (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif")):
        if data.startswith(magic):
            return media
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None
