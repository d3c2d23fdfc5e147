"""Synthetic ANR trace files with known ground truth (tests, demos, benchmarks).

Modules: :mod:`.vocabulary` (text templates, from ``templates/anr.toml``),
:mod:`.scenarios` (families and variants), :mod:`.threads` (random details),
:mod:`.event` (one file), :mod:`.degraded` (other containers), :mod:`.fleet` (many files).

:func:`synth_anr` builds one event of a root-cause *family* (those the Android
responsiveness study found, MobiCom 2020) and *variant* as a structured
:class:`~mqoe.analysis.anr.model.AnrFile` — the app process first, then
``system_server`` (with idle and busy Binder threads) and sometimes ``surfaceflinger``
(native threads in the ``"name" sysTid=N`` style) — and renders it in Android's ANR
trace format (``/data/anr/traces.txt``). What varies from file to file: pids, tids,
sysTids, monitor addresses, pcs, offsets, line numbers, lambda and anonymous-class
numbers, dates (new and old styles), CPU times, noise threads and their number,
32/64-bit libraries, kernel stack lines. The truth says which threads are critical, by
construction (not by the analyser).

:func:`write_synth_dir` writes N such files with apps drawn from a Zipf-like law.

The other inputs the analyser reads, for fuzzing and round trips:
:func:`synth_xcrash_tombstone` (an event's app process as an xCrash ANR tombstone),
:func:`synth_waiting_channels` (a dump whose stack dump failed: waiting channels only,
optionally of a frozen process) and :func:`synth_native_only` (debuggerd's native-only
backtrace of an app, between two Waiting Channels twins).
"""

from mqoe.generators.anr.degraded import (
    XCRASH_VARIANTS,
    synth_native_only,
    synth_waiting_channels,
    synth_xcrash_tombstone,
)
from mqoe.generators.anr.event import FAMILY_WEIGHTS, SynthTruth, synth_anr
from mqoe.generators.anr.fleet import app_names, write_synth_dir
from mqoe.generators.anr.scenarios import FAMILY_VARIANTS, VARIANT_WEIGHTS
from mqoe.generators.anr.vocabulary import KNOWN_APPS

__all__ = [
    "FAMILY_VARIANTS",
    "FAMILY_WEIGHTS",
    "KNOWN_APPS",
    "VARIANT_WEIGHTS",
    "XCRASH_VARIANTS",
    "SynthTruth",
    "app_names",
    "synth_anr",
    "synth_native_only",
    "synth_waiting_channels",
    "synth_xcrash_tombstone",
    "write_synth_dir",
]
