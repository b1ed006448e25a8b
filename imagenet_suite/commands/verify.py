"""``imagenet-suite verify DIR``: exit 0 if every file matches build_info.json and the card, and every
stored image passes the structural check and pixel bound (``--deep-verify``: decodes every image)."""

from __future__ import annotations

from pathlib import Path

from .build import add_image_check_arguments


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "verify", help="check a dataset folder against its build_info.json and card, and every stored image"
    )
    parser.add_argument("folder", type=Path)
    add_image_check_arguments(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.dataset.verify import verify_folder, verify_images
    from imagenet_suite.images import ImageChecks

    folder = verify_folder(args.folder)
    images = verify_images(folder, ImageChecks(args.max_pixels, args.deep_verify), progress=not args.no_progress)
    files = sum(len(c["files"]) for c in folder.build_info["configs"].values())
    checked = " (and decoded)" if args.deep_verify else ""
    print(
        f"OK {folder.name} {folder.version}: {files} files and the card match build_info.json; {images:,} images pass "
        f"the structural check and the pixel bound{checked}"
    )
    return 0
