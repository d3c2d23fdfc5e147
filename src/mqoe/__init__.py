"""mqoe: a virtual smartphone for mobile quality-of-experience research."""

from __future__ import annotations

__all__ = ["__version__"]

__version__: str  # read from the installed package's metadata when first asked (below)


def __getattr__(name: str) -> str:
    # importlib.metadata costs ~50 ms to import and a scan of sys.path to answer, which
    # every command line process would pay; most never ask for the version.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mqoe")
    except PackageNotFoundError:  # running from a source tree without an install
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
