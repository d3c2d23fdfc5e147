"""``mqoe analyze anr`` on real files other people captured (``shared/data/real/anr``).

The facts asserted here were read off the files by hand (see the shared README for where
each file comes from): process, thread counts, the main thread's state and top frame,
which files carry no stacks. Encoding and line-end variants are made from the same files
in ``tmp_path`` (never copied into the repository).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mqoe.analysis.anr import (
    AnrFile,
    EventSummary,
    Frame,
    ThreadDump,
    load_events,
    parse_anr_file,
    summarize,
)

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "anr"

SENTRY = "sentry__thread_dump.txt"
BAD_DATA = "sentry__thread_dump_bad_data.txt"
NATIVE_ONLY = "sentry__thread_dump_native_only.txt"
NO_STACKTRACE = "sentry__thread_dump_no_stacktrace.txt"
NAME_MAIN = "sentry__thread_dump_process_name_main.txt"
XCRASH = "xcrash__tombstone_anr_arm64-v8a.txt"
ALL_FILES = (SENTRY, BAD_DATA, NATIVE_ONLY, NO_STACKTRACE, NAME_MAIN, XCRASH)


def _real(name: str) -> Path:
    path = REAL / name
    if not path.is_file():
        pytest.skip(f"real ANR file not found: {path}")
    return path


def _thread(anr: AnrFile, name: str, process: int = 0) -> ThreadDump:
    matches = [t for t in anr.processes[process].threads if t.name == name]
    assert len(matches) == 1, f"{len(matches)} threads named {name!r}"
    return matches[0]


def _same_analysis(a: EventSummary, b: EventSummary) -> None:
    """Everything but the file name and the container format is equal."""
    left = dataclasses.asdict(a)
    right = dataclasses.asdict(b)
    for key in ("file", "source"):
        left.pop(key)
        right.pop(key)
    assert left == right


# -- what each file is ---------------------------------------------------------------


def test_android13_dump_main_blocked_on_a_sleeping_thread() -> None:
    anr = parse_anr_file(_real(SENTRY))
    assert [p.name for p in anr.processes] == ["io.sentry.samples.android"]
    proc = anr.processes[0]
    assert (proc.pid, proc.declared_threads, proc.truncated) == (28941, 29, False)
    assert len(proc.threads) == 30  # 29 attached + one "(not attached)" binder thread
    assert sum(t.tid is not None for t in proc.threads) == 29
    main = _thread(anr, "main")
    assert (main.state, main.sched_state, main.sys_tid) == ("Blocked", "S", 28941)
    assert main.frames[0] == Frame(
        "java", "io.sentry.samples.android.MainActivity$2.run", "MainActivity.java:177"
    )
    # "Native (still starting up)": the state is the word after tid=, not the note.
    assert _thread(anr, "perfetto_hprof_listener").state == "Native"
    # DALVIK THREADS (N) counts attached threads only; "(no managed stack frames)" is
    # ART's note, not an unknown line; the Waiting Channels twin of pid 28941 is skipped.
    assert anr.stats.warnings() == {"skipped_sections": 1}
    assert anr.source == "anr_trace" and not anr.stacks_missing
    event = summarize(anr)
    assert event.blocked_thread == "main"
    assert event.critical_threads == ("Thread-9",)  # holds <0x0d3a2f0a>, sleeping
    assert event.path == "main -lock-> Thread-9" and event.wait_for_length == 1
    assert event.threads_without_stack == 0


def test_xcrash_anr_tombstone_is_one_event_of_its_process() -> None:
    anr = parse_anr_file(_real(XCRASH))
    assert anr.source == "xcrash_tombstone"
    assert len(anr.processes) == 1
    proc = anr.processes[0]
    assert (proc.pid, proc.name, proc.declared_threads) == (21533, "xcrash.sample", 26)
    assert proc.time_text == "2019-10-12 03:25:25.645+0800"  # the tombstone's Crash time
    assert len(proc.threads) == 35 and sum(t.tid is not None for t in proc.threads) == 26
    main = _thread(anr, "main")
    assert (main.state, main.tid, main.sys_tid) == ("Sleeping", 1, 21533)
    assert main.frames[0] == Frame("java", "java.lang.Thread.sleep", "Native method")
    assert len(main.frames) == 17
    # logcat, open files and memory info are not threads, frames or unknown lines
    assert _thread(anr, "CookieMonsterBa").frames[-1].location.endswith("libmonochrome.so")
    functions = [f.function for t in proc.threads for f in t.frames]
    assert not [f for f in functions if "am_on_" in f or "fd " in f or "MemTotal" in f]
    assert anr.stats.warnings() == {}
    event = summarize(anr)
    assert (event.process, event.pid, event.blocked_thread) == ("xcrash.sample", 21533, "main")
    assert event.critical_threads == ("main",) and event.critical_state == "Sleeping"


def _plain_twin(tombstone: Path, folder: Path) -> Path:
    """The tombstone's ART thread dump as /data/anr would hold it: between xCrash's
    ``--- --- ---`` and ``+++ +++ +++`` lines, under a ``----- pid N at DATE -----`` line
    made from the header's ``pid:`` and ``Crash time:``."""
    lines = tombstone.read_text(encoding="utf-8").split("\n")
    pid = next(m.group(1) for s in lines if (m := re.match(r"pid: (\d+)", s)))
    when = next(m.group(1) for s in lines if (m := re.match(r"Crash time: '(.*)'", s)))
    start = next(i for i, s in enumerate(lines) if s.startswith("--- --- ---"))
    end = next(i for i, s in enumerate(lines) if s.startswith("+++ +++ +++"))
    body = lines[start + 1 : end]
    twin = folder / "twin.txt"
    twin.write_text(
        "\n".join(
            [f"----- pid {pid} at {when.replace('T', ' ')} -----", *body, f"----- end {pid} -----"]
        )
        + "\n",
        encoding="utf-8",
    )
    return twin


