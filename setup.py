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


def draws_extension() -> list[Extension]:
    """``mqoe.engine._draws``: scalar draws through numpy's own C distributions
    (``numpy/random/lib/libnpyrandom.a``, which numpy ships for such extensions); see
    ``src/mqoe/engine/draws.py``. Optional like the rest: without it, the same draws
    come from numpy's Generator methods."""
    if os.environ.get("MQOE_PURE_PYTHON") == "1":
        return []
    try:
        import numpy
    except ImportError:  # an isolated build without numpy: the Python fallback
        return []
    library = Path(numpy.__file__).parent / "random" / "lib"
    if not (library / "libnpyrandom.a").exists():
        return []
    return [
        Extension(
            "mqoe.engine._draws",
            ["src/mqoe/engine/_draws.c"],
            include_dirs=[numpy.get_include()],
            library_dirs=[str(library)],
            libraries=["npyrandom", "m"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]


setup(ext_modules=compiled_extensions() + draws_extension())
