"""Every builder through the same checks (tests/builder_harness.py): build → load_dataset → verify →
two processes byte-identical → resume after a crash → bad inputs named.

Each case below states its fixture (the release's exact layout, or the built datasets it reads), the
rows each split must have — counted from the fixture, or published by the release or paper — and
its bad inputs. The builders' own test files check what is particular to each (labels, bytes,
protocols, paper numbers); this file checks what every builder promises.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import imagenet_suite.core.runner as runner
from imagenet_suite.core import registry
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.dataset.verify import verify_folder
from imagenet_suite.errors import (
    ChecksumMismatch,
    ConfigError,
    HierarchyError,
    InvalidSourceData,
    ManualFileMissing,
    SourceError,
)
from imagenet_suite.images import ImageChecks
from tests.builder_harness import (
    BadInput,
    BuilderCase,
    Sources,
    build,
    damaged,
    first_build,
    sources_of,
)
from tests.fixtures import backgrounds_challenge as bg_fx
from tests.fixtures import human_accuracy as ha_fx
from tests.fixtures import imagenet_layouts as val_fx
from tests.fixtures import imagenet_train as train_fx
from tests.fixtures import ninco_archive as ninco_fx
from tests.fixtures import popular_ood as popular_fx
from tests.fixtures import variants as fx
from tests.fixtures.patchml_sources import make_object_images, pool_size
from tests.helpers import REPO_ROOT, folder_bytes, load

TEST_DATA = REPO_ROOT / "tests" / "data"


# -- fixtures: one function per builder, laying its sources out in an empty folder -----------------------------


def _pinned(manual: Path, **options) -> Sources:
    pins = read_pins_file(manual / "checksums.tsv") if (manual / "checksums.tsv").exists() else None
    return Sources(manual, pins, options=options)


def _built_val(root: Path, images, config: str = "default") -> Path:
    """A built imagenet_val (the input of the builders that read one)."""
    manual = val_fx.write_kaggle_layout(root / "val-manual", images)
    return runner.build_dataset(
        "imagenet_val", root / "val", [config], options=BuildOptions(manual_dir=manual, progress=False)
    )


def imagenet_val_sources(root: Path) -> Sources:
    return _pinned(val_fx.write_tar_layout(root / "manual", val_fx.make_val_images(12)))


def imagenet_train_sources(root: Path) -> Sources:
    return _pinned(train_fx.write_tar_layout(root / "manual", train_fx.make_train_images()))


def _train_tar_edited(edit):
    """Bad input: the train tar with its first class tar made by ``edit(wnid, images) -> (name, bytes)``, repinned."""
    images = train_fx.make_train_images()

    def class_tar(wnid, members):
        return (edit if wnid == images[0].wnid else train_fx.release_class_tar)(wnid, members)

    return _repinned(lambda manual: train_fx.write_tar_layout(manual, images, class_tar))


def imagenet_real_sources(root: Path) -> Sources:
    manual = root / "manual"
    manual.mkdir()
    shutil.copy(TEST_DATA / "reassessed-imagenet" / "real.json", manual / "real.json")
    return Sources(manual)


def imagenet_multilabel_sources(root: Path) -> Sources:
    return _pinned(ha_fx.write_multilabel_manual_dir(root / "manual"))


def imagenet_v2_sources(root: Path) -> Sources:
    for config in fx.V2_STEMS:
        fx.write_v2(root / "manual", config, fx.v2_images(config))
    labels = fx.write_json(root / "v2-labels.json", fx.v2_multilabels(fx.v2_images("matched_frequency")))
    return _pinned(root / "manual", strict_counts=False, labels=str(labels))


def _v2_labels(edit):
    """Bad input: the V2 multi-label file as ``edit(entries)`` returns it (a JSON value, or bytes as they are)."""

    def sources(good: Sources, scratch: Path) -> Sources:
        value = edit(fx.v2_multilabels(fx.v2_images("matched_frequency")))
        path = scratch / "v2-labels.json"
        path.write_bytes(value) if isinstance(value, bytes) else fx.write_json(path, value)
        return Sources(good.manual_dir, good.pins, good.inputs, {**good.options, "labels": str(path)}, good.seed)

    return sources


def _first_entry(value):
    """An edit of the first entry of the V2 multi-label file to ``value``."""
    return lambda entries: {**entries, next(iter(entries)): value}


def imagenet_a_sources(root: Path) -> Sources:
    return _pinned(fx.write_hendrycks_tar(root / "manual", "imagenet-a", fx.imagenet_a_images()), strict_counts=False)


def imagenet_r_sources(root: Path) -> Sources:
    return _pinned(fx.write_hendrycks_tar(root / "manual", "imagenet-r", fx.imagenet_r_images()), strict_counts=False)


def imagenet_o_sources(root: Path) -> Sources:
    return _pinned(fx.write_hendrycks_tar(root / "manual", "imagenet-o", fx.imagenet_o_images()), strict_counts=False)


def imagenet_sketch_sources(root: Path) -> Sources:
    return _pinned(fx.write_sketch_zip(root / "manual", fx.sketch_images()), strict_counts=False)


C_CONTENTS = {
    ("gaussian_noise", 1): fx.c_images("gaussian_noise", 1, n=4),
    ("gaussian_noise", 3): fx.c_images("gaussian_noise", 3, n=5),
}


def imagenet_c_sources(root: Path) -> Sources:
    return _pinned(fx.write_imagenet_c(root / "manual", "noise", C_CONTENTS), strict_counts=False)


OBJECTNET_IMAGES = fx.objectnet_images()


def objectnet_sources(root: Path) -> Sources:
    return Sources(fx.write_objectnet(root / "manual", OBJECTNET_IMAGES), options={"strict_counts": False})


PATCHML_IMAGES = make_object_images(20, seed=3)
PATCHML_GRID = {"canvas": 128, "grid": "2:64,3:64,4:64,6:42,9:32"}  # the paper's layout at a quarter of the size


def patchml_sources(root: Path) -> Sources:
    return Sources(inputs=(_built_val(root, PATCHML_IMAGES, "boxes"),), options=PATCHML_GRID)


def ninco_sources(root: Path) -> Sources:
    contents = ninco_fx.fixture_contents(TEST_DATA / "ninco" / "data")
    manual = ninco_fx.write_ninco_manual_dir(root / "manual", TEST_DATA / "ninco", contents)
    return _pinned(manual)


POPULAR_VAL_IDS = [f"ILSVRC2012_val_{k:08d}" for k in (3, 1, 24235, 7, 50000, 12)]


def popular_ood_sources(root: Path) -> Sources:
    return Sources(
        popular_fx.write_openood_manual_dir(root / "manual", POPULAR_VAL_IDS), options={"strict_counts": False}
    )


def _popular_rows(config: str) -> int:
    ids = popular_fx.set_ids(config, None if config == "sun" else 6)
    return len(popular_fx.textures43(ids)) if config == "textures" else len(ids)


def _append(name: str, text: str):
    return lambda manual: (manual / name).write_text((manual / name).read_text() + text)


def _swap_first_two_indices(name: str):
    """Damage: a review log whose first two rows have each other's ``index``."""

    def damage(manual: Path) -> None:
        lines = (manual / name).read_text().splitlines(keepends=True)
        (first, rest1), (second, rest2) = (line.split(",", 1) for line in lines[1:3])
        lines[1:3] = [f"{second},{rest1}", f"{first},{rest2}"]
        (manual / name).write_text("".join(lines))

    return damage


