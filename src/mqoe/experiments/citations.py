"""The works mqoe reproduces, cited once: what ``comparison.md``/``.csv`` name as the
source of a published value, figure legends, summaries and the documentation.

Each citation is the ``[citation]`` table of the work's file in
:mod:`mqoe.experiments.published` (``published/<work>.toml``). Only what is certain is
given: where an author list or a title is not stated, the file omits it and the
citation says what the work is instead of inventing one.
"""

from __future__ import annotations

from mqoe.experiments.published import Citation, citation, works

__all__ = ["CITATIONS", "Citation"]

CITATIONS: dict[str, Citation] = {work: citation(work) for work in works()}
