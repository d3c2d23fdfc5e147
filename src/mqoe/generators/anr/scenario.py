"""What a scenario of the ANR generator is made of: the threads of the app and of
``system_server`` (:class:`_Scenario`), built from a per-file context (:class:`_Ctx`)."""

from __future__ import annotations

from dataclasses import dataclass

from mqoe.generators.anr.threads import _Gen
from mqoe.generators.anr.vocabulary import _T


@dataclass
class _Scenario:
    app_threads: list[_T]  # main first
    ss_threads: list[_T]
    critical: list[tuple[str, str]]  # ("app" | "ss", thread name)
    wait_for_length: int
    lock_types: dict[str, str]
    deadlock: bool = False
    watchdog: str | None = None  # the watchdog line: then system_server comes first


@dataclass(frozen=True)
class _Ctx:
    """What every scenario builder draws on: the app, the file's random details, and a few
    per-file choices (lambda and anonymous-class numbers, the serving Binder thread)."""

    a: str  # the app package
    g: _Gen
    lam: str
    anon: str
    ss_binder: str
    fsync_k: list[str]  # fsync kernel frames, when this file has kernel stacks


OBJ = "java.lang.Object"
