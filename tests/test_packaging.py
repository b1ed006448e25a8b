"""Packaging: builders/, hierarchies/ and cards/ install inside imagenet_suite, never as top-level packages."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile

from tests.helpers import REPO_ROOT

MAPPED = {
    "imagenet_suite": "imagenet_suite",
    "imagenet_suite.builders": "builders",
    "imagenet_suite.hierarchies": "hierarchies",
    "imagenet_suite.cards": "cards",
}


def _declared_packages() -> list[str]:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]


def test_every_package_folder_is_declared():
    declared = set(_declared_packages())
    for package, folder in MAPPED.items():
        for init in (REPO_ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO_ROOT / folder).parts
            assert ".".join((package, *relative)) in declared, f"{init.parent} is not in pyproject's packages"


def test_wheel_maps_top_level_folders_into_the_namespace(tmp_path):
    uv = shutil.which("uv")
    assert uv, "uv is required (pip install uv)"
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(tmp_path), str(REPO_ROOT)], check=True, capture_output=True
    )
    wheel = next(tmp_path.glob("imagenet_suite-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for expected in (
        "imagenet_suite/builders/imagenet_val.py",
        "imagenet_suite/cards/imagenet_val.md",
        "imagenet_suite/hierarchies/__init__.py",
        "imagenet_suite/cli.py",
        "imagenet_suite/reference/data/manifest.json",  # package data: the reference zoos
        "imagenet_suite/reference/data/hesse2025_table12.csv",
    ):
        assert expected in names
    assert not [n for n in names if n.startswith(("builders/", "hierarchies/", "cards/", "tests/"))]
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "imagenet-suite = imagenet_suite.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_editable_install_resolves_the_mapping_outside_the_source_tree(tmp_path):
    code = (
        "import importlib.util as u, imagenet_suite.builders.imagenet_val as m, imagenet_suite.cards as c;"
        "print(m.__file__); print(u.find_spec('builders')); print(list(c.__path__)[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == str(REPO_ROOT / "builders" / "imagenet_val.py")
    assert out[1] == "None"
    assert out[2] == str(REPO_ROOT / "cards")
