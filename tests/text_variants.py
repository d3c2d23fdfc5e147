"""How a file's plain UTF-8 LF text turns into the bytes other tools write: the variants
every text analyser must read to the same numbers (tests re-encode inputs with these)."""

from __future__ import annotations

from collections.abc import Callable


def _lines(text: str, end: str) -> str:
    return text.replace("\n", end)


# name → how the plain UTF-8 LF text becomes the variant's bytes
VARIANTS: dict[str, Callable[[str], bytes]] = {
    "utf-8 BOM": lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"),
    "utf-16-le BOM, CRLF (PowerShell >)": lambda t: (
        b"\xff\xfe" + _lines(t, "\r\n").encode("utf-16-le")
    ),
    "utf-16-be BOM": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
    "utf-16-le, no BOM": lambda t: t.encode("utf-16-le"),
    "CR": lambda t: _lines(t, "\r").encode("utf-8"),
    "CRLF": lambda t: _lines(t, "\r\n").encode("utf-8"),
    "CR CR LF": lambda t: _lines(t, "\r\r\n").encode("utf-8"),
}
