"""The tool subcommands of the one CLI, end to end in a subprocess on real fixtures.

``patchml materialise|table2|grid``, ``perturbations grid``, ``hierarchy regenerate-imagenet1k``
(they replaced ``python -m`` entry points of the builder and library modules), hierarchy datasets
through ``build`` only (``hierarchy build`` is gone), and ``info`` naming a builder's card template.
Bad input to each of them is in ``tests/test_cli_bad_inputs.py``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from imagenet_suite.core import card
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from tests.fixtures import imagenet_layouts as fx
from tests.fixtures.patchml_sources import make_object_images
from tests.helpers import REPO_ROOT, build_val, run_cli

SMALL = {"canvas": "128", "grid": "2:64,3:64,4:64,6:42,9:32"}  # PatchML on a small canvas: fast, same algorithm


def last_line(result: subprocess.CompletedProcess) -> str:
    return result.stdout.strip().splitlines()[-1]


def shards(folder, config: str) -> dict[str, pa.Table]:
    """Each Parquet shard's table without its schema metadata (which holds the build's source fingerprint)."""
    return {p.name: pq.read_table(p).replace_schema_metadata(None) for p in sorted((folder / config).glob("*.parquet"))}


# ---------------------------------------------------------------------------------------------- patchml


@pytest.fixture(scope="module")
def patchml_val(tmp_path_factory):
    """A built imagenet_val (boxes) of PatchML's object images, and their Kaggle layout (raw files)."""
    root = tmp_path_factory.mktemp("patchml-val")
    kaggle = fx.write_kaggle_layout(root / "kaggle", make_object_images(18, seed=7))
    return build_dataset(
        "imagenet_val", root / "built", ["boxes"], options=BuildOptions(manual_dir=kaggle, progress=False)
    ), kaggle


@pytest.fixture(scope="module")
def patchml_build(patchml_val, tmp_path_factory):
    """PatchML seed 0, images + recipe, through the CLI."""
    result = run_cli(
        "build",
        "patchml",
        "--config",
        "images",
        "--config",
        "recipe",
        "--seed",
        "0",
        "--input",
        str(patchml_val[0]),
        "--option",
        f"canvas={SMALL['canvas']}",
        "--option",
        f"grid={SMALL['grid']}",
        "--shard-size",
        "8",
        "--out",
        str(tmp_path_factory.mktemp("patchml")),
        "--no-progress",
    )
    return DatasetFolder(last_line(result)).path


def test_patchml_materialise_rebuilds_the_images_config_byte_for_byte(patchml_build, patchml_val, tmp_path):
    val, kaggle = patchml_val
    for source in (["--input", str(val)], ["--manual-dir", str(kaggle), "--num-proc", "2"]):
        out = tmp_path / source[0].strip("-")
        result = run_cli(
            "patchml",
            "materialise",
            str(patchml_build),
            *source,
            "--out",
            str(out),
            "--shard-size",
            "8",
            "--no-progress",
        )
        made = DatasetFolder(last_line(result))
        assert made.path.parent == out.resolve() and made.configs == ["images"] and made.seed == 0
        ours, theirs = shards(made.path, "images"), shards(patchml_build, "images")
        assert len(ours) >= 3 and list(ours) == list(theirs), source
        assert all(ours[name].equals(theirs[name]) for name in ours), source  # every column, image bytes included
        images = [
            t.column("image").to_pylist() for t in (pa.concat_tables(ours.values()), pa.concat_tables(theirs.values()))
        ]
        assert [i["bytes"] for i in images[0]] == [i["bytes"] for i in images[1]] and len(images[0]) > 10
        assert (made.path / "images" / "examples.png").read_bytes() == (
            patchml_build / "images" / "examples.png"
        ).read_bytes()
        assert (
            made.build_info["configs"]["images"]["options"]
            == DatasetFolder(patchml_build).build_info["configs"]["recipe"]["options"]
        )


