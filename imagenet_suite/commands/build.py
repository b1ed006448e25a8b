"""``imagenet-suite build NAME``: build configs into a versioned dataset folder (printed last on stdout).

The flags become one :class:`~imagenet_suite.core.options.BuildOptions` (:func:`build_options`); errors
naming its fields are printed with these flags (:mod:`._flags`).
"""

from __future__ import annotations

from pathlib import Path

from ._flags import rename


def register(subparsers) -> None:
    parser = subparsers.add_parser("build", help="build a dataset; prints the dataset folder as the last stdout line")
    parser.add_argument("name", help="builder name (see `imagenet-suite list`)")
    parser.add_argument(
        "--config",
        action="append",
        dest="configs",
        metavar="C",
        help="config to build (repeatable; default: the builder's first config)",
    )
    parser.add_argument("--out", required=True, type=Path, help="parent folder of the dataset folder")
    parser.add_argument("--seed", type=int, default=0, help="seed of seeded builders (default 0)")
    parser.add_argument("--manual-dir", type=Path, help="folder holding manually downloaded (gated) files")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="a built dataset folder this builder reads (repeatable), e.g. imagenet_val for patchml",
    )
    parser.add_argument(
        "--num-proc",
        type=int,
        default=1,
        help="worker processes; with --executor ray and no cluster, the local cluster's CPUs (output does not "
        "depend on it)",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where shards are computed: local processes (default), or Ray tasks (the `ray` extra) on the "
        "cluster at --ray-address / $RAY_ADDRESS, else on a local one; same bytes either way",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to run shards on (HOST:PORT, ray://HOST:PORT or auto; needs --executor ray); "
        "the sources must be at the same paths on every node",
    )
    parser.add_argument(
        "--option", action="append", default=[], metavar="NAME=VALUE", help="builder option (repeatable)"
    )
    parser.add_argument("--offline", action="store_true", default=None, help="never download")
    parser.add_argument("--pins", type=Path, help="checksums.tsv (file, size, sha256) overriding the builder's pins")
    parser.add_argument("--shard-size", type=int, help="examples per Parquet shard (default: the config's)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--decisions",
        type=Path,
        metavar="FILE",
        help="review decision table (`imagenet-suite review export`): build a new version with the "
        "decided rows dropped or flagged, in a folder suffixed -reviewed-<action>-<sha256[:8]>",
    )
    parser.add_argument(
        "--decision-action",
        choices=("drop", "flag"),
        default="drop",
        help="drop: remove rows decided `id` (contain an ImageNet-1k object); flag: add a "
        "`review_decision` column (default: drop)",
    )
    add_image_check_arguments(parser)
    rename(parser, out_dir="--out", inputs="--input", builder_options="--option")  # BuildOptions' names
    parser.set_defaults(func=run)


def add_image_check_arguments(parser) -> None:
    """``--max-pixels`` and ``--deep-verify`` (shared by ``build`` and ``verify``)."""
    from imagenet_suite.images import DEFAULT_MAX_PIXELS

    parser.add_argument(
        "--max-pixels",
        type=max_pixels_value,
        default=DEFAULT_MAX_PIXELS,
        metavar="N",
        help=f"refuse images with more than N pixels, width x height (default {DEFAULT_MAX_PIXELS:,}, "
        "Pillow's bound; 'none' for no bound)",
    )
    parser.add_argument(
        "--deep-verify",
        action="store_true",
        help="also decode every image (slower; catches corrupt compressed image data)",
    )


def max_pixels_value(text: str) -> int | None:
    """``--max-pixels`` value: a positive integer, or ``none``."""
    import argparse

    if text.lower() == "none":
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of pixels or 'none', got {text!r}")
    return int(text)


def parse_options(pairs: list[str]) -> dict[str, str]:
    from imagenet_suite.errors import ConfigError

    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--option {pair!r}: expected NAME=VALUE")
        options[name] = value
    return options


def review_decisions(args):
    """``--decisions FILE``: the decision table as the build's row transform (None without one)."""
    if args.decisions is None:
        return None
    from imagenet_suite.review.rebuild import ReviewApplication

    return ReviewApplication.from_file(args.decisions, args.decision_action)


def build_options(args):
    """The build's :class:`~imagenet_suite.core.options.BuildOptions`, from its flags (checked here)."""
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.core.sources import read_pins_file

    return BuildOptions(
        seed=args.seed,
        manual_dir=args.manual_dir,
        num_proc=args.num_proc,
        builder_options=parse_options(args.option),
        offline=args.offline,
        pins=read_pins_file(args.pins) if args.pins else None,
        shard_size=args.shard_size,
        inputs=args.input,
        progress=not args.no_progress,
        transform=review_decisions(args),
        max_pixels=args.max_pixels,
        deep_verify=args.deep_verify,
        executor=args.executor,
        ray_address=args.ray_address,
    )


def run(args) -> int:
    from imagenet_suite.core import registry

    options = build_options(args)
    # the builder, its configs and options checked before the runner (Parquet, progress bars) is imported:
    # a misspelt name fails at once
    registry.builders(
        args.name, args.configs, seed=options.seed, options=options.builder_options, shard_size=options.shard_size
    )
    from imagenet_suite.core.runner import build_dataset

    folder = build_dataset(args.name, args.out, args.configs, options)
    print(folder.resolve())
    return 0
