"""The base of every profile model: strict, frozen, and no keys the schema does not name."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    # strict: `cores = true` or `cores = "4"` is an error, not a silent conversion. TOML
    # has inf and nan literals; no profile number means either.
    # defer_build: a model's validator is built when it first validates, not when the
    # module is imported; the nested sections then share DeviceProfile's one build
    # (importing and loading a profile: ~0.29 → ~0.23 s on the shared test machine).
    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True
    )
