"""Species (Hendrycks et al. 2022), as the ``popular_ood`` builder's ``species`` config reads it.

Species holds iNaturalist images of species chosen for not being in ImageNet-21k, sorted into 10
superclass folders ("700 000 images from 1316 species", Bitterwolf et al. 2023, App. B). Its only
release is a Google Drive folder (:data:`SPECIES_URL`, linked from github.com/hendrycks/anomaly-seg)
with no archive whose name, format or checksum is published, so the user downloads it and puts the
unpacked ``species/`` folder in --manual-dir. The layout is the one NINCO's review log
``all_species.csv`` names (``species/<superclass>/<species>/<file>``, e.g.
``species/amphibians/acris_gryllus/17507922.jpg``). Like every extracted release, the folder is a source
fingerprinted by the sha256 of each file it holds, recorded in ``build_info.json`` at the first build.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from imagenet_suite.core.sources import ResolvedSource, SourceResolver
from imagenet_suite.errors import InvalidSourceData, ManualFileMissing, param
from imagenet_suite.files import list_folder

from ._variants import Images

SPECIES_ROOT = "species"
SPECIES_URL = "https://drive.google.com/drive/folders/1j6l7jfGbKL5P5acwKVyktn4y8bWSTeAJ"
# The 10 superclass folders: the ones NINCO's all_species.csv names (its 400 random images cover all of them).
SUPERCLASSES = (
    "amphibians",
    "arachnids",
    "fish",
    "fungi",
    "insects",
    "mammals",
    "microorganisms",
    "mollusks",
    "plants",
    "protozoa",
)
LAYOUT = "<superclass>/<species>/<image>.jpg|jpeg|png|gif"
SPECIES_INSTRUCTIONS = (
    f"download the Google Drive folder {SPECIES_URL} (Species, Hendrycks et al. 2022; linked from "
    "github.com/hendrycks/anomaly-seg), unpack what it holds into one folder species/ laid out as "
    "species/<superclass>/<species>/<image> (the paths of NINCO's all_species.csv, e.g. "
    f"species/amphibians/acris_gryllus/17507922.jpg; superclasses {', '.join(SUPERCLASSES)}) and put species/ in "
    "--manual-dir. No sha256 is published: the first build records the folder's fingerprint (a sha256 over every "
    "file's sha256) in build_info.json."
)


def species_images(resolver: SourceResolver, pattern: str) -> tuple[Images, ResolvedSource]:
    """Every image of ``species/`` in --manual-dir (hidden files skipped), each ``id`` its path below
    ``species/`` and matching ``pattern``; the folder fingerprinted as the source ``species``.

    ManualFileMissing (with :data:`SPECIES_INSTRUCTIONS`) without the folder; InvalidSourceData naming a
    file outside the layout; SourceError for a symlink leading out of the folder.
    """
    folder = resolver.find_manual(SPECIES_ROOT)
    if folder is None or not folder.is_dir():
        raise ManualFileMissing(f"{SPECIES_ROOT}/ is not in {param('manual_dir')}: {SPECIES_INSTRUCTIONS}")
    files = [name for name in list_folder(folder) if not PurePosixPath(name).name.startswith(".")]
    bad = next((name for name in files if not re.fullmatch(pattern, name)), None)
    if bad is not None:
        raise InvalidSourceData(f"{folder}: unexpected file {bad!r} (expected {SPECIES_ROOT}/{LAYOUT})")
    if not files:
        raise InvalidSourceData(f"{folder}: no images (expected {SPECIES_ROOT}/{LAYOUT})")
    source = resolver.resolve_folder(SPECIES_ROOT, folder, files)
    return Images(folder, f"{SPECIES_ROOT}/", {name: name for name in files}, {}, None), source


def check_superclasses(ids: list[str], strict: bool, where: str) -> None:
    """With ``strict`` (``strict_counts``; no image count is published), the superclass folders must be the
    10 of :data:`SUPERCLASSES`: a partial download is refused, naming what is missing or extra."""
    found = {image_id.split("/", 1)[0] for image_id in ids}
    if strict and found != set(SUPERCLASSES):
        missing, extra = sorted(set(SUPERCLASSES) - found), sorted(found - set(SUPERCLASSES))
        problem = "; ".join(
            text
            for text in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unexpected {', '.join(extra)}" if extra else "",
            )
            if text
        )
        raise InvalidSourceData(
            f"{where}: the superclass folders are not Species' 10 ({problem}): incomplete or different copy? "
            f"pass {param('builder_options')} strict_counts=false to build it anyway"
        )
