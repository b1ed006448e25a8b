"""imagenet-suite: versioned HF datasets, hierarchies, contamination review and scoring for ImageNet."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed package's metadata on first use (PEP 562): importlib.metadata
    is slow to import, and the command line needs it only for ``--version``."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("imagenet-suite")
    except PackageNotFoundError:  # running from a source tree that is not installed
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value
