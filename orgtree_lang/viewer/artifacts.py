"""A run's bytes values on its page (images inline, other bytes as download links) and the blob answer behind them.

A blob is served only by its sha256, behind the gate like every page, with the media type its value named when
that is a raster image a browser shows safely; anything else (SVG and HTML included, which could carry script)
goes out as an `application/octet-stream` attachment, under a CSP sandbox, so nothing a run stored can act as a
page of the viewer."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.runtime.blobs import BlobStore
from orgtree_lang.runtime.values import bytes_values, display
from orgtree_lang.viewer.page import esc

SHOWN_INLINE = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp"})
_DIGEST = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def blob_url(value: BytesValue, download: bool = False) -> str:
    url = f"/blobs/{value.sha256}?type={quote(value.media_type, safe='')}"
    return url + "&download=1" if download else url


def artifacts_html(*values) -> str:
    """The bytes values inside `values`, each once: an <img> for an image a browser shows, else a download link;
    "" when there are none."""
    found: dict[str, BytesValue] = {}
    for value in values:
        for item in bytes_values(value):
            found.setdefault(item.sha256 + item.media_type, item)
    items = []
    for item in found.values():
        caption = esc(display(item))
        if item.media_type in SHOWN_INLINE:
            items.append(f'<figure class="artifact"><img src="{esc(blob_url(item))}" alt="{caption}" loading="lazy">'
                         f'<figcaption><a href="{esc(blob_url(item, True))}">{caption}</a></figcaption></figure>')
        else:
            items.append(f'<p class="artifact"><a href="{esc(blob_url(item, True))}" download>download '
                         f'{caption}</a></p>')
    return f'<div class="artifacts">{"".join(items)}</div>' if items else ""


def blob_answer(workspace: Path, digest: str, media_type: str, download: bool):
    """(body, headers) of the blob `digest` of the workspace, or None when there is no such blob."""
    if not _DIGEST.fullmatch(digest):
        return None
    try:
        data = BlobStore(Path(workspace) / ".orgtree" / "blobs").read(digest)
    except FileNotFoundError:
        return None
    inline = media_type in SHOWN_INLINE and not download
    extension = media_type.split("/")[-1] if media_type in SHOWN_INLINE else "bin"
    headers = {"Content-Type": media_type if inline else "application/octet-stream",
               "Content-Security-Policy": "sandbox; default-src 'none'", "X-Content-Type-Options": "nosniff",
               "Cache-Control": "private, max-age=3600", "Referrer-Policy": "no-referrer",
               "Content-Disposition": ("inline" if inline else "attachment")
               + f'; filename="{_NAME.sub("_", digest[:12])}.{extension}"'}
    return data, headers
