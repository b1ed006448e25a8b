"""``imagenet_sketch``: ImageNet-Sketch, 50,889 black-and-white sketches of the 1000 ImageNet-1k classes.

Release: ``ImageNet-Sketch.zip`` (Wang et al., 2019) holding ``sketch/<wnid>/<image>.JPEG``. The
authors' link is a Google Drive file (7,593,573,012 bytes, per TFDS's checksums); the builder
downloads the copy on the Hugging Face Hub (``songweig/imagenet_sketch``) and checks it against
that size. The full 1000-class set, not the 16-class model-vs-human ``sketch`` subset.
"""

from __future__ import annotations

from imagenet_suite import classes
from imagenet_suite.core.builder import BuilderConfig
from imagenet_suite.core.sources import Source

from ._citations import IMAGENET_SKETCH, LCA_ON_THE_LINE, cite
from ._variants import ClassFolderBuilder

SKETCH_ZIP = Source(
    "sketch_zip",
    "ImageNet-Sketch.zip",
    url="https://huggingface.co/datasets/songweig/imagenet_sketch/resolve/main/data/ImageNet-Sketch.zip",
    size=7_593_573_012,
    sha256="4d3ce6b82a7c48aabf14aeac105eb533e75707f152cc858f55bfc022031a72ed",  # TFDS checksums.tsv
    instructions="Download ImageNet-Sketch.zip (7.6 GB) from https://github.com/HaohanWang/ImageNet-Sketch (Google "
    "Drive link) or the Hub mirror, and put it in --manual-dir, or put its extracted sketch/ folder there.",
)


class ImagenetSketch(ClassFolderBuilder):
    NAME = "imagenet_sketch"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: the 50,889 ImageNet-Sketch images as original bytes, 1000-way "
        "sorted-wnid labels from their folders."
    }
    CONFIGS = (BuilderConfig("default", "50,889 sketches of the 1000 classes, 1000-way label", shard_size=2000),)
    SOURCES = (SKETCH_ZIP,)
    ROOT = "sketch"
    EXPECTED_IMAGES = 50_889
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Downloaded automatically from the Hub mirror. Offline: put ImageNet-Sketch.zip "
        "(or its extracted sketch/ folder) in --manual-dir."
    )
    HOMEPAGE = "https://github.com/HaohanWang/ImageNet-Sketch"
    LICENSE = "unknown"
    CITATION = cite(IMAGENET_SKETCH, LCA_ON_THE_LINE)

    def protocol(self) -> dict:
        return {"num_classes": classes.NUM_CLASSES}
