"""``imagenet-suite perturbations grid IMAGE OUT.png``: one image under every corruption and severity.

Rows: the corruptions (the 15 of ImageNet-C by default; ``frost`` only with ``--frost-dir``);
columns: clean and severities 1..5; each cell is the 224x224 crop ImageNet-C corrupts, drawn with the
same seeded corruptions the ``perturbations`` builder stores. The documentation's
``docs/images/perturbations_grid.png`` is ``imagenet-suite perturbations grid IMAGE docs/images/perturbations_grid.png
--frost-dir FROST``. Prints the PNG's path. The drawing lives in :mod:`imagenet_suite.perturbations.grid`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

FLAVORS = ("imagenet_c", "imagecorruptions")  # = corruptions.FLAVORS (not imported, so --help stays light)
CELL_RANGE = (16, 224)  # px; 224 is the corrupted crop itself


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "perturbations",
        help="corruption tools: a picture of one image under every corruption and severity",
        description="Tools around the corruptions of the `perturbations` builder.",
    )
    commands = parser.add_subparsers(dest="perturbations_command", required=True, metavar="SUBCOMMAND")
    grid = commands.add_parser(
        "grid",
        help="draw one image under every corruption and severity (PNG)",
        description="Draw one image (its 224x224 center crop) under every corruption "
        "(rows) and severity (columns: clean, 1..5) as a PNG; prints its path.",
    )
    grid.add_argument("image", type=Path, metavar="IMAGE", help="any image file Pillow reads (JPEG, PNG, ...)")
    grid.add_argument("out", type=Path, metavar="OUT.png", help="picture to write")
    grid.add_argument(
        "--frost-dir",
        type=Path,
        metavar="DIR",
        help="folder with frost1.png ... frost6.jpg (imagecorruptions' pictures); else no frost row",
    )
    grid.add_argument(
        "--corruption",
        action="append",
        dest="corruptions",
        metavar="NAME",
        help="corruption to draw (repeatable, in this order; default: the 15 ImageNet-C ones)",
    )
    grid.add_argument("--seed", type=int, default=0, help="seed of the corruptions' random draws (default 0)")
    grid.add_argument(
        "--flavor",
        choices=FLAVORS,
        default="imagenet_c",
        help="constants of make_imagenet_c.py or of imagecorruptions (default imagenet_c)",
    )
    grid.add_argument(
        "--cell",
        type=cell_size,
        default=96,
        metavar="PX",
        help=f"side of each cell in pixels, {CELL_RANGE[0]}..{CELL_RANGE[1]} (default 96)",
    )
    grid.set_defaults(func=run_grid)


def cell_size(text: str) -> int:
    low, high = CELL_RANGE
    if not text.isdigit() or not low <= int(text) <= high:
        raise argparse.ArgumentTypeError(f"expected a whole number of pixels in {low}..{high}, got {text!r}")
    return int(text)


def run_grid(args: argparse.Namespace) -> int:
    from imagenet_suite.errors import ConfigError, ImagenetSuiteError
    from imagenet_suite.perturbations import corruptions as C
    from imagenet_suite.perturbations.grid import save_corruption_grid

    names = tuple(args.corruptions or C.IMAGENET_C)
    unknown = [n for n in names if n not in C.CORRUPTIONS]
    if unknown:
        raise ConfigError(f"--corruption {unknown[0]}: unknown; expected one of {sorted(C.CORRUPTIONS)}")
    if "frost" in names and args.corruptions and not args.frost_dir:
        raise ConfigError("--corruption frost needs --frost-dir DIR (frost1.png ... frost6.jpg)")
    frost = ()
    if args.frost_dir:
        missing = [name for name in C.FROST_FILES if not (args.frost_dir / name).is_file()]
        if missing:
            raise ConfigError(
                f"--frost-dir {args.frost_dir}: {missing[0]} is missing (expected {', '.join(C.FROST_FILES)})"
            )
        frost = C.load_frost_pictures([args.frost_dir / name for name in C.FROST_FILES])
    image = read_image(args.image)
    try:
        path = save_corruption_grid(
            image,
            args.out,
            corruptions=names,
            seed=args.seed,
            context=C.Context(args.flavor, frost),
            cell=args.cell,
            max_bytes=max_png_bytes(args.cell, len(names)),
        )
    except ValueError as err:  # the PNG stays over the size bound even at 64 colours (a very noisy image)
        if isinstance(err, ImagenetSuiteError) or "even at 64 colours" not in str(err):
            raise
        raise ConfigError(f"{err} (--cell {args.cell})") from err
    print(path)
    return 0


def max_png_bytes(cell: int, rows: int) -> int:
    """The documentation picture's bound (400 kB) for the default cell; larger cells get room in proportion."""
    return max(400_000, 400_000 * cell * cell * rows // (96 * 96 * 15))


def read_image(path: Path):
    """The image at ``path`` as RGB; one line naming the file when Pillow cannot read it."""
    from PIL import Image, UnidentifiedImageError

    from imagenet_suite.errors import InvalidSourceData

    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError) as err:
        raise InvalidSourceData(f"{path}: not a readable image ({type(err).__name__}: {err})") from err
    except (OSError, SyntaxError, ValueError) as err:  # truncated or corrupt data found while decoding
        if isinstance(err, OSError) and err.filename is not None:
            raise  # the file itself (missing, a folder, unreadable): the CLI names it
        raise InvalidSourceData(f"{path}: not a readable image ({type(err).__name__}: {err})") from err