def test_xcrash_tombstone_analyses_like_its_plain_twin(tmp_path: Path) -> None:
    tombstone = _real(XCRASH)
    twin = _plain_twin(tombstone, tmp_path)
    a, b = parse_anr_file(tombstone), parse_anr_file(twin)
    assert b.source == "anr_trace"
    assert a.processes == b.processes
    _same_analysis(summarize(a), summarize(b))


def test_waiting_channels_only_dump_parses_and_says_stacks_are_missing() -> None:
    # Android 14's AMS line "----- dumping pid: …", then libdebuggerd_client failed, so
    # debuggerd's client wrote its fallback: the kernel wait channel of every thread.
    anr = parse_anr_file(_real(BAD_DATA))
    assert anr.subject is not None and anr.subject.startswith("Input dispatching timed out")
    names = [p.name for p in anr.processes]
    assert names == ["com.example.app:mainProcess", "com.example.app:gameProcess"]
    assert all(p.waiting_channels and len(p.threads) == 498 for p in anr.processes)
    main = anr.processes[0].threads[0]
    assert (main.sys_tid, main.sched_state, main.wchan, main.frames) == (12233, "R", "0", [])
    catcher = [t for t in anr.processes[1].threads if t.sys_tid == 12236]
    assert [(t.sched_state, t.wchan) for t in catcher] == [("D", "swap_readpage")]
    assert anr.stacks_missing
    event = summarize(anr)
    assert event.stacks_missing and event.threads_without_stack == 498
    assert event.family == "unknown"  # nothing to read a root cause from
    assert event.blocked_thread == "sysTid=12233"  # the thread whose tid is the pid


def test_thread_with_header_only_is_counted_as_without_stack() -> None:
    anr = parse_anr_file(_real(NO_STACKTRACE))
    proc = anr.processes[0]
    assert [t.name for t in proc.threads] == ["main", "Thread-2"]
    assert proc.truncated  # the file stops without "----- end 12345 -----"
    assert _thread(anr, "Thread-2").frames == [] and _thread(anr, "Thread-2").state == "Sleeping"
    event = summarize(anr)
    assert not event.stacks_missing and event.threads_without_stack == 1
    assert event.stack == ("io.sentry.samples.android.MainActivity.onCreate",)