def _imagenet_o_image_in(wnid: str):
    """Damage: OpenOOD's ImageNet-O with one more listed image, in the folder ``wnid``."""

    def damage(manual: Path) -> None:
        image = manual / "images_largescale" / "imagenet_o" / wnid / "x_0.5.JPEG"
        image.parent.mkdir()
        image.write_bytes((manual / "images_largescale/imagenet_o/n01440764/tench_0.9.JPEG").read_bytes())
        _append("benchmark_imglist/imagenet/test_imagenet_o.txt", f"imagenet_o/{wnid}/x_0.5.JPEG -1\n")(manual)

    return damage


def _image_folder(root: Path) -> Path:
    rng = np.random.default_rng(11)
    for index in range(6):
        folder = root / ("cats" if index % 2 else "dogs")
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (20 + index, 24, 3), dtype=np.uint8)).save(folder / f"{index}.png")
    return root


def ood_unit_tests_sources(root: Path) -> Sources:
    return Sources(
        _image_folder(root / "images"),
        options={"source": "image_folder", "tests": "pixel_perm,grey", "images_per_test": 3},
    )


VAL_12 = val_fx.make_val_images(12)


def perturbations_sources(root: Path) -> Sources:
    return Sources(
        inputs=(_built_val(root, VAL_12),), options={"corruptions": "gaussian_noise,contrast", "severities": "1,3"}
    )


BACKGROUNDS_IMAGES = bg_fx.release_images(("original", "mixed_same", "mixed_rand"))


def backgrounds_challenge_sources(root: Path) -> Sources:
    in_to_in9 = TEST_DATA / "backgrounds_challenge" / "in_to_in9.json"
    return _pinned(bg_fx.write_release(root / "manual", BACKGROUNDS_IMAGES, in_to_in9), strict_counts=False)


def shape_bias_sets_sources(root: Path) -> Sources:
    manual = root / "texture-vs-shape"
    shutil.copytree(TEST_DATA / "texture-vs-shape", manual)
    return Sources(manual)


def wordnet_hierarchy_sources(root: Path) -> Sources:
    return Sources()


def kmeans_hierarchy_sources(root: Path) -> Sources:
    val = _built_val(root, VAL_12)
    rng = np.random.default_rng(0)
    labels = [image.label for image in VAL_12]
    centers = {c: np.r_[np.full(4, 10.0 if c % 2 else -10.0), rng.normal(size=4)] for c in set(labels)}
    features = np.stack([centers[c] + 0.01 * rng.normal(size=8) for c in labels]).astype(np.float32)
    outputs = root / "features.npz"
    np.savez(outputs, ids=np.asarray([image.image_id for image in VAL_12], dtype=str), features=features)
    return Sources(inputs=(val,), options={"outputs": str(outputs), "classes": "present"}, seed=3)


