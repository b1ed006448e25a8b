"""imagenet_train on fixtures in the exact release layouts: the same rows from each, the original bytes,
the seeded class-stratified subset, and one-line errors for bad manual folders.

The harness (tests/test_builders.py) builds the tar layout through load_dataset, verify, two processes,
resume and its bad inputs; this file checks what is particular to the train set.
"""

from __future__ import annotations

import io
import json
import tarfile

import pyarrow.parquet as pq
import pytest

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.errors import InvalidSourceData, ManualFileMissing
from imagenet_suite.seeding import class_stratified
from tests.fixtures import imagenet_train as fx
from tests.helpers import folder_bytes, one_line, run_cli


@pytest.fixture(scope="module")
def images():
    return fx.make_train_images()


@pytest.fixture(scope="module")
def layouts(tmp_path_factory, images):
    root = tmp_path_factory.mktemp("train-layouts")
    return {
        "tar": fx.write_tar_layout(root / "tar", images),
        "kaggle": fx.write_kaggle_layout(root / "kaggle", images),
        "folders": fx.write_folders_layout(root / "folders", images),
    }


def build(manual, out, seed=0, **options):
    pins = read_pins_file(manual / "checksums.tsv") if (manual / "checksums.tsv").exists() else None
    return build_dataset(
        "imagenet_train",
        out,
        options=BuildOptions(
            manual_dir=manual, pins=pins, seed=seed, builder_options=options, shard_size=5, progress=False
        ),
    )


def table(folder):
    return pq.read_table(sorted((folder / "default").glob("*.parquet")))


def test_every_layout_yields_the_same_rows_with_the_original_bytes(layouts, images, tmp_path):
    tables = {name: table(build(manual, tmp_path / name)) for name, manual in layouts.items()}
    assert tables["tar"].equals(tables["kaggle"]) and tables["tar"].equals(tables["folders"])
    rows = tables["tar"].to_pylist()
    expected = sorted(images, key=lambda image: image.image_id)
    assert [row["id"] for row in rows] == [image.image_id for image in expected]
    for row, image in zip(rows, expected, strict=True):
        assert row["label"] == image.label and row["file_name"] == image.file_name
        assert row["image"] == {"bytes": image.data, "path": image.file_name}  # never re-encoded
    modes = {row["id"]: row["image_mode"] for row in rows}
    assert modes[images[1].image_id] == "L" and modes[images[2].image_id] == "CMYK"  # kept as released


def test_subset_is_a_seeded_class_stratified_draw_recorded_in_the_build(layouts, images, tmp_path):
    by_class = {}
    for image in images:
        by_class.setdefault(image.wnid, []).append(image.image_id)
    full = build(layouts["tar"], tmp_path / "full")
    two = build(layouts["folders"], tmp_path / "two", subset=2)
    assert "seed" not in full.name and two.name.startswith("imagenet_train-1.0.0-seed0-")
    ids = table(two).column("id").to_pylist()
    assert ids == class_stratified(by_class, 2, seed=0)
    assert sorted(len([i for i in ids if i.startswith(w)]) for w in by_class) == [2, 2, 2]
    one = table(build(layouts["tar"], tmp_path / "one", subset=1)).column("id").to_pylist()
    assert set(one) < set(ids) and len(one) == 3  # a smaller subset is nested in a larger one
    other_seed = build(layouts["tar"], tmp_path / "seed1", seed=1, subset=2)
    assert table(other_seed).column("id").to_pylist() == class_stratified(by_class, 2, seed=1)
    again = build(layouts["tar"], tmp_path / "again", subset=2)
    assert table(again).equals(table(two))  # tar and folder layouts: the same draw, the same rows
    assert folder_bytes(build(layouts["tar"], tmp_path / "twice", subset=2)) == folder_bytes(again)
    info = json.loads((two / "build_info.json").read_text())
    assert info["seed"] == 0 and info["configs"]["default"]["options"] == {"subset": 2}
    card = (two / "README.md").read_text()
    assert "6 of its 12 images: 2 per class" in card and "drawn with seed 0" in card and ", seed 0." in card
    assert json.loads((full / "build_info.json").read_text())["seed"] is None


def test_no_images_lists_every_accepted_layout(tmp_path):
    with pytest.raises(ManualFileMissing) as err:
        build(tmp_path, tmp_path / "out")
    for expected in ("ILSVRC2012_img_train.tar", "ILSVRC/Data/CLS-LOC/train/<wnid>", "train/<wnid>/<wnid>_<n>.JPEG"):
        assert expected in str(err.value)


