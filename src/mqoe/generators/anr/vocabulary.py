"""The text templates of the ANR generator, read from ``templates/anr.toml`` (data, not
code): stack specs, library paths, the app's noise threads and package names.

Stack specs: ``"j:fn"`` Java frame, ``"jn:fn"`` Java native method, ``"n:lib:symbol"``
native frame, ``"k:fn"`` kernel frame (``"K:fn"`` kept even in files without kernel
stacks), ``"-wait:X"`` / ``"-lock:X"`` / ``"-on:X"`` / ``"-sleep:X"`` lock lines on the
symbolic monitor X. In the data file ``"@NAME"`` splices the stack ``NAME``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any


@dataclass
class _T:
    """A thread to build: name, ART state, kernel state, CPU bucket, stack spec."""

    name: str
    state: str
    sched: str
    cpu: str
    stack: list[str]
    daemon: bool = False
    attached: bool = True  # False: a native thread written as ``"name" sysTid=N``


def _load() -> dict[str, Any]:
    """The parsed ``templates/anr.toml`` shipped with the package."""
    path = resources.files("mqoe.generators").joinpath("templates", "anr.toml")
    data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    return data


def _expand(items: list[str], stacks: dict[str, list[str]]) -> list[str]:
    """A stack spec with its ``@NAME`` splices replaced by the named stacks."""
    out: list[str] = []
    for item in items:
        out.extend(_expand(stacks[item[1:]], stacks) if item.startswith("@") else [item])
    return out


_DATA = _load()
_RAW: dict[str, list[str]] = _DATA["stacks"]
_STACKS = {name: _expand(items, _RAW) for name, items in _RAW.items()}

_START = _STACKS["START"]
IDLE_BINDER = _STACKS["IDLE_BINDER"]
LOOPER_IDLE = _STACKS["LOOPER_IDLE"]
MAIN_BOTTOM = _STACKS["MAIN_BOTTOM"]
DISPATCH = _STACKS["DISPATCH"]
MAIN_DISPATCH = _STACKS["MAIN_DISPATCH"]
ACTIVITY_H = _STACKS["ACTIVITY_H"]
HANDLER_THREAD = _STACKS["HANDLER_THREAD"]
SERVICE_THREAD = _STACKS["SERVICE_THREAD"]
POOL_BOTTOM = _STACKS["POOL_BOTTOM"]
CHOREOGRAPHER = _STACKS["CHOREOGRAPHER"]
RESUME = _STACKS["RESUME"]
BINDER_CLIENT = _STACKS["BINDER_CLIENT"]
BINDER_SERVE = _STACKS["BINDER_SERVE"]
FSYNC_KERNEL = _STACKS["FSYNC_KERNEL"]
FSYNC = _STACKS["FSYNC"]
GC_WAIT = _STACKS["GC_WAIT"]
GC_RUN = _STACKS["GC_RUN"]
RECLAIM_KERNEL = _STACKS["RECLAIM_KERNEL"]
RECYCLER = _STACKS["RECYCLER"]
_SS_MAIN = _STACKS["SS_MAIN"]

_LIBS: dict[str, str] = _DATA["libs"]
KNOWN_APPS: tuple[str, ...] = tuple(_DATA["known_apps"])
_SS_LOOPERS: tuple[str, ...] = tuple(_DATA["ss_loopers"])
_NATIVE_STACKS = tuple(_expand(stack, _RAW) for stack in _DATA["native"]["stacks"])
_NATIVE_NAMES: tuple[str, ...] = tuple(_DATA["native"]["names"])
_APP_NOISE: tuple[_T, ...] = tuple(
    _T(**{**thread, "stack": _expand(thread["stack"], _RAW)}) for thread in _DATA["app_noise"]
)