def test_patchml_table2_of_two_builds(patchml_build, patchml_val, tmp_path):
    other = last_line(
        run_cli(
            "build",
            "patchml",
            "--config",
            "recipe",
            "--seed",
            "5",
            "--input",
            str(patchml_val[0]),
            "--option",
            f"canvas={SMALL['canvas']}",
            "--option",
            f"grid={SMALL['grid']}",
            "--out",
            str(tmp_path),
            "--no-progress",
        )
    )
    result = run_cli("patchml", "table2", other, str(patchml_build))  # any order: rows come sorted by seed
    header, *rows = result.stdout.splitlines()
    assert result.stderr == ""
    counts = [
        json.loads((DatasetFolder(f).path / config / "counts.json").read_text())
        for f, config in ((patchml_build, "images"), (other, "recipe"))
    ]
    sizes = sorted({int(n) for c in counts for n in c["images_by_num_labels"]})
    assert header == ",".join(["dataset", "seed", *map(str, sizes), "total"])
    assert rows == [
        ",".join(
            [
                f"PatchML seed {c['seed']}",
                str(c["seed"]),
                *(str(c["images_by_num_labels"].get(str(n), 0)) for n in sizes),
                str(c["images"]),
            ]
        )
        for c in counts
    ]
    assert [row.split(",")[1] for row in rows] == ["0", "5"]
    single = run_cli("patchml", "table2", str(patchml_build)).stdout  # one build: its own table2.csv
    assert single == (patchml_build / "images" / "table2.csv").read_text()


def test_patchml_grid_writes_the_picture_of_a_build(patchml_build, tmp_path):
    out = tmp_path / "pictures" / "patchml.png"  # the folder is created
    result = run_cli("patchml", "grid", str(patchml_build), "--out", str(out))
    assert last_line(result) == str(out)
    assert out.read_bytes() == (patchml_build / "images" / "examples.png").read_bytes()  # the build's own picture
    one = run_cli("patchml", "grid", str(patchml_build), "--out", str(tmp_path / "one.png"), "--per-k", "1")
    assert last_line(one) == str(tmp_path / "one.png")
    small, full = Image.open(tmp_path / "one.png"), Image.open(out)
    assert small.format == "PNG" and small.size[0] == full.size[0] and small.size[1] < full.size[1]  # 1 row, not 2


# ---------------------------------------------------------------------------------------------- perturbations


@pytest.fixture(scope="module")
def photo(tmp_path_factory, val_images):
    path = tmp_path_factory.mktemp("photo") / "photo.JPEG"
    path.write_bytes(val_images[3].data)
    return path


def test_perturbations_grid_writes_a_png_of_the_right_size(photo, tmp_path):
    from imagenet_suite.perturbations.grid import HEADER, LABEL_WIDTH, save_corruption_grid

    out = tmp_path / "grid.png"
    result = run_cli(
        "perturbations",
        "grid",
        str(photo),
        str(out),
        "--corruption",
        "gaussian_noise",
        "--corruption",
        "contrast",
        "--corruption",
        "pixelate",
        "--cell",
        "48",
        "--seed",
        "3",
    )
    assert last_line(result) == str(out)
    image = Image.open(out)
    assert image.format == "PNG" and image.size == (LABEL_WIDTH + 48 * 6, HEADER + 48 * 3)  # clean + 5 severities
    with Image.open(photo) as source:  # what the library draws for the same arguments
        expected = save_corruption_grid(
            source.convert("RGB"),
            tmp_path / "library.png",
            seed=3,
            cell=48,
            corruptions=("gaussian_noise", "contrast", "pixelate"),
        )
    assert out.read_bytes() == expected.read_bytes()
    other_seed = tmp_path / "seed4.png"  # one row: gaussian_noise with other random draws
    run_cli(
        "perturbations",
        "grid",
        str(photo),
        str(other_seed),
        "--corruption",
        "gaussian_noise",
        "--cell",
        "48",
        "--seed",
        "4",
    )
    first_row = np.asarray(image.convert("RGB"))[: HEADER + 48]
    other_row = np.asarray(Image.open(other_seed).convert("RGB"))
    assert other_row.shape == first_row.shape and not np.array_equal(other_row, first_row)


def test_perturbations_grid_default_is_every_imagenet_c_corruption_but_frost(photo, tmp_path):
    from imagenet_suite.perturbations.corruptions import IMAGENET_C
    from imagenet_suite.perturbations.grid import HEADER, LABEL_WIDTH

    out = tmp_path / "deep" / "er" / "grid.png"
    run_cli("perturbations", "grid", str(photo), str(out))
    rows = len(IMAGENET_C) - 1  # no frost row without --frost-dir
    assert Image.open(out).size == (LABEL_WIDTH + 96 * 6, HEADER + 96 * rows) and out.stat().st_size <= 400_000


# ---------------------------------------------------------------------------------------------- hierarchies


