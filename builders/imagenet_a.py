"""``imagenet_a``: ImageNet-A, 7,500 natural adversarial examples of 200 ImageNet-1k classes.

Release: ``imagenet-a.tar`` (Hendrycks et al., 2021) holding ``imagenet-a/<wnid>/<image>.jpg`` for the
200 classes of timm's ``imagenet_a_synsets.txt`` (and ``imagenet-a/README.txt``). Rows keep the
1000-way ``label``; the 200-class subset the scorer restricts the logits to is published as
``protocol()["class_subset"]`` (sorted 1000-way indices).
"""

from __future__ import annotations

from imagenet_suite import classes
from imagenet_suite.core.builder import BuilderConfig
from imagenet_suite.core.sources import Source

from ._citations import LCA_ON_THE_LINE, NATURAL_ADVERSARIAL_EXAMPLES, cite
from ._variants import ClassFolderBuilder

IMAGENET_A_TAR = Source(
    "imagenet_a_tar",
    "imagenet-a.tar",
    url="https://people.eecs.berkeley.edu/~hendrycks/imagenet-a.tar",
    size=687_552_512,
    sha256="3bb3632277e6ba6392ea64c02ddbf4dd2266c9caffd6bc09c9656d28f012589e",  # TFDS checksums.tsv
    instructions="Download https://people.eecs.berkeley.edu/~hendrycks/imagenet-a.tar (688 MB) and put it in "
    "--manual-dir, or put its extracted imagenet-a/ folder there.",
)


class ImagenetA(ClassFolderBuilder):
    NAME = "imagenet_a"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 7,500 ImageNet-A images as original bytes, 1000-way sorted-wnid "
        "labels, the 200-class subset published as protocol data."
    }
    CONFIGS = (
        BuilderConfig(
            "default", "7,500 images of 200 classes, 1000-way label, 200-class subset protocol", shard_size=2500
        ),
    )
    SOURCES = (IMAGENET_A_TAR,)
    ROOT = "imagenet-a"
    EXPECTED_IMAGES = 7_500
    CLASS_SUBSET = "imagenet_a"
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically. Offline: put imagenet-a.tar (or its extracted imagenet-a/ folder) in --manual-dir."
    )
    HOMEPAGE = "https://github.com/hendrycks/natural-adv-examples"
    LICENSE = "mit"
    CITATION = cite(NATURAL_ADVERSARIAL_EXAMPLES, LCA_ON_THE_LINE)

    def protocol(self) -> dict:
        return {
            "class_subset": list(classes.subset_indices("imagenet_a")),
            "class_subset_name": "imagenet_a",
            "num_classes": classes.NUM_CLASSES,
        }