def test_main_thread_named_after_the_process_is_still_the_blocked_thread() -> None:
    anr = parse_anr_file(_real(NAME_MAIN))
    event = summarize(anr)
    assert event.blocked_thread == "io.sentry.samples.android"  # tid=1
    assert event.critical_state == "Runnable"
    assert event.stack[0] == "io.sentry.samples.android.MainActivity.onCreate"
    assert event.threads_without_stack == 0


def test_debuggerd_native_only_dump_keeps_working() -> None:
    anr = parse_anr_file(_real(NATIVE_ONLY))
    assert len(anr.processes) == 1  # the two Waiting Channels twins of pid 9955 skipped
    proc = anr.processes[0]
    assert (proc.pid, proc.name, len(proc.threads)) == (9955, "io.sentry.samples.android", 57)
    assert all(t.tid is None and t.frames for t in proc.threads)
    first = proc.threads[0]
    assert (first.name, first.sys_tid) == ("samples.android", 9955)
    assert first.frames[0].function == "syscall+28"
    # debuggerd's "NOTE: Function names and BuildId information is missing…" lines are
    # its own remarks, not unknown lines.
    assert anr.stats.warnings() == {"skipped_sections": 2}
    event = summarize(anr)
    assert event.blocked_thread == "samples.android" and not event.stacks_missing


def test_every_corpus_file_is_one_event(tmp_path: Path) -> None:
    for name in ALL_FILES:
        _real(name)
    loaded = load_events([REAL], workers=1)
    assert loaded.files == 6 and not loaded.bad_files
    by_file = {Path(e.file).name: e for e in loaded.events}
    assert sorted(by_file) == sorted(ALL_FILES)
    assert [n for n, e in sorted(by_file.items()) if e.stacks_missing] == [BAD_DATA]


# -- encodings and line ends ---------------------------------------------------------

_VARIANTS = {
    "utf-16-bom": lambda text: text.encode("utf-16"),
    "utf-16-be-bom": lambda text: b"\xfe\xff" + text.encode("utf-16-be"),
    "utf-16-le-no-bom": lambda text: text.encode("utf-16-le"),
    "utf-8-bom": lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
    "cr": lambda text: text.replace("\n", "\r").encode("utf-8"),
    "crlf": lambda text: text.replace("\n", "\r\n").encode("utf-8"),
    "cr-cr-lf": lambda text: text.replace("\n", "\r\r\n").encode("utf-8"),
}


@pytest.mark.parametrize("variant", sorted(_VARIANTS))
@pytest.mark.parametrize("name", [SENTRY, BAD_DATA, NATIVE_ONLY, XCRASH])
def test_reencoded_file_gives_the_same_analysis(tmp_path: Path, name: str, variant: str) -> None:
    original = _real(name)
    path = tmp_path / name
    path.write_bytes(_VARIANTS[variant](original.read_text(encoding="utf-8")))
    a, b = parse_anr_file(original), parse_anr_file(path)
    assert b.processes == a.processes
    assert b.stats.warnings() == a.stats.warnings()
    _same_analysis(summarize(a), summarize(b))


@pytest.mark.parametrize("name", [SENTRY, XCRASH])
def test_streamed_in_small_chunks_gives_the_same_processes(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files over one read chunk are streamed (line ends and UTF-16 code units may straddle
    # chunks); real ANR files fit in one chunk, so shrink the chunk to test that path.
    from mqoe.analysis.anr import read

    original = _real(name)
    expected = parse_anr_file(original)
    monkeypatch.setattr(read, "_CHUNK_BYTES", 997)
    text = original.read_text(encoding="utf-8")
    for variant in sorted(_VARIANTS):
        path = tmp_path / f"{variant}.txt"
        path.write_bytes(_VARIANTS[variant](text))
        got = parse_anr_file(path)
        assert got.processes == expected.processes, variant
        assert got.stats.warnings() == expected.stats.warnings(), variant
