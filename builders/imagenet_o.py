"""``imagenet_o``: ImageNet-O, 2,000 out-of-distribution images for ImageNet-1k models (an OOD set).

Release: ``imagenet-o.tar`` (Hendrycks et al., 2021) holding ``imagenet-o/<wnid>/<image>.jpg``. The
images come from outside ImageNet-1k and were kept because a ResNet-50 confidently classified them
as the class of their folder; the folder is therefore **not a label**. It is kept as metadata in
``filtered_against`` (a 1000-way ClassLabel), and there is no ``label`` column, so no accuracy is
ever computed on this set. ``protocol()`` says ``{"ood": true}``.
"""

from __future__ import annotations

from imagenet_suite import classes
from imagenet_suite.core.builder import BuilderConfig
from imagenet_suite.core.sources import Source

from ._citations import NATURAL_ADVERSARIAL_EXAMPLES, NINCO, cite
from ._variants import ClassFolderBuilder

IMAGENET_O_TAR = Source(
    "imagenet_o_tar",
    "imagenet-o.tar",
    url="https://people.eecs.berkeley.edu/~hendrycks/imagenet-o.tar",
    instructions="Download https://people.eecs.berkeley.edu/~hendrycks/imagenet-o.tar and put it in --manual-dir, "
    "or put its extracted imagenet-o/ folder there.",
)


class ImagenetO(ClassFolderBuilder):
    NAME = "imagenet_o"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 2,000 ImageNet-O images as original bytes; the wnid folder each "
        "was adversarially filtered against kept as `filtered_against`, not as a label."
    }
    CONFIGS = (
        BuilderConfig(
            "default", "2,000 OOD images; `filtered_against` = the ImageNet-1k class of their folder", shard_size=2000
        ),
    )
    SOURCES = (IMAGENET_O_TAR,)
    ROOT = "imagenet-o"
    EXPECTED_IMAGES = 2_000
    LABEL_COLUMN = "filtered_against"
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically. Offline: put imagenet-o.tar (or its extracted imagenet-o/ folder) in --manual-dir."
    )
    HOMEPAGE = "https://github.com/hendrycks/natural-adv-examples"
    LICENSE = "mit"
    CITATION = cite(NATURAL_ADVERSARIAL_EXAMPLES, NINCO)

    def protocol(self) -> dict:
        return {
            "ood": True,
            "in_distribution": "imagenet_1k",
            "num_classes": classes.NUM_CLASSES,
            "metadata_column": "filtered_against",
        }