# -- damage: bad inputs -----------------------------------------------------------------------------------------


def _remove(name: str):
    return lambda manual: (manual / name).unlink()


def _copy(name: str, to: str):
    return lambda manual: (manual / to).write_bytes((manual / name).read_bytes())


def _flip_last_byte(name: str):
    def damage(manual: Path) -> None:
        data = bytearray((manual / name).read_bytes())
        data[-100] ^= 0xFF
        (manual / name).write_bytes(bytes(data))

    return damage


def _truncate(name: str, keep: int):
    return lambda manual: (manual / name).write_bytes((manual / name).read_bytes()[:keep])


def _rewrite_tar(root: str, images, extra: list[tuple[str, bytes]]):
    """Damage: the Hendrycks tar rewritten with ``extra`` members (and its pin updated)."""

    def damage(manual: Path) -> None:
        fx.write_hendrycks_tar(manual, root, images)
        with tarfile.open(manual / f"{root}.tar", "a") as tar:
            for name, data in extra:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        fx.write_checksums(manual)

    return damage


def _sketch_with_a_broken_image(manual: Path) -> None:
    with zipfile.ZipFile(manual / "ImageNet-Sketch.zip", "a") as archive:
        archive.writestr(f"sketch/{fx.wnid(3)}/broken.JPEG", b"\xff\xd8 not a jpeg")
    fx.write_checksums(manual)


def _repinned(damage):
    """Apply ``damage`` and pin the damaged files (so the build reaches the content check)."""

    def with_pins(good: Sources, scratch: Path) -> Sources:
        copy = scratch / "manual"
        shutil.copytree(good.manual_dir, copy)
        damage(copy)
        return Sources(copy, read_pins_file(copy / "checksums.tsv"), good.inputs, good.options, good.seed)

    return with_pins


def _human_accuracy_edited(edit):
    """Damage: human_accuracy_v3.0.0.json rewritten with ``edit(content)`` applied, and repinned."""

    def damage(manual: Path) -> None:
        content = ha_fx.human_accuracy_json()
        edit(content)
        ha_fx.write_human_accuracy(manual, content)
        fx.write_checksums(manual)

    return _repinned(damage)


def _options(**changes):
    return lambda good, scratch: Sources(
        good.manual_dir, good.pins, good.inputs, {**good.options, **changes}, good.seed
    )


def _no_inputs(good: Sources, scratch: Path) -> Sources:
    return Sources(good.manual_dir, good.pins, (), good.options, good.seed)


def _bad_outputs_id(good: Sources, scratch: Path) -> Sources:
    with np.load(good.options["outputs"]) as archive:
        ids, features = archive["ids"].copy(), archive["features"]
    ids[0] = "nope"
    path = scratch / "features.npz"
    np.savez(path, ids=ids, features=features)
    return Sources(good.manual_dir, good.pins, good.inputs, {**good.options, "outputs": str(path)}, good.seed)


def _wnids_file(good: Sources, scratch: Path) -> Sources:
    path = scratch / "wnids.txt"
    path.write_text("n01440764\nn99999999\n")
    return Sources(options={"wnids_file": str(path)})


