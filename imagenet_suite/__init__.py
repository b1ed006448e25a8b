"""imagenet-suite: versioned HF datasets, hierarchies, contamination review and scoring for ImageNet."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("imagenet-suite")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
