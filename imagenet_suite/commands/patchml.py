"""``imagenet-suite patchml materialise|table2|grid``: tools around PatchML builds.

* ``patchml materialise RECIPE --input VAL --out OUT`` rebuilds the ``images`` config from a ``recipe``
  build and the val source (a built ``imagenet_val`` with ``boxes``, or raw files with
  ``--manual-dir``), with the recipe's seed and options; prints the dataset folder as the last line;
* ``patchml table2 DIR...`` prints the paper's Table 2 (images per number of labels) of several
  builds, e.g. the five seeds, as CSV;
* ``patchml grid DIR --out PNG`` writes a picture of the first composites of each k of a built
  ``images`` config (the documentation's ``docs/images/patchml_grid.png``); prints the PNG's path.

The logic lives in :mod:`imagenet_suite.builders.patchml`; this module only parses arguments.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from ._flags import rename
from .build import add_image_check_arguments

EXAMPLES_PER_K = 2  # = imagenet_suite.builders.patchml.EXAMPLES_PER_K (not imported, so --help stays light)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "patchml",
        help="PatchML tools: materialise a recipe, Table 2 of several seeds, a picture of a build",
        description="Tools around PatchML builds (`imagenet-suite build patchml` builds them).",
    )
    commands = parser.add_subparsers(dest="patchml_command", required=True, metavar="SUBCOMMAND")

    mat = commands.add_parser(
        "materialise",
        help="rebuild the images config from a recipe build and the val images (prints the dataset folder last)",
        description="Rebuild the `images` config from a `recipe` build and the val source, with "
        "the recipe's seed and options. Every recipe patch is checked against the "
        "val boxes; the rows and image bytes equal a build from the seed.",
    )
    mat.add_argument("recipe", type=Path, metavar="RECIPE", help="a patchml folder with the recipe config")
    mat.add_argument("--out", type=Path, required=True, help="parent folder of the dataset folder")
    mat.add_argument("--input", type=Path, metavar="VAL", help="built imagenet_val folder with the boxes config")
    mat.add_argument(
        "--manual-dir", type=Path, metavar="DIR", help="raw val files instead (any imagenet_val layout with boxes)"
    )
    mat.add_argument(
        "--pins", type=Path, metavar="FILE", help="checksums.tsv (file, size, sha256) for the raw val files"
    )
    mat.add_argument(
        "--num-proc", type=int, default=1, metavar="N", help="worker processes (output does not depend on it)"
    )
    mat.add_argument("--shard-size", type=int, metavar="N", help="examples per Parquet shard (default: the config's)")
    mat.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_image_check_arguments(mat)
    rename(mat, out_dir="--out", inputs="--input")
    mat.set_defaults(func=run_materialise)

    table = commands.add_parser(
        "table2",
        help="Table 2 (images per number of labels) of several builds, as CSV",
        description="The paper's Table 2 of several patchml builds (e.g. the five seeds), "
        "one row per seed, read from each build's counts.json; CSV on stdout.",
    )
    table.add_argument("folders", type=Path, nargs="+", metavar="DIR", help="patchml dataset folders")
    table.set_defaults(func=run_table2)

    grid = commands.add_parser(
        "grid",
        help="picture of the first composites of each k of a build (PNG)",
        description="A PNG of the first composites of each k of a built `images` config, "
        "titled with their labels; prints the PNG's path.",
    )
    grid.add_argument("folder", type=Path, metavar="DIR", help="a patchml folder with the images config")
    grid.add_argument("--out", type=Path, required=True, metavar="PNG", help="picture to write")
    grid.add_argument(
        "--per-k",
        type=positive_int,
        default=EXAMPLES_PER_K,
        metavar="N",
        help=f"composites of each k (default {EXAMPLES_PER_K})",
    )
    grid.set_defaults(func=run_grid)

    predictions = commands.add_parser(
        "predictions",
        help="Anzaku et al. 2024 Fig. 8: composites and a model's top predictions (PNG)",
        description="The first composites with N ground-truth labels of a built `images` config, each beside "
        "the model's most probable classes from its outputs file (red: not a ground-truth label), as Anzaku et "
        "al. 2024's Fig. 8; prints the PNG's path.",
    )
    predictions.add_argument("folder", type=Path, metavar="DIR", help="a patchml folder with the images config")
    predictions.add_argument("--outputs", type=Path, required=True, metavar="FILE",
                             help="the model's outputs on it (predict's file, or a run's outputs/patchml*.pt)")  # fmt: skip
    predictions.add_argument("--out", type=Path, required=True, metavar="PNG", help="picture to write")
    predictions.add_argument("--labels", type=positive_int, default=9, metavar="N",
                             help="composites with N ground-truth labels (default 9, the paper's)")  # fmt: skip
    predictions.add_argument("--examples", type=positive_int, default=4, metavar="N",
                             help="composites drawn (default 4, at most 100)")  # fmt: skip
    predictions.set_defaults(func=run_predictions)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def run_materialise(args: argparse.Namespace) -> int:
    from imagenet_suite.builders.patchml import materialise
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.sources import read_pins_file
    from imagenet_suite.errors import ConfigError

    if args.input is None and args.manual_dir is None:
        raise ConfigError(
            "give the val images: --input VAL (a built imagenet_val with the boxes config) or "
            "--manual-dir DIR (raw val files with boxes)"
        )
    options = BuildOptions(
        manual_dir=args.manual_dir,
        num_proc=args.num_proc,
        progress=not args.no_progress,
        pins=read_pins_file(args.pins) if args.pins else None,
        shard_size=args.shard_size,
        max_pixels=args.max_pixels,
        deep_verify=args.deep_verify,
    )
    folder = materialise(args.recipe, args.out, val_dir=args.input, options=options)
    print(folder.resolve())
    return 0


def run_table2(args: argparse.Namespace) -> int:
    from imagenet_suite.builders.patchml import table2

    sys.stdout.write(table2(args.folders))
    return 0


def run_predictions(args: argparse.Namespace) -> int:
    from imagenet_suite.files import atomic_write_bytes
    from imagenet_suite.scoring.presentation.figures.anzaku2024_examples import examples_plot, prediction_examples

    found = prediction_examples(args.folder, args.outputs, labels=args.labels, examples=args.examples)
    buffer = io.BytesIO()
    examples_plot(found).savefig(buffer, format="png", dpi=100)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.out, buffer.getvalue())
    print(args.out)
    return 0


def run_grid(args: argparse.Namespace) -> int:
    from imagenet_suite.builders.patchml import grid_of_folder
    from imagenet_suite.files import atomic_write_bytes

    data = grid_of_folder(args.folder, args.per_k)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.out, data)
    print(args.out)
    return 0
