"""The base of every profile model: strict, frozen, and no keys the schema does not name."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    # strict: `cores = true` or `cores = "4"` is an error, not a silent conversion. TOML
    # has inf and nan literals; no profile number means either.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
