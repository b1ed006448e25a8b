"""Shared pytest fixtures: paths to the real public artifacts in ../shared/data (read in place)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

_SCRATCH = Path(tempfile.mkdtemp(prefix="imagenet-suite-tests-"))

os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ["HF_DATASETS_CACHE"] = str(_SCRATCH / "hf-datasets-cache")  # never the user's cache
os.environ["IMAGENET_SUITE_CACHE"] = str(_SCRATCH / "downloads")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; the real artifacts tests must read in place."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(f"{SHARED_DATA} is missing: tests need the shared data beside the checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def val_images():
    """Twelve tiny val JPEGs (one grayscale, one CMYK) with labels and boxes."""
    from tests.fixtures.imagenet_layouts import make_val_images

    return make_val_images(12)


@pytest.fixture(scope="session")
def val_layouts(tmp_path_factory, val_images) -> dict[str, Path]:
    """The same images in the three real ImageNet-val layouts: {"tar", "kaggle", "folders"} -> manual dir."""
    from tests.fixtures import imagenet_layouts as fx

    root = tmp_path_factory.mktemp("val-layouts")
    return {
        "tar": fx.write_tar_layout(root / "tar", val_images),
        "kaggle": fx.write_kaggle_layout(root / "kaggle", val_images),
        "folders": fx.write_folders_layout(root / "folders", val_images),
    }
