"""``imagenet_r``: ImageNet-R(endition), 30,000 renditions (art, cartoons, sketches, ...) of 200 classes.

Release: ``imagenet-r.tar`` (Hendrycks et al., 2021) holding ``imagenet-r/<wnid>/<rendition>_<n>.jpg``
for the 200 classes of timm's ``imagenet_r_synsets.txt``. Rows keep the 1000-way ``label`` and the
``rendition`` parsed from the file name; the 200-class subset is ``protocol()["class_subset"]``.
"""

from __future__ import annotations

from imagenet_suite import classes
from imagenet_suite.core.builder import BuilderConfig
from imagenet_suite.core.sources import Source

from ._citations import BEYOND_ACCURACY, LCA_ON_THE_LINE, cite
from ._variants import ClassFolderBuilder

IMAGENET_R_TAR = Source(
    "imagenet_r_tar",
    "imagenet-r.tar",
    url="https://people.eecs.berkeley.edu/~hendrycks/imagenet-r.tar",
    size=2_191_079_936,
    sha256="18c6bf493b39a0d975d48e587437f562caab9c52ae6327dcfa9dd8eb54aa1b52",  # TFDS checksums.tsv
    instructions="Download https://people.eecs.berkeley.edu/~hendrycks/imagenet-r.tar (2.2 GB) and put it in "
    "--manual-dir, or put its extracted imagenet-r/ folder there.",
)


def rendition_of(image_id: str) -> str:
    """Rendition type from a file name ``<rendition>_<n>.jpg`` (``"art"``); ``""`` if it has no ``_``."""
    stem = image_id.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return stem.rsplit("_", 1)[0] if "_" in stem else ""


class ImagenetR(ClassFolderBuilder):
    NAME = "imagenet_r"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 30,000 ImageNet-R images as original bytes, 1000-way sorted-wnid "
        "labels, rendition type from the file name, the 200-class subset as protocol data."
    }
    CONFIGS = (
        BuilderConfig(
            "default", "30,000 renditions of 200 classes, 1000-way label, 200-class subset protocol", shard_size=2500
        ),
    )
    SOURCES = (IMAGENET_R_TAR,)
    ROOT = "imagenet-r"
    EXPECTED_IMAGES = 30_000
    CLASS_SUBSET = "imagenet_r"
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically. Offline: put imagenet-r.tar (or its extracted imagenet-r/ folder) in --manual-dir."
    )
    HOMEPAGE = "https://github.com/hendrycks/imagenet-r"
    LICENSE = "mit"
    CITATION = cite(
        """@inproceedings{hendrycks2021many,
  title = {The Many Faces of Robustness: A Critical Analysis of Out-of-Distribution Generalization},
  author = {Dan Hendrycks and Steven Basart and Norman Mu and Saurav Kadavath and Frank Wang and Evan Dorundo and
            Rahul Desai and Tyler Zhu and Samyak Parajuli and Mike Guo and Dawn Song and Jacob Steinhardt and Justin Gilmer},
  booktitle = {International Conference on Computer Vision (ICCV)}, year = {2021},
  eprint = {2006.16241}, archivePrefix = {arXiv}}""",
        BEYOND_ACCURACY,
        LCA_ON_THE_LINE,
    )

    def extra_features(self) -> dict:
        from datasets import Value

        return {"rendition": Value("string")}

    def extra_columns(self, image_id: str, label: int) -> dict:
        return {"rendition": rendition_of(image_id)}

    def protocol(self) -> dict:
        return {
            "class_subset": list(classes.subset_indices("imagenet_r")),
            "class_subset_name": "imagenet_r",
            "num_classes": classes.NUM_CLASSES,
        }
