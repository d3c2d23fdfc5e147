"""The UI-app catalogue: the pydantic models of ``apps/catalog/ui_apps.toml`` (view
templates, scripted interaction steps, one app's I/O and Binder habits) and its loader,
whose problems are one-line UserErrors naming the app and the key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mqoe.errors import UserError

CATALOGUE = "ui_apps.toml"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


Rect = Annotated[tuple[float, float, float, float], Field(strict=False)]


class ViewSpec(_Model):
    """A view template: ``rect`` is (left, top, right, bottom) as fractions of its
    parent's box; ``repeat`` copies stack vertically, splitting that rect's height
    (a list's rows). ``parent`` names an earlier view ("" = a root)."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    parent: str = ""
    rect: Rect = (0.0, 0.0, 1.0, 1.0)
    draws: bool = False  # paints a layer (background or content)
    opaque: bool = False  # that layer hides what is below it
    repeat: int = Field(default=1, ge=1, le=64)

    @model_validator(mode="after")
    def _rect_inside(self) -> ViewSpec:
        left, top, right, bottom = self.rect
        if not (0 <= left < right <= 1 and 0 <= top < bottom <= 1):
            raise ValueError(
                f"view {self.id!r}: rect must satisfy 0 <= l < r <= 1, 0 <= t < b <= 1"
            )
        return self


Action = Literal["fling", "open", "back", "media", "game", "idle"]


class StepSpec(_Model):
    """One scripted interaction (see ``ui_apps.toml`` for the meaning of each field)."""

    action: Action
    duration_ms: float = Field(default=0.0, ge=0)  # fling, media, game, idle
    items: int = Field(default=0, ge=0)  # fling: list items scrolled into view
    inflate_nodes: int = Field(default=0, ge=0)  # open: views inflated for the new screen
    io_pages: int = Field(default=0, ge=0)  # storage reads on the main thread, 4 KB pages
    binder_calls: int = Field(default=0, ge=0)  # synchronous calls to system_server
    binder_mcycles: float = Field(default=0.5, ge=0)  # server work per call
    anim_ms: float = Field(default=0.0, ge=0)  # open/back: transition frames after it
    fps: float = Field(default=60.0, gt=0, le=240)  # media/game: frames per second
    main_mcycles: float = Field(default=0.0, ge=0)  # extra main-thread work per frame
    render_mcycles: float = Field(default=0.0, ge=0)  # extra RenderThread work per frame
    scene_overdraw: float = Field(default=0.0, ge=0)  # game: extra full-screen paints
    decode_mcycles: float = Field(default=0.0, ge=0)  # media: decoder work per frame
    decode_fps: float = Field(default=0.0, ge=0, le=240)  # media frames/s (0: fps)
    relayout: float | None = Field(default=None, ge=0, le=1)  # share of views laid out

    @model_validator(mode="after")
    def _has_duration(self) -> StepSpec:
        if self.action in ("fling", "media", "game", "idle") and self.duration_ms <= 0:
            raise ValueError(f"a {self.action} step needs duration_ms > 0")
        return self


class UiAppSpec(_Model):
    """One app of ``ui_apps.toml``."""

    key: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    package: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
    label: str = Field(min_length=1)
    category: str = Field(min_length=1)
    group: Literal["benchmark", "open-source"]
    provenance: str = Field(min_length=10)
    workers: int = Field(default=2, ge=0, le=16)  # image-loader threads
    list_item: str = ""  # the repeated row of the main list ("" = none)
    image_mpx: float = Field(default=0.0, ge=0)  # decoded pixels per new list item
    image_io_pages: int = Field(default=0, ge=0)  # disk-cache read per item image
    # Main-thread storage reads per row bound (4 KB pages; a cursor-backed list filling
    # its window from the database while scrolling). Read once a whole page is due.
    row_io_pages: float = Field(default=0.0, ge=0)
    views: Annotated[tuple[ViewSpec, ...], Field(min_length=1, strict=False)]
    script: Annotated[tuple[StepSpec, ...], Field(min_length=1, strict=False)]

    @model_validator(mode="after")
    def _tree(self) -> UiAppSpec:
        seen: set[str] = set()
        for view in self.views:
            if view.id in seen:
                raise ValueError(f"duplicate view id {view.id!r}")
            if view.parent and view.parent not in seen:
                raise ValueError(f"view {view.id!r}: parent {view.parent!r} must come before it")
            seen.add(view.id)
        if self.list_item and self.list_item not in seen:
            raise ValueError(f"list_item {self.list_item!r} is not a view id")
        return self


def load_ui_apps(text: str | None = None) -> Mapping[str, UiAppSpec]:
    """The UI-app catalogue (``text``: a TOML document to parse instead of the packaged
    ``ui_apps.toml``), keyed by app key. Problems are one-line UserErrors."""
    if text is None:
        return _packaged()
    return _parse(text, "ui-app catalogue text")


@cache
def _packaged() -> Mapping[str, UiAppSpec]:
    path = resources.files("mqoe.apps.catalog").joinpath(CATALOGUE)
    return _parse(path.read_text(encoding="utf-8"), CATALOGUE)


def _parse(text: str, label: str) -> Mapping[str, UiAppSpec]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{label}: {exc}") from None
    apps = data.get("apps")
    if not isinstance(apps, dict) or not apps:
        raise UserError(f"{label}: expected [apps.<key>] tables")
    specs: dict[str, UiAppSpec] = {}
    for key, entry in apps.items():
        if not isinstance(entry, dict):
            raise UserError(f"{label}: apps.{key} must be a table")
        try:
            specs[key] = UiAppSpec.model_validate({"key": key, **entry})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise UserError(f"{label}: apps.{key}.{where}: {first['msg']}") from None
    return MappingProxyType(specs)


def ui_app(key: str) -> UiAppSpec:
    """One packaged app by key (UserError naming the known keys otherwise)."""
    apps = load_ui_apps()
    if key not in apps:
        raise UserError(f"unknown UI app {key!r}; available: {', '.join(sorted(apps))}")
    return apps[key]