@pytest.mark.parametrize(
    ("damage", "error", "match"),
    [
        (lambda m: (m / "LOC_synset_mapping.txt").unlink(), ManualFileMissing, "LOC_synset_mapping.txt not found"),
        (
            lambda m: (m / "ILSVRC/Data/CLS-LOC/train/n01440764/notes.txt").write_text("x"),
            InvalidSourceData,
            r"CLS-LOC/train: unexpected member 'n01440764/notes.txt' \(expected <wnid>/<wnid>_<n>.JPEG\)",
        ),
        (
            lambda m: (m / "ILSVRC/Data/CLS-LOC/train/cats").mkdir(),
            InvalidSourceData,
            r"train/cats: class folder 'cats' is not one of the 1000 ImageNet-1k wnids",
        ),
        (
            lambda m: (m / "ILSVRC/Data/CLS-LOC/train/stray.JPEG").write_bytes(b""),
            InvalidSourceData,
            r"stray.JPEG: expected only <wnid> folders",
        ),
    ],
    ids=[
        "no synset mapping",
        "a file that is not an image",
        "a folder that is not a class",
        "a file beside the classes",
    ],
)
def test_bad_kaggle_folders_are_refused_in_one_line(layouts, tmp_path, damage, error, match):
    import shutil

    manual = tmp_path / "manual"
    shutil.copytree(layouts["kaggle"], manual)
    damage(manual)
    with pytest.raises(error, match=match) as raised:
        build(manual, tmp_path / "out")
    assert error is ManualFileMissing or "\n" not in str(raised.value)  # (a missing file lists the layouts)


# -- class tars that are not what they should be: one line through the command line ---------------------------


def _with_first_class_tar(root, images, make):
    """The tar layout with the first class's tar made by ``make(wnid, members) -> (name, bytes)``, repinned."""
    first = images[0].wnid
    return fx.write_tar_layout(
        root, images, lambda wnid, members: (make if wnid == first else fx.release_class_tar)(wnid, members)
    )


def _hard_link_tar(link: str, target: str, members) -> bytes:
    """A class tar of ``members`` followed by ``link``, a hard link to ``target`` (as GNU tar stores the
    second name of one file)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for image in members:
            info = tarfile.TarInfo(image.file_name)
            info.size = len(image.data)
            tar.addfile(info, io.BytesIO(image.data))
        info = tarfile.TarInfo(link)
        info.type, info.linkname = tarfile.LNKTYPE, target
        tar.addfile(info)
    return out.getvalue()


def _build_argv(manual, out) -> list[str]:
    return ["build", "imagenet_train", "--manual-dir", str(manual), "--pins", str(manual / "checksums.tsv"),
            "--no-progress", "--out", str(out)]  # fmt: skip


def test_a_class_tar_that_is_not_a_tar_is_one_line_naming_it(images, tmp_path, capsys):
    manual = _with_first_class_tar(tmp_path / "manual", images, lambda wnid, _: (f"{wnid}.tar", b"\xff\xd8 a JPEG"))
    err = one_line(capsys, _build_argv(manual, tmp_path / "out"))
    assert err.endswith(
        f"ILSVRC2012_img_train.tar:{images[0].wnid}.tar: not a tar archive (no tar header, and not gzip, bz2 or xz "
        "compressed)"
    ), err


def test_a_hard_link_in_a_class_tar_is_read_as_its_target_never_dropped(images, tmp_path, capsys):
    """tar stores a file's second name as a hard link: the image is built under that name with the target's
    bytes, as extracting the tar gives it (it was silently left out)."""
    wnid = images[0].wnid
    members = [image for image in images if image.wnid == wnid]
    link = f"{wnid}_99999.JPEG"
    manual = _with_first_class_tar(
        tmp_path / "manual", images, lambda _, m: (f"{wnid}.tar", _hard_link_tar(link, members[0].file_name, m))
    )
    assert run_cli(*_build_argv(manual, tmp_path / "out")).returncode == 0
    folder = next((tmp_path / "out").iterdir())
    rows = {row["id"]: row for row in table(folder).to_pylist()}
    assert len(rows) == len(images) + 1
    assert rows[link[: -len(".JPEG")]]["image"]["bytes"] == members[0].data


def test_a_hard_link_to_a_member_the_tar_lacks_is_one_line_naming_both(images, tmp_path, capsys):
    wnid = images[0].wnid
    manual = _with_first_class_tar(
        tmp_path / "manual", images, lambda _, m: (f"{wnid}.tar", _hard_link_tar(f"{wnid}_99999.JPEG", "gone.JPEG", m))
    )
    err = one_line(capsys, _build_argv(manual, tmp_path / "out"))
    assert err.endswith(
        f"ILSVRC2012_img_train.tar:{wnid}.tar: member '{wnid}_99999.JPEG' is a hard link to 'gone.JPEG', which the "
        "archive does not hold before it (a damaged or hand-made tar)"
    ), err
