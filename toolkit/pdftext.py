"""Text from a PDF: pypdf when it is installed, else a small built-in reader of text operators.

The built-in reader handles PDFs whose fonts use standard encodings (plain or Flate-compressed content
streams); fonts with custom encodings come out garbled, which the result says.
"""

from __future__ import annotations

import logging
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_STREAM = re.compile(rb"<<(?P<dict>(?:(?!>>).)*?)>>\s*stream\r?\n(?P<body>.*?)\r?\n?endstream", re.S)
_TOKEN = re.compile(
    rb"\((?P<str>(?:\\.|[^\\)])*)\)|\[(?P<arr>(?:\\.|[^\]\\])*)\]\s*TJ|(?P<op>T\*|Td|TD|Tj|'|\"|ET|BT)(?![A-Za-z])",
    re.S,
)
_ARRAY_PART = re.compile(rb"\((?P<str>(?:\\.|[^\\)])*)\)|(?P<num>-?\d+(?:\.\d+)?)")
_ESCAPES = {
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
    b"b": b"\b",
    b"f": b"\f",
    b"(": b"(",
    b")": b")",
    b"\\": b"\\",
}


@dataclass
class PdfText:
    text: str
    pages_read: int | None  # None when the reader cannot tell pages apart
    total_pages: int | None
    method: str


def _unescape(raw: bytes) -> str:
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i : i + 1]
        if c == b"\\" and i + 1 < len(raw):
            nxt = raw[i + 1 : i + 2]
            octal = re.match(rb"[0-7]{1,3}", raw[i + 1 : i + 4])
            if octal:
                out.append(int(octal.group(), 8) & 0xFF)
                i += 1 + len(octal.group())
                continue
            out += _ESCAPES.get(nxt, nxt)
            i += 2
            continue
        out += c
        i += 1
    return out.decode("latin-1")


def _content_text(content: bytes) -> str:
    parts: list[str] = []
    for m in _TOKEN.finditer(content):
        if m["str"] is not None:
            parts.append(_unescape(m["str"]))
        elif m["arr"] is not None:
            for piece in _ARRAY_PART.finditer(m["arr"]):
                if piece["str"] is not None:
                    parts.append(_unescape(piece["str"]))
                elif float(piece["num"]) < -200:  # a wide kern is a word gap
                    parts.append(" ")
        elif m["op"] in (b"T*", b"Td", b"TD", b"'", b'"', b"ET"):
            parts.append("\n")
    return re.sub(r"\n{3,}", "\n\n", "".join(parts))


def _builtin(path: Path, max_chars: int) -> PdfText:
    data = path.read_bytes()
    texts: list[str] = []
    used = 0
    for m in _STREAM.finditer(data):
        body = m["body"]
        if b"/FlateDecode" in m["dict"]:
            try:
                body = zlib.decompress(body)
            except zlib.error:
                continue
        elif b"/Filter" in m["dict"]:
            continue  # images and other encodings carry no text we can read
        text = _content_text(body).strip()
        if text:
            texts.append(text)
            used += len(text)
            if used >= max_chars:
                break
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", data)) or None
    return PdfText("\n\n".join(texts), None, pages, "built-in reader (install pypdf for better text)")


def _pypdf(path: Path, max_chars: int) -> PdfText:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    texts: list[str] = []
    used = 0
    read = 0
    for page in reader.pages:
        text = page.extract_text() or ""
        texts.append(text)
        read += 1
        used += len(text)
        if used >= max_chars:
            break
    return PdfText("\n\n".join(texts), read, len(reader.pages), "pypdf")


def extract_text(path: Path, max_chars: int) -> PdfText:
    """Text of the first pages of `path`, at least `max_chars` of it when the PDF has that much."""
    try:
        return _pypdf(path, max_chars)
    except ImportError:
        return _builtin(path, max_chars)