def _broken_image_in_folder(manual: Path) -> None:
    (manual / "dogs" / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")


def _backgrounds_archive(images, extra=()):
    """Damage: the Backgrounds Challenge archive rewritten with ``images`` and ``extra`` members."""
    return lambda manual: bg_fx.write_archive(manual, images, list(extra))


def _wrong_archive_pin(good: Sources, scratch: Path) -> Sources:
    pins = {**good.pins, bg_fx.ARCHIVE: {**good.pins[bg_fx.ARCHIVE], "sha256": "0" * 64}}
    return Sources(good.manual_dir, pins, good.inputs, good.options, good.seed)


def _broken_edge(manual: Path) -> None:
    victim = sorted((manual / "stimuli" / "edges").glob("*/*.png"))[0]
    victim.write_bytes(victim.read_bytes()[:40])


# -- the cases -----------------------------------------------------------------------------------------------


def _count(images, folders=None) -> int:
    return len([image for image in images if folders is None or image.folder in folders])


CASES = [
    BuilderCase(
        "imagenet_val",
        imagenet_val_sources,
        {"default": {"validation": 12}, "boxes": {"validation": 12}},
        5,
        (
            BadInput(
                "devkit missing",
                ManualFileMissing,
                r"ILSVRC2012_devkit_t12.tar.gz not found",
                _remove("ILSVRC2012_devkit_t12.tar.gz"),
            ),
            BadInput(
                "tar changed at the same size",
                ChecksumMismatch,
                r"ILSVRC2012_img_val.tar: sha256 is [0-9a-f]{64}, expected",
                _flip_last_byte("ILSVRC2012_img_val.tar"),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_train",
        imagenet_train_sources,
        {"default": {"train": sum(train_fx.PER_CLASS)}},
        5,
        (
            BadInput(
                "tar changed at the same size",
                ChecksumMismatch,
                r"ILSVRC2012_img_train.tar: sha256 is [0-9a-f]{64}, expected",
                _flip_last_byte("ILSVRC2012_img_train.tar"),
            ),
            BadInput(
                "an image of another class in a class tar",
                InvalidSourceData,
                r"ILSVRC2012_img_train.tar: unexpected member 'n01440764.tar/n01443537_7.JPEG' \(expected <wnid>.tar",
                sources=_train_tar_edited(
                    lambda wnid, images: train_fx.release_class_tar(
                        wnid, [*images, train_fx.TrainImage("n01443537_7", b"", 1)]
                    )
                ),
            ),
            BadInput(
                "a class tar that is not a class",
                InvalidSourceData,
                r"ILSVRC2012_img_train.tar:n01440765.tar: class folder 'n01440765' is not one of the 1000 ImageNet-1k wnids",
                sources=_train_tar_edited(lambda wnid, images: ("n01440765.tar", train_fx.class_tar(images))),
            ),
            BadInput(
                "a class tar cut off",
                InvalidSourceData,
                r"ILSVRC2012_img_train.tar:n01440764.tar: not a readable tar archive, or truncated",
                sources=_train_tar_edited(lambda wnid, images: (f"{wnid}.tar", train_fx.class_tar(images)[:1500])),
            ),
            BadInput(
                "a negative subset",
                ConfigError,
                r"option subset=-1: expected 0 \(every image\) or a number of images per class",
                sources=_options(subset=-1),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_real",
        imagenet_real_sources,
        {"labels": {"validation": 50_000}},
        20_000,
        (
            BadInput(
                "real.json cut short",
                ChecksumMismatch,
                r"real.json: size is 1000 bytes, expected 388478",
                _truncate("real.json", 1000),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_multilabel",
        imagenet_multilabel_sources,
        {c: {"validation": len(ha_fx.ANNOTATIONS), "imagenet_m": len(ha_fx.IMAGENET_M)} for c in ("labels", "images")},
        4,
        (
            BadInput(
                "unknown wnid",
                InvalidSourceData,
                r"human_accuracy_v3.0.0.json: initial_annots\['ILSVRC2012_val_00000001.JPEG'\]\['correct'\]: "
                r"wnid 'n99999999' is not one of the 1000 ImageNet-1k wnids",
                sources=_human_accuracy_edited(
                    lambda c: c["initial_annots"]["ILSVRC2012_val_00000001.JPEG"].update(correct=["n99999999"])
                ),
            ),
            BadInput(
                "file name not in val",
                InvalidSourceData,
                r"human_accuracy_v3.0.0.json: initial_annots names ILSVRC2012_val_00000013.JPEG \(1 such\), "
                r"which is not among the 12 validation images of ",
                sources=_human_accuracy_edited(
                    lambda c: c["initial_annots"].update({"ILSVRC2012_val_00000013.JPEG": {"correct": ["n01440764"]}})
                ),
            ),
            BadInput(
                "imagenet_m key missing",
                InvalidSourceData,
                r"human_accuracy_v3.0.0.json: key 'imagenet_m' is missing",
                sources=_human_accuracy_edited(lambda c: c.pop("imagenet_m")),
            ),
            BadInput(
                "json cut short",
                ChecksumMismatch,
                r"human_accuracy_v3.0.0.json: size is 1000 bytes, expected",
                _truncate("human_accuracy_v3.0.0.json", 1000),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_v2",
        imagenet_v2_sources,
        {**{c: {"test": len(fx.v2_images(c))} for c in fx.V2_STEMS}, fx.V2_MULTILABEL: {"test": 5}},
        2,
        (
            BadInput(
                "an archive missing",
                SourceError,
                r"imagenetv2-top-images.tar.gz is not in the cache .* offline",
                _remove("imagenetv2-top-images.tar.gz"),
            ),
            BadInput(
                "labels: a name not in the release",
                InvalidSourceData,
                r"v2-labels.json: entry '2/nope.jpeg' is not an image of ImageNetV2 MatchedFrequency \(expected "
                r"'<class folder>/<file name>' as in the release, e.g. '10/\w+.jpeg'\)",
                sources=_v2_labels(lambda entries: {**entries, "2/nope.jpeg": [2]}),
            ),
            BadInput(
                "labels: a class index out of range",
                InvalidSourceData,
                r"v2-labels.json: entry '2/\w+.jpeg' has label 1000; expected a class index 0..999 or an ImageNet-1k wnid",
                sources=_v2_labels(_first_entry([2, 1000])),
            ),
            BadInput(
                "labels: not a list",
                InvalidSourceData,
                r"v2-labels.json: entry '2/\w+.jpeg' is 2; expected a list of labels",
                sources=_v2_labels(_first_entry(2)),
            ),
            BadInput(
                "labels: a class twice",
                InvalidSourceData,
                r"v2-labels.json: entry '2/\w+.jpeg' lists class 2 \(n01484850\) twice",
                sources=_v2_labels(_first_entry([2, 2])),
            ),
            BadInput(
                "labels: one image named twice",
                InvalidSourceData,
                r"v2-labels.json: entries '2/(\w+.jpeg)' and 'n01484850/\1' name the same image",
                sources=_v2_labels(lambda e: {**e, "n01484850/" + next(iter(e)).split("/")[1]: [3]}),
            ),
            BadInput(
                "labels: a key twice",
                InvalidSourceData,
                r"v2-labels.json: entry '2/\w+.jpeg' is given twice",
                sources=_v2_labels(
                    lambda e: json.dumps(e)[:-1].encode() + b', "' + next(iter(e)).encode() + b'": [2]}'
                ),
            ),
            BadInput(
                "labels: a list, not a mapping",
                InvalidSourceData,
                r"v2-labels.json: expected a non-empty JSON object mapping image names to lists of labels, got list",
                sources=_v2_labels(lambda entries: list(entries.values())),
            ),
            BadInput(
                "labels: not JSON",
                InvalidSourceData,
                r"v2-labels.json: not valid JSON",
                sources=_v2_labels(lambda entries: b"2/a.jpeg: [2]\n"),
            ),
            BadInput(
                "labels: no file given",
                InvalidSourceData,
                r"imagenet_v2 config matched_frequency_multilabel needs builder_options labels=FILE",
                sources=lambda good, scratch: Sources(good.manual_dir, good.pins, options={"strict_counts": False}),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_a",
        imagenet_a_sources,
        {"default": {"test": len(fx.imagenet_a_images())}},
        2,
        (
            BadInput(
                "a truncated JPEG",
                InvalidSourceData,
                r"imagenet-a.tar:imagenet-a/n\d+/cut.jpg: JPEG .*truncated",
                sources=_repinned(
                    _rewrite_tar(
                        "imagenet-a",
                        fx.imagenet_a_images(),
                        [
                            (
                                f"imagenet-a/{fx.imagenet_a_images()[0].folder}/cut.jpg",
                                fx.imagenet_a_images()[0].data[:200],
                            )
                        ],
                    )
                ),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_r",
        imagenet_r_sources,
        {"default": {"test": len(fx.imagenet_r_images())}},
        2,
        (
            BadInput(
                "a folder that is no wnid",
                InvalidSourceData,
                r"imagenet-r.tar: class folder 'n99999999' is not one of the 1000",
                sources=_repinned(
                    _rewrite_tar(
                        "imagenet-r",
                        fx.imagenet_r_images(),
                        [("imagenet-r/n99999999/art_0.jpg", fx.imagenet_r_images()[0].data)],
                    )
                ),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_o",
        imagenet_o_sources,
        {"default": {"test": len(fx.imagenet_o_images())}},
        2,
        (
            BadInput(
                "tar missing", SourceError, r"imagenet-o.tar is not in the cache .* offline", _remove("imagenet-o.tar")
            ),
        ),
    ),
    BuilderCase(
        "imagenet_sketch",
        imagenet_sketch_sources,
        {"default": {"test": len(fx.sketch_images())}},
        2,
        (
            BadInput(
                "an unreadable image",
                InvalidSourceData,
                r"broken.JPEG: expected a JPEG marker at byte 2",
                sources=_repinned(_sketch_with_a_broken_image),
            ),
        ),
    ),
    BuilderCase(
        "imagenet_c",
        imagenet_c_sources,
        {f"{c}_{s}": {"test": len(images)} for (c, s), images in C_CONTENTS.items()},
        2,
        (
            BadInput(
                "noise.tar changed at the same size",
                ChecksumMismatch,
                r"noise.tar: sha256 is",
                _flip_last_byte("noise.tar"),
            ),
        ),
    ),
    BuilderCase(
        "objectnet",
        objectnet_sources,
        {"imagenet_overlap": {"test": len(OBJECTNET_IMAGES)}},
        2,
        (
            BadInput(
                "a mapping file missing",
                ManualFileMissing,
                r"mappings/folder_to_objectnet_label.json is missing",
                _remove("objectnet-1.0/mappings/folder_to_objectnet_label.json"),
            ),
        ),
    ),
    BuilderCase(
        "patchml",
        patchml_sources,
        {
            config: {"test": sum(pool_size(PATCHML_IMAGES) // k for k in (2, 3, 4, 6, 9))}
            for config in ("images", "recipe")
        },
        4,
        (
            BadInput("no imagenet_val given", ManualFileMissing, r"needs a built imagenet_val", sources=_no_inputs),
            BadInput(
                "a malformed grid option",
                ConfigError,
                r"option grid='2:64,3:x': entry '3:x' is not K:P",
                sources=_options(grid="2:64,3:x"),
            ),
        ),
    ),
    BuilderCase(
        "ninco",
        ninco_sources,
        {"popular_subsamples": {"test": 2_715}, "review_logs": {"test": 12_050}},
        1_000,
        (
            BadInput(
                "class names missing from the clone",
                InvalidSourceData,
                r"NINCO_class_names.csv' is missing",
                _remove("NINCO/data/NINCO_class_names.csv"),
            ),
        ),
    ),
    BuilderCase(
        "popular_ood",
        popular_ood_sources,
        {
            **{
                c: {"test": _popular_rows(c)}
                for c in ("inaturalist", "sun", "places", "textures", "openimage_o", "imagenet_o", "species")
            },
            "ssb_hard": {"test": _popular_rows("ssb_hard")},
            "openood_id_split": {"test": len(POPULAR_VAL_IDS)},
        },
        4,
        (
            BadInput(
                "a malformed OpenOOD list line",
                InvalidSourceData,
                r"imagenet/test_inaturalist.txt:10: 'inaturalist/images/x.jpg' expected 'inaturalist/<path> <int label>'",
                _append("benchmark_imglist/imagenet/test_inaturalist.txt", "inaturalist/images/x.jpg\n"),
            ),
            BadInput(
                "a listed image missing from the release",
                InvalidSourceData,
                r"ssb_hard: 'n12345678/n12345678_5.JPEG' is listed but missing from the release",
                _remove("images_largescale/ssb_hard/n12345678/n12345678_5.JPEG"),
            ),
            BadInput(
                "a review log whose indices are not the release's order",
                InvalidSourceData,
                r"OOD_Places_MOS.csv:2: index 54 but 'images/b_badlands_00000792.jpg' is at position 1 of the "
                r"sorted release \(not the release NINCO inspected\)",
                _swap_first_two_indices(
                    "NINCO/data/cleaning_annotations/annotations_subsampled_datasets/OOD_Places_MOS.csv"
                ),
            ),
            BadInput(
                "an ImageNet-O folder that is not an ImageNet-1k wnid",
                InvalidSourceData,
                r"imagenet_o:n00000001/x_0.5.JPEG: class folder 'n00000001' is not one of the 1000 ImageNet-1k wnids",
                _imagenet_o_image_in("n00000001"),
            ),
            BadInput(
                "a Species image outside <superclass>/<species>/<file>",
                InvalidSourceData,
                r"species: unexpected file 'fungi/loose\.jpg' \(expected species/<superclass>/<species>/<image>",
                _copy("species/fungi/amanita_muscaria/1000001.jpg", "species/fungi/loose.jpg"),
            ),
        ),
    ),
    BuilderCase(
        "ood_unit_tests",
        ood_unit_tests_sources,
        {"default": {"test": 2 * 3}},
        2,
        (
            BadInput(
                "an unreadable image in the folder",
                InvalidSourceData,
                r"broken.jpg: expected a JPEG marker at byte 2",
                _broken_image_in_folder,
            ),
        ),
    ),
    BuilderCase(
        "perturbations",
        perturbations_sources,
        {"imagenet_c_regenerated": {"validation": 12 * (2 * 2 + 1)}},
        16,
        (
            BadInput(
                "an unknown corruption",
                ConfigError,
                r"option corruptions: unknown corruption 'no_such_blur'",
                sources=_options(corruptions="no_such_blur"),
            ),
            BadInput("no input dataset", ManualFileMissing, r"needs a built imagenet_val", sources=_no_inputs),
        ),
    ),
    BuilderCase(
        "backgrounds_challenge",
        backgrounds_challenge_sources,
        {
            variant: {"validation": _count([im for im in BACKGROUNDS_IMAGES if im.variant == variant])}
            for variant in ("original", "mixed_same", "mixed_rand")
        },
        2,
        (
            BadInput(
                "an unknown class folder",
                InvalidSourceData,
                r"backgrounds_challenge_data.tar.gz: class folder '09_tree' is not one of the 9 IN-9 class folders",
                sources=_repinned(
                    _backgrounds_archive(
                        BACKGROUNDS_IMAGES, [("bg_challenge/mixed_same/val/09_tree/x.JPEG", BACKGROUNDS_IMAGES[0].data)]
                    )
                ),
            ),
            BadInput(
                "a variant folder missing",
                InvalidSourceData,
                r"the variant folder 'mixed_rand' is missing \(the archive holds bg_challenge/\['fg_mask', "
                r"'mixed_same', 'original'\]",
                sources=_repinned(
                    _backgrounds_archive([im for im in BACKGROUNDS_IMAGES if im.variant != "mixed_rand"])
                ),
            ),
            BadInput(
                "a truncated JPEG",
                InvalidSourceData,
                r"backgrounds_challenge_data.tar.gz:bg_challenge/mixed_rand/val/08_fish/cut.JPEG: JPEG .*truncated",
                sources=_repinned(
                    _backgrounds_archive(
                        BACKGROUNDS_IMAGES,
                        [("bg_challenge/mixed_rand/val/08_fish/cut.JPEG", BACKGROUNDS_IMAGES[0].data[:200])],
                    )
                ),
            ),
            BadInput(
                "the archive differs from its pinned sha256",
                ChecksumMismatch,
                r"backgrounds_challenge_data.tar.gz: sha256 is [0-9a-f]{64}, expected 0{64}",
                sources=_wrong_archive_pin,
            ),
            BadInput(
                "in_to_in9.json cut short",
                ChecksumMismatch,
                r"in_to_in9.json: size is 1000 bytes, expected 10520",
                _truncate("in_to_in9.json", 1000),
            ),
        ),
    ),
    BuilderCase(
        "shape_bias_sets",
        shape_bias_sets_sources,
        {"edge": {"test": 160}, "silhouette": {"test": 160}},
        64,
        (
            BadInput(
                "a cut PNG",
                InvalidSourceData,
                r"stimuli/edges:airplane/airplane1.png: PNG ends at byte 40",
                _broken_edge,
            ),
        ),
    ),
    BuilderCase(
        "wordnet_hierarchy",
        wordnet_hierarchy_sources,
        {"default": {"nodes": 1_372}},
        500,
        (
            BadInput(
                "a class list with an unknown wnid",
                HierarchyError,
                r"'n99999999' is not a WordNet 3.0 noun synset",
                sources=_wnids_file,
            ),
        ),
    ),
    BuilderCase(
        "kmeans_hierarchy",
        kmeans_hierarchy_sources,
        {"default": {"classes": len({im.label for im in VAL_12})}},
        4,
        (
            BadInput(
                "outputs for an id the dataset lacks",
                InvalidSourceData,
                r"features.npz: 1 id\(s\) are not in .*'nope'",
                sources=_bad_outputs_id,
            ),
        ),
    ),
]
BY_NAME = {case.builder: case for case in CASES}


@pytest.fixture()
def scratch(tmp_path_factory):
    return lambda name: tmp_path_factory.mktemp(name)


def test_every_builder_has_a_case():
    shipped = [
        name
        for name, cls in registry.all_builders().items()
        if cls.__module__.startswith(registry.BUILDERS_PACKAGE + ".")
    ]  # not test-registered extras
    assert sorted(shipped) == sorted(BY_NAME)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_builds_and_opens_with_load_dataset(case, scratch, tmp_path):
    folder = first_build(case, scratch)
    for config, splits in case.splits.items():
        for split, rows in splits.items():
            assert len(load(folder, config, split=split, cache_dir=tmp_path / "hf")) == rows, (config, split)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_verifies_every_file_and_image(case, scratch):
    verify_folder(first_build(case, scratch), ImageChecks())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_two_processes_write_the_same_bytes(case, scratch, tmp_path):
    parallel = build(case, sources_of(case, scratch), tmp_path, num_proc=2)
    assert folder_bytes(parallel) == folder_bytes(first_build(case, scratch))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_resumes_after_a_crash_to_the_same_bytes(case, scratch, tmp_path, monkeypatch):
    real_rows = runner._checked_rows

    def crash_at_the_second_shard(builder, prepared, shard):
        if shard.index == 1:
            raise RuntimeError("simulated crash")
        return real_rows(builder, prepared, shard)

    monkeypatch.setattr(runner, "_checked_rows", crash_at_the_second_shard)
    with pytest.raises(RuntimeError, match="simulated crash"):
        build(case, sources_of(case, scratch), tmp_path)
    assert not list(tmp_path.rglob("*.incomplete"))
    monkeypatch.setattr(runner, "_checked_rows", real_rows)
    resumed = build(case, sources_of(case, scratch), tmp_path)
    assert folder_bytes(resumed) == folder_bytes(first_build(case, scratch))


@pytest.mark.parametrize(
    ("case", "bad"),
    [(case, bad) for case in CASES for bad in case.bad_inputs],
    ids=lambda value: value.name if isinstance(value, BadInput) else str(value),
)
def test_bad_input_is_refused_naming_what_is_wrong(case, bad, scratch, tmp_path):
    with pytest.raises(bad.error, match=bad.match):
        build(case, damaged(case, bad, scratch), tmp_path)


def test_fixtures_are_laid_out_once_and_never_changed_by_a_bad_input(scratch):
    case = BY_NAME["imagenet_val"]
    before = folder_bytes(sources_of(case, scratch).manual_dir)
    damaged(case, case.bad_inputs[0], scratch)
    assert folder_bytes(sources_of(case, scratch).manual_dir) == before
    assert json.loads((first_build(case, scratch) / "build_info.json").read_text())["builder"] == "imagenet_val"


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
TEXT_SUFFIXES = (".txt", ".csv", ".tsv", ".json")
ARCHIVES_ONLY = (  # their --manual-dir holds release archives (tar, zip) and lists at the top level only
    "imagenet_val", "imagenet_train", "imagenet_real", "imagenet_multilabel", "imagenet_v2", "imagenet_a",
    "imagenet_r", "imagenet_o", "imagenet_sketch", "imagenet_c", "backgrounds_challenge",
)  # fmt: skip
WITHOUT = {  # what a case's --manual-dir lacks, so a test of it has nothing to damage (test_..._declared checks)
    "a --manual-dir": {"patchml", "perturbations", "wordnet_hierarchy", "kmeans_hierarchy"},  # built from inputs
    "images in a sub-folder": {*ARCHIVES_ONLY, "ninco"},  # NINCO's images are in its archive
    "other files in a sub-folder": {*ARCHIVES_ONLY, "ood_unit_tests", "shape_bias_sets"},
    "a text file that is not pinned": {*ARCHIVES_ONLY, "ood_unit_tests", "shape_bias_sets"},
}


def _cases_with(*kinds: str) -> list[BuilderCase]:
    """The cases whose --manual-dir has what ``kinds`` name (the keys of :data:`WITHOUT`)."""
    return [case for case in CASES if not any(case.builder in WITHOUT[kind] for kind in ("a --manual-dir", *kinds))]


def _subfolder_files(manual: Path, images: bool) -> list[Path]:
    """The files in a sub-folder of ``manual`` that are (``images``) or are not images."""
    return [
        path
        for path in sorted(p for p in manual.rglob("*") if p.is_file() and not p.is_symlink())
        if len(path.relative_to(manual).parts) >= 2 and (path.suffix.lower() in IMAGE_SUFFIXES) == images
    ]


def _unpinned_texts(case: BuilderCase, good: Sources, manual: Path) -> list[Path]:
    """The text files of ``manual`` (a copy of the case's --manual-dir) that no sha256 pins."""
    pinned = set(good.pins or {}) | {s.filename for s in registry.all_builders()[case.builder].SOURCES if s.sha256}
    return [
        p
        for p in sorted(manual.rglob("*"))
        if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES and p.name not in pinned and p.name != "checksums.tsv"
    ]


def test_the_cases_without_files_to_damage_are_those_declared(scratch):
    """:data:`WITHOUT` is what the fixtures hold: the tests below run on every other case."""
    found = {kind: set() for kind in WITHOUT}
    for case in CASES:
        good = sources_of(case, scratch)
        if good.manual_dir is None:
            found["a --manual-dir"].add(case.builder)
            continue
        for kind, images in (("images in a sub-folder", True), ("other files in a sub-folder", False)):
            if not _subfolder_files(good.manual_dir, images):
                found[kind].add(case.builder)
        if not _unpinned_texts(case, good, good.manual_dir):
            found["a text file that is not pinned"].add(case.builder)
    assert found == WITHOUT


def _symlinked_out(manual: Path, images: bool) -> list[Path]:
    """Every file in a sub-folder of ``manual`` that is (``images``) or is not an image, replaced by a
    symlink to a copy of it beside ``manual`` (outside it); the links made."""
    outside = manual.parent / "outside"
    links = _subfolder_files(manual, images)
    for path in links:
        target = outside / path.relative_to(manual)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        path.unlink()
        path.symlink_to(target)
    return links


SYMLINKED = [(case, "images") for case in _cases_with("images in a sub-folder")]
SYMLINKED += [(case, "other files") for case in _cases_with("other files in a sub-folder")]


@pytest.mark.parametrize(("case", "kind"), SYMLINKED, ids=[f"{case}-{kind}" for case, kind in SYMLINKED])
def test_files_symlinked_out_of_the_manual_dir_are_refused(case, kind, scratch, tmp_path):
    """docs/building.md: a symlink in --manual-dir that leads outside it is refused — for a file found by a
    walk, named by a release's own list, or read by name. Each file of the kind in a sub-folder of the
    case's --manual-dir (top-level ones go through ``find_manual``) becomes a symlink to an identical
    copy outside: the bytes are the same, only where they live differs."""
    good = sources_of(case, scratch)
    manual = tmp_path / "manual"
    shutil.copytree(good.manual_dir, manual)
    assert _symlinked_out(manual, kind == "images")
    bad = Sources(manual, good.pins, good.inputs, good.options, good.seed)
    with pytest.raises(SourceError, match=r"(is a symlink to|leads to) .*, outside .*: symlinks leaving"):
        build(case, bad, tmp_path / "out")


@pytest.mark.parametrize("case", _cases_with("a text file that is not pinned"), ids=str)
def test_text_files_that_are_not_utf8_are_named_with_their_line(case, scratch, tmp_path):
    """Every text file a build reads (lists, CSVs, JSON label files) goes through one decoder
    (``imagenet_suite.files.decode_text``): a byte that is not UTF-8 is one error naming ``file:line``,
    never a UnicodeDecodeError. Each text file of the case's --manual-dir that is not pinned (a pinned
    one fails its sha256 first) gets a Latin-1 byte at the start of its first line."""
    good = sources_of(case, scratch)
    manual = tmp_path / "manual"
    shutil.copytree(good.manual_dir, manual)
    texts = _unpinned_texts(case, good, manual)
    assert texts
    for path in texts:
        path.write_bytes(b"\xe9" + path.read_bytes())
    bad = Sources(manual, good.pins, good.inputs, good.options, good.seed)
    with pytest.raises(InvalidSourceData, match=r":1: byte 0xe9 at column 1 is not UTF-8; expected .+, UTF-8 encoded$"):
        build(case, bad, tmp_path / "out")
