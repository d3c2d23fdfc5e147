"""Shared text reading: encodings, line ends, long lines, unreadable paths."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mqoe.analysis.textio import (
    iter_lines,
    list_files,
    read_text,
    sniff_encoding,
    split_lines,
)
from mqoe.errors import InputFileError
from tests.unprivileged import run_python_as_nobody, world_dir

# NUL is left out: text files do not hold it, and BOM-less UTF-16 is told from UTF-8 by NULs.
_LINE = st.text(st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)))
_END = st.sampled_from(["\n", "\r\n", "\r", "\r\r\n"])
_CODEC = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"])


@given(st.lists(_LINE, min_size=1, max_size=30), _END, _CODEC, st.integers(1, 64))
# a short BOM-less UTF-16LE text whose supplementary character (D800 DC00) puts NULs in
# the low bytes too: it once read as UTF-8
@example(["", "0000", "\U00010000"], "\r\n", "utf-16-le", 1)
# …and U+0100 (low byte NUL) with two of them: as many NULs low as the surrogates' half
@example(["", "0000", "\u0100\U00010000\U00010000"], "\r\n", "utf-16-le", 1)
@example(["", "0000", "\u0100\U00010000\U00010000"], "\r\n", "utf-16-be", 1)
def test_any_encoding_and_line_end_gives_back_the_lines(
    lines: list[str], end: str, codec: str, chunk: int
) -> None:
    # One convention per file, as tools write them (CR then LF is CR LF, not two ends).
    text = "".join(line + end for line in lines)
    data = text.encode(codec)
    if codec in ("utf-16-le", "utf-16-be") and len(text) < 2:
        return  # one BOM-less UTF-16 character is too little to tell it from UTF-8
    if codec not in ("utf-8-sig", "utf-16") and text.startswith("\ufeff"):
        return  # a BOM-less file starting with bytes that look like a BOM is ambiguous
    if codec in ("utf-16-le", "utf-16-be"):
        # BOM-less UTF-16 is recognised when most code units of its head are U+0001–U+00FF
        # (NULs in their high bytes), as in the text dumps phones write; text of other
        # scripts in BOM-less UTF-16 is indistinguishable from other byte soups.
        head = text.encode("utf-16-le")[:512]
        narrow = sum(1 for i in range(0, len(head), 2) if head[i + 1] == 0 and head[i])
        if narrow * 2 <= len(head) // 2:
            return
    got = list(iter_lines(io.BytesIO(data), chunk_bytes=chunk))
    assert got == lines


def test_cr_cr_lf_is_one_line_end_even_split_across_chunks() -> None:
    chunks = ["a\r", "\r", "\nb\r", "\r\n"]
    assert list(split_lines(chunks)) == ["a", "b"]


def test_a_line_over_the_limit_is_none_and_the_next_line_survives() -> None:
    chunks = ["x" * 5, "x" * 5, "x" * 5 + "\nshort\n"]
    assert list(split_lines(chunks, max_line_chars=8)) == [None, "short"]


def test_final_line_without_an_end_is_kept() -> None:
    assert list(split_lines(["a\nb"])) == ["a", "b"]


@pytest.mark.parametrize(
    ("head", "codec"),
    [
        (b"\xef\xbb\xbfabc", "utf-8"),
        (b"\xff\xfea\x00b\x00", "utf-16-le"),
        (b"\xfe\xff\x00a\x00b", "utf-16-be"),
        (b"a\x00b\x00c\x00", "utf-16-le"),
        (b"plain text", "utf-8"),
    ],
)
def test_sniff_encoding(head: bytes, codec: str) -> None:
    assert sniff_encoding(head)[0] == codec


def test_read_text_handles_gzip_bom_and_line_ends(tmp_path: Path) -> None:
    path = tmp_path / "x.txt.gz"
    path.write_bytes(gzip.compress("one\r\r\ntwo\r".encode("utf-16")))
    assert read_text(path) == "one\ntwo\n"


def test_a_folder_where_a_file_is_expected_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="is a folder"):
        read_text(tmp_path)


def test_a_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such file"):
        read_text(tmp_path / "absent.txt")


def test_list_files_recurses_and_sorts(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.txt").write_text("")
    (tmp_path / "1.txt").write_text("")
    (tmp_path / "c.log").write_text("")
    assert [p.name for p in list_files(tmp_path, "*.txt")] == ["1.txt", "2.txt"]


def test_unreadable_file_and_folder_name_the_path_as_another_user() -> None:
    with world_dir() as root:
        secret = root / "locked"
        secret.mkdir()
        (secret / "trace.txt").write_text("x\n")
        secret.chmod(0o000)
        script = (
            "from mqoe.analysis.textio import list_files, read_text\n"
            "from mqoe.errors import UserError\n"
            "for call in (lambda: list_files({!r}), lambda: read_text({!r})):\n"
            "    try:\n"
            "        call()\n"
            "    except UserError as exc:\n"
            "        print(exc)\n"
        ).format(str(secret), str(secret / "trace.txt"))
        result = run_python_as_nobody(script)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            f"{secret}: permission denied (cannot read it as this user)",
            f"{secret / 'trace.txt'}: permission denied (cannot read it as this user)",
        ]


def test_a_damaged_gzip_stream_is_a_one_line_error(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(b"line\n" * 1000))
    data[20:40] = bytes(20)  # inside the deflate stream
    path = tmp_path / "x.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(InputFileError, match=r"x\.gz: cannot read it"):
        read_text(path)


def test_read_text_over_the_limit_says_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("x" * 100)
    with pytest.raises(InputFileError, match="larger than 10 bytes, expected a tiny trace"):
        read_text(path, max_bytes=10, what="a tiny trace")
