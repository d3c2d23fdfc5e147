"""Many synthetic ANR files (:func:`write_synth_dir`): apps drawn from a Zipf-like law,
families by weight, one random stream per file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mqoe.errors import UserError
from mqoe.generators.anr.event import FAMILY_WEIGHTS, synth_anr
from mqoe.generators.anr.vocabulary import KNOWN_APPS


def app_names(n: int) -> list[str]:
    """``n`` package names: well-known apps first, then ``com.vendorNNN.app``."""
    return [KNOWN_APPS[i] if i < len(KNOWN_APPS) else f"com.vendor{i:03d}.app" for i in range(n)]


def _write_one(args: tuple[Path, int, int, str, str]) -> dict[str, object]:
    directory, seed, index, family, app = args
    rng = np.random.default_rng([seed, index])
    text, truth = synth_anr(rng, family, app)
    path = directory / f"anr_{index:06d}.txt"
    path.write_text(text, encoding="utf-8")
    return {
        "file": str(path),
        "app": truth.app,
        "family": truth.family,
        "variant": truth.variant,
        "critical_threads": ";".join(name for _, name in truth.critical_threads),
        "deadlock": truth.deadlock,
        "watchdog": truth.watchdog,
        "wait_for_length": truth.wait_for_length,
    }


def write_synth_dir(
    directory: str | Path,
    n_events: int,
    seed: int = 0,
    *,
    n_apps: int = 40,
    zipf_a: float = 1.2,
    family_weights: dict[str, float] | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """Write ``n_events`` ANR files (``anr_NNNNNN.txt``) into ``directory``; their truth.

    Apps follow a Zipf-like law: app of rank r is drawn with probability ∝ r^−zipf_a.
    Families are drawn with ``family_weights`` (default :data:`FAMILY_WEIGHTS`);
    watchdog variants make ``system_server`` the first process. Each file has its own
    random stream (``default_rng([seed, index])``), so the output does not depend on
    ``workers``. These are test inputs, written plainly (not atomically).
    """
    if n_events < 0 or n_apps < 1:
        raise UserError("n_events must be ≥ 0 and n_apps ≥ 1")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 1 << 30])
    p_app = np.arange(1, n_apps + 1, dtype=np.float64) ** -zipf_a
    apps = app_names(n_apps)
    app_idx = rng.choice(n_apps, size=n_events, p=p_app / p_app.sum())
    weights = family_weights or FAMILY_WEIGHTS
    fams = list(weights)
    p_fam = np.array([weights[f] for f in fams], dtype=np.float64)
    fam_idx = rng.choice(len(fams), size=n_events, p=p_fam / p_fam.sum())
    jobs = [(out, seed, i, fams[fam_idx[i]], apps[app_idx[i]]) for i in range(n_events)]
    if workers > 1 and n_events >= 64:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            rows = list(pool.map(_write_one, jobs, chunksize=256))
    else:
        rows = [_write_one(job) for job in jobs]
    return pd.DataFrame(rows)
