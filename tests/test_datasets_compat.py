"""Built folders open with datasets 3.6 (a separate environment) as well as the installed 5.x."""

from __future__ import annotations

import shutil
import subprocess

from tests.helpers import REPO_ROOT, build_val

READER = """
import sys, datasets
assert datasets.__version__.startswith("3.6"), datasets.__version__
for config in ("default", "boxes"):
    ds = datasets.load_dataset(sys.argv[1], config, split="validation", cache_dir=sys.argv[2])
    ds = ds.cast_column("image", datasets.Image(decode=False))
    row = ds[2]
    print(config, ds.num_rows, type(ds.features["label"]).__name__, row["label"], row["image_mode"],
          len(row["image"]["bytes"]), row.get("objects", [{}])[0].get("xmin", "-"))
"""


def test_datasets_36_reads_our_parquet_and_card(val_layouts, val_images, tmp_path):
    uv = shutil.which("uv")
    assert uv, "uv is required (pip install uv)"
    folder = build_val(val_layouts, "kaggle", tmp_path / "out", configs=("default", "boxes"))
    script = tmp_path / "read36.py"
    script.write_text(READER)
    result = subprocess.run(
        [
            uv,
            "run",
            "--isolated",
            "--no-project",
            "--with",
            "datasets==3.6.0",
            "--with",
            "pillow",
            "python",
            str(script),
            str(folder),
            str(tmp_path / "cache36"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    image = val_images[2]
    lines = result.stdout.strip().splitlines()
    assert lines[0] == f"default 12 ClassLabel {image.label} CMYK {len(image.data)} -"
    assert lines[1] == f"boxes 12 ClassLabel {image.label} CMYK {len(image.data)} {image.boxes[0][0]}"
