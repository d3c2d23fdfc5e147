"""Builds mqoe (metadata in pyproject.toml). The hot kernel's modules, listed in
``src/mqoe/native.py``, are compiled with mypyc when it is installed (it comes with mypy,
in the lock file) and a C compiler works; otherwise, or with ``MQOE_PURE_PYTHON=1``,
they stay interpreted — same source, same results (docs/decisions/0004-compiled-kernel.md).
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent


def compiled_extensions() -> list[Extension]:
    if os.environ.get("MQOE_PURE_PYTHON") == "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    modules = runpy.run_path(str(HERE / "src" / "mqoe" / "native.py"))["COMPILED"]
    sources = [str(Path("src", *m.split(".")).with_suffix(".py")) for m in modules]
    extensions: list[Extension] = mypycify(sources, opt_level="3", group_name="mqoe_native")
    for extension in extensions:
        extension.optional = True  # no compiler: a warning, and the modules run interpreted
    return extensions


setup(ext_modules=compiled_extensions())
