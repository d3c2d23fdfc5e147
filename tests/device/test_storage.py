"""The I/O path: mmcqd is a real-time thread that preempts fair ones; reads block."""

from __future__ import annotations

import math

from mqoe.device.cpu import PreemptKind, ThreadState
from mqoe.device.phone import Phone
from mqoe.engine import ms, us
from tests.conftest import make_profile


def test_mmcqd_preempts_a_busy_fair_thread_for_each_request() -> None:
    profile = make_profile([(1, 1000.0, 1.0)])  # one core: nowhere else to run
    phone = Phone(profile, 1)
    hog = phone.cpu.thread("video-decoder")
    phone.cpu.run(hog, math.inf)
    reader = phone.cpu.thread("reader")
    phone.env.process(phone.storage.read(reader, pages=8))
    phone.run(ms(5))
    log = phone.cpu.preemptions.rows()
    mmcqd = phone.storage.mmcqd.tid
    assert log["preemptor_tid"] == [mmcqd]
    assert log["victim_tid"] == [hog.tid]
    assert log["kind"] == [PreemptKind.RT]
    # mmcqd's CPU per request (eMMC: 200k reference cycles = 200 µs on a 1 GHz core).
    assert phone.profile.storage.type == "emmc"
    assert log["preemptor_run_ns"] == [us(200)]
    assert reader.state_ns[ThreadState.BLOCKED_IO] > 0
    assert phone.storage.reads == 1 and phone.storage.pages_read == 8


def test_a_read_takes_the_profiles_service_time() -> None:
    phone = Phone(make_profile([(2, 1000.0, 1.0)]), 1)
    reader = phone.cpu.thread("reader")
    done: list[int] = []

    def proc():  # type: ignore[no-untyped-def]
        yield from phone.storage.read(reader, pages=4)
        done.append(phone.env.now)

    phone.env.process(proc())
    phone.run(ms(10))
    spec = phone.profile.storage
    # mmcqd's CPU (200 µs at 1 GHz), then the device's service time.
    expected = us(200) + us(spec.read_us + 3 * spec.page_us)
    assert done == [expected]


def test_request_cpu_defaults_by_storage_type_and_a_profile_value_wins() -> None:
    emmc = make_profile([(1, 1000.0, 1.0)]).storage
    assert emmc.type == "emmc" and emmc.request_cycles == 200_000
    ufs = emmc.model_copy(update={"type": "ufs"})
    assert ufs.request_cycles == 50_000
    assert emmc.model_copy(update={"cycles_per_request": 7}).request_cycles == 7
