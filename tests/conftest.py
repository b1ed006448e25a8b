"""Shared pytest fixtures: paths to the real public artifacts in ../shared/data (read in place)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; the real artifacts tests must read in place."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(f"{SHARED_DATA} is missing: tests need the shared data beside the checkout")
    return SHARED_DATA
