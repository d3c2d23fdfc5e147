"""Reading a dump file (:func:`read_dump`): gzip, size cap; and the encoding decided by
byte-order mark, NUL bytes, XML declaration, else UTF-8; line ends normalised."""

from __future__ import annotations

import codecs
import gzip
import re
import zlib
from pathlib import Path

from mqoe.analysis.textio import describe_os_error, normalise_line_ends, open_input, sniff_encoding
from mqoe.errors import InputFileError

MAX_FILE_BYTES = 64 * 1024 * 1024  # a 5,000-node uiautomator dump is ~2 MB
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']""")


def read_dump(path: str | Path) -> bytes:
    """The bytes of a dump file, gunzipped when compressed.

    At most :data:`MAX_FILE_BYTES` (+1) bytes are read, whatever ``stat`` says: a pipe or
    a device such as ``/dev/zero`` is refused at the limit instead of filling memory.
    """
    stream, raw, _ = open_input(path)
    try:
        data = stream.read(MAX_FILE_BYTES + 1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise InputFileError(path, f"a broken gzip file ({error})") from None
    except OSError as error:
        raise InputFileError(path, describe_os_error(error)) from None
    finally:
        raw.close()
    if len(data) > MAX_FILE_BYTES:
        raise InputFileError(
            path, f"larger than {MAX_FILE_BYTES:,} bytes: no view-hierarchy dump is that large"
        )
    return data


def _decode(data: bytes, name: str) -> str:
    """Bytes → text with LF line ends. A BOM wins; then NUL bytes (a dump begins with an
    ASCII character, so a NUL beside it means UTF-16 without a BOM); then an XML
    declaration naming an ASCII-compatible encoding; then UTF-8. A declaration naming
    UTF-16/32 on bytes without NULs is ignored (the file was re-saved as UTF-8): the
    bytes win."""
    codec, skip = sniff_encoding(data[:512])
    if skip == 0 and codec == "utf-8":
        if len(data) >= 2 and data[0] and not data[1]:
            codec = "utf-16-le"
        elif len(data) >= 2 and data[1] and not data[0]:
            codec = "utf-16-be"
        else:
            codec = _declared_encoding(data, name)
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as error:
        before = data[skip : skip + error.start].decode(codec, errors="replace")
        line = normalise_line_ends(before).count("\n") + 1
        raise InputFileError(name, f"not valid {codec} text ({error.reason})", line) from None
    return normalise_line_ends(text)


def _declared_encoding(data: bytes, name: str) -> str:
    declared = _XML_ENCODING.match(data[:200])
    if declared is None:
        return "utf-8"
    label = declared.group(1).decode("ascii")
    try:
        codec = codecs.lookup(label).name
    except LookupError:
        raise InputFileError(name, f"unsupported encoding {label!r}", line=1) from None
    if codec.startswith(("utf-16", "utf-32", "utf_16", "utf_32")):
        return "utf-8"
    try:
        compatible = "<?xml encoding=''?>".encode(codec) == b"<?xml encoding=''?>"
    except (UnicodeError, LookupError):
        compatible = False
    if not compatible:
        raise InputFileError(name, f"unsupported encoding {label!r}", line=1)
    return codec
