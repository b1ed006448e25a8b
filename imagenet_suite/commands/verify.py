"""``imagenet-suite verify DIR``: exit 0 if every file matches build_info.json and the card."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("verify", help="check a dataset folder against its build_info.json and card")
    parser.add_argument("folder", type=Path)
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.verify import verify_folder

    folder = verify_folder(args.folder)
    files = sum(len(c["files"]) for c in folder.build_info["configs"].values())
    print(f"OK {folder.name} {folder.version}: {files} files and the card match build_info.json")
    return 0
