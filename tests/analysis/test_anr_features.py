"""Stack normalisation, feature vectors and the similarity formula."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.analysis.anr import Features, normalise_frame, parse_anr_text, similarity, summarize
from mqoe.analysis.anr.features import (
    GENERIC_KINDS,
    SPECIFIC_KINDS,
    W_GENERIC,
    W_SPECIFIC,
    cpu_bucket,
    frame_terms,
    normalise_state,
    required_bounds,
)
from mqoe.analysis.anr.model import Frame
from mqoe.generators.anr.event import synth_anr


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("com.x.Repo.getCached(Repo.java:88)", "com.x.Repo.getCached"),
        ("com.x.Foo$$ExternalSyntheticLambda3.run(D8$$SyntheticClass:0)", "com.x.Foo$$Lambda.run"),
        ("com.x.Foo$$Lambda$12/0x0000000801234.run", "com.x.Foo$$Lambda.run"),
        ("com.x.Foo.lambda$onCreate$0(Foo.java:5)", "com.x.Foo.lambda$onCreate"),
        ("android.app.SharedPreferencesImpl$2.run", "android.app.SharedPreferencesImpl$N.run"),
        ("android.app.ActivityThread.access$1500", "android.app.ActivityThread.access$N"),
        (
            "android::IPCThreadState::talkWithDriver(bool)+164",
            "android::IPCThreadState::talkWithDriver",
        ),
        ("[<ffffffc0000861a4>] __switch_to+0x70/0x7c", "__switch_to"),
        ("ext4_sync_file+0x2a4/0x334", "ext4_sync_file"),
        ("com.app.a.b.c3.run(Unknown Source:12)", "com.app.a.b.c#.run"),
        ("Binder:1234_5", "Binder:N_N"),
        ("art::Monitor::Lock(0x7f12ab)", "art::Monitor::Lock"),
        ("foo 0xdeadbeef bar", "foo 0x? bar"),
    ],
)
def test_normalisation_rules(raw: str, normal: str) -> None:
    assert normalise_frame(raw) == normal


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60))
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalise_frame(text)
    assert normalise_frame(once) == once


@settings(max_examples=200, deadline=None)
@given(
    fn=st.from_regex(r"[a-z]{1,6}(\.[A-Za-z]{1,6}){1,3}(\$\d{1,2})?\.[a-z]{1,6}", fullmatch=True),
    lines=st.tuples(st.integers(1, 9999), st.integers(1, 9999)),
)
def test_frames_differing_in_line_numbers_give_the_same_term(
    fn: str, lines: tuple[int, int]
) -> None:
    a = frame_terms(Frame("java", fn, f"X.java:{lines[0]}"))
    b = frame_terms(Frame("java", fn, f"X.java:{lines[1]}"))
    assert a == b == ["java:" + normalise_frame(f"{fn}(X.java:{lines[0]})")]


def test_native_terms_drop_offsets_and_library_directories() -> None:
    a = frame_terms(Frame("native", "fsync+8", "/apex/com.android.runtime/lib64/bionic/libc.so"))
    b = frame_terms(Frame("native", "fsync+412", "/system/lib/libc.so"))
    assert a == b == ["lib:libc.so", "native:fsync"]


def test_states_and_cpu_buckets() -> None:
    assert normalise_state("MONITOR") == "Blocked"
    assert normalise_state("Blocked") == "Blocked"
    assert normalise_state("Zorglub") == "other"
    assert [cpu_bucket(s) for s in (None, 0.05, 0.5, 5.0, 50.0)] == [
        "unknown",
        "idle",
        "low",
        "mid",
        "high",
    ]


def test_similarity_hand_cases() -> None:
    a = Features.make({"p", "q"}, {"x": 3, "y": 4})
    assert similarity(a, a) == 1.0
    b = Features.make({"p", "r"}, {"x": 4, "y": 3})
    jaccard, cosine = 1 / 3, 24 / 25
    expected = (W_GENERIC * jaccard + W_SPECIFIC * cosine) / (W_GENERIC + W_SPECIFIC)
    assert similarity(a, b) == pytest.approx(expected, rel=1e-15)
    assert similarity(a, b) == similarity(b, a)
    empty = Features.make(set(), {})
    assert similarity(empty, empty) == 1.0
    only_generic = Features.make({"p", "q"}, {})
    assert similarity(a, only_generic) == pytest.approx(W_GENERIC / (W_GENERIC + W_SPECIFIC))


def test_weights_are_the_feature_family_cardinalities() -> None:
    assert (W_GENERIC, W_SPECIFIC) == (len(GENERIC_KINDS), len(SPECIFIC_KINDS)) == (8, 6)
    j_min, c_min = required_bounds(0.95)
    assert j_min == pytest.approx((0.95 * 14 - 6) / 8)
    assert c_min == pytest.approx((0.95 * 14 - 8) / 6)


@settings(max_examples=200, deadline=None)
@given(
    ga=st.sets(st.sampled_from("abcde")),
    gb=st.sets(st.sampled_from("abcde")),
    ca=st.dictionaries(st.sampled_from("uvwxyz"), st.integers(1, 9)),
    cb=st.dictionaries(st.sampled_from("uvwxyz"), st.integers(1, 9)),
)
def test_similarity_matches_its_definition(
    ga: set[str], gb: set[str], ca: dict[str, int], cb: dict[str, int]
) -> None:
    jac = len(ga & gb) / len(ga | gb) if ga | gb else 1.0
    na = math.sqrt(sum(v * v for v in ca.values()))
    nb = math.sqrt(sum(v * v for v in cb.values()))
    dot = sum(ca[k] * cb.get(k, 0) for k in ca)
    cos = dot / (na * nb) if na and nb else (1.0 if not na and not nb else 0.0)
    expected = (8 * jac + 6 * cos) / 14
    got = similarity(Features.make(ga, ca), Features.make(gb, cb))
    assert got == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= got <= 1.0 + 1e-12


def test_features_of_the_anr_example() -> None:
    from tests.analysis.test_anr_parse import ANR_EXAMPLE

    features = summarize(parse_anr_text(ANR_EXAMPLE)).features
    assert features.generic == frozenset(
        {
            "cpu=idle",  # SyncWorker: utm 3 + stm 1 ticks at 100 Hz = 0.04 s
            "mem=normal",
            "isa=arm64",
            "state=Native",
            "sched=D",
            "watchdog=no",
            "deadlock=no",
            "where=app",
        }
    )
    assert dict(features.specific) == {
        "lib:libc.so": 1,
        "native:fsync": 1,
        "java:libcore.io.Linux.fsync": 1,
        "java:java.io.FileDescriptor.sync": 1,
        "proc:com.example.app": 1,
        "locks=1": 1,
        "waitfor=1": 1,
    }


def test_same_root_cause_in_two_files_has_identical_features() -> None:
    """Tids, addresses, pids, line numbers, dates and noise threads differ; features not."""
    texts = [
        synth_anr(np.random.default_rng(seed), "wam", "com.x", variant="queued_work",
                  kernel_stacks=True, cpu_noise=0.0)[0]
        for seed in (1, 2)
    ]  # fmt: skip
    assert texts[0] != texts[1]
    f1, f2 = (summarize(parse_anr_text(t)).features for t in texts)
    assert f1 == f2
    counts = Counter(dict(f1.specific))
    assert counts["java:android.app.SharedPreferencesImpl$N.run"] == 1