def test_regenerate_imagenet1k_equals_the_shipped_csv_byte_for_byte(tmp_path):
    from imagenet_suite.hierarchies.imagenet1k import SHIPPED_NODES_CSV

    shipped = SHIPPED_NODES_CSV.read_bytes()
    out = tmp_path / "nodes" / "imagenet1k.csv"
    result = run_cli("hierarchy", "regenerate-imagenet1k", "--out", str(out))
    assert last_line(result) == str(out)
    assert out.read_bytes() == shipped and SHIPPED_NODES_CSV.read_bytes() == shipped  # the shipped copy is untouched


def test_hierarchy_build_is_gone_and_every_option_it_had_goes_through_build(val_layouts, val_images, tmp_path):
    gone = run_cli("hierarchy", "build", "kmeans", "--out", str(tmp_path), check=False)
    assert gone.returncode == 2 and "invalid choice: 'build'" in gone.stderr
    val = build_val(val_layouts, "folders", tmp_path / "val")
    rng = np.random.default_rng(0)
    outputs = tmp_path / "features.npz"
    np.savez(
        outputs,
        ids=np.asarray([im.image_id for im in val_images]),
        features=np.stack(
            [np.r_[np.full(4, 10.0 if im.label % 2 else -10.0), rng.normal(size=4)] for im in val_images]
        ).astype(np.float32),
    )
    # hierarchy build kmeans --outputs --config --split --nested --present-classes --seed --input --out --no-progress
    result = run_cli(
        "build",
        "kmeans_hierarchy",
        "--option",
        f"outputs={outputs}",
        "--option",
        "config=default",
        "--option",
        "split=validation",
        "--option",
        "nested=true",
        "--option",
        "classes=present",
        "--seed",
        "2",
        "--input",
        str(val),
        "--out",
        str(tmp_path / "k"),
        "--no-progress",
    )
    folder = DatasetFolder(last_line(result))
    options = folder.build_info["configs"]["default"]["options"]
    assert folder.seed == 2 and {k: options[k] for k in ("outputs", "config", "split", "nested", "classes")} == {
        "outputs": str(outputs),
        "config": "default",
        "split": "validation",
        "nested": True,
        "classes": "present",
    }
    assert folder.read_table(None, "classes").num_rows == len({im.label for im in val_images})
    # hierarchy build wordnet --wnids: `build wordnet_hierarchy --option wnids_file=` (tests/test_hierarchy_builders.py)


# ---------------------------------------------------------------------------------------------- info, one CLI


def test_info_names_the_card_template_a_builder_names_without_printing_it():
    """``slow_imagenet_val`` (a registered test builder) has CARD_TEMPLATE = "imagenet_val" and no cards/ file of its
    own; ``info`` names the template a build fills in, and leaves its prose to the built card."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.fixtures.slow_builder", "info", "slow_imagenet_val"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("slow_imagenet_val 1.0.0: ")
    assert result.stdout.rstrip("\n").splitlines()[-1].startswith("Card: cards/imagenet_val.md, ")
    own = run_cli("info", "imagenet_real").stdout  # a builder without CARD_TEMPLATE: its own template
    assert own.rstrip("\n").splitlines()[-1].startswith("Card: cards/imagenet_real.md, ")
    for name, out in (("imagenet_val", result.stdout), ("imagenet_real", own)):
        prose = [line for line in card.load_template(name).splitlines() if len(line) > 40 and "{{" not in line]
        assert prose and not [line for line in prose if line in out], f"{name}'s card prose is printed"


def test_no_python_m_entry_points_beside_the_cli():
    """Users run one CLI: only ``cli.py`` and the helper processes the package starts itself have a ``__main__``."""
    helpers = {
        "imagenet_suite/cli.py",
        "imagenet_suite/files.py",  # files: hashing child process
        "imagenet_suite/review/app_server.py",
        "imagenet_suite/review/db_keeper.py",
    }  # review's processes
    found = set()
    for folder in ("imagenet_suite", "builders", "hierarchies"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.If)
                    and isinstance(node.test, ast.Compare)
                    and isinstance(node.test.left, ast.Name)
                    and node.test.left.id == "__name__"
                ):
                    found.add(path.relative_to(REPO_ROOT).as_posix())
    assert found == helpers
    help_text = run_cli("--help").stdout
    assert all(f"    {command}" in help_text for command in ("patchml", "perturbations", "hierarchy"))
