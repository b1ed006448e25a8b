"""imagenet_c: 95 configs declared from the corruption tables, one family tar per config, bad releases."""

from __future__ import annotations

import tarfile

import pyarrow.parquet as pq
import pytest

from imagenet_suite.builders import imagenet_c
from imagenet_suite.errors import ConfigError, InvalidSourceData, SourceError
from tests.fixtures import variants as fx

NOISE = {
    ("gaussian_noise", 1): fx.c_images("gaussian_noise", 1),
    ("gaussian_noise", 3): fx.c_images("gaussian_noise", 3),
}


def _rows(folder, config):
    return pq.read_table(sorted((folder / config).glob("*.parquet"))).to_pylist()


def test_configs_cover_every_corruption_and_severity():
    names = [c.name for c in imagenet_c.ImagenetC.CONFIGS]
    assert len(names) == len(set(names)) == 95 == 19 * 5
    assert names[0] == "gaussian_noise_1"  # the default config
    assert {imagenet_c.parse_config(n) for n in names} == {(c, s) for c in imagenet_c.CORRUPTIONS for s in range(1, 6)}
    benchmark = [c for c in imagenet_c.CORRUPTIONS if imagenet_c.FAMILY_OF[c] in imagenet_c.BENCHMARK_FAMILIES]
    assert len(benchmark) == 15 and set(imagenet_c.FAMILIES["extra"]) == {
        "speckle_noise",
        "gaussian_blur",
        "spatter",
        "saturate",
    }
    assert "extra (held-out)" in imagenet_c.ImagenetC.config_named("spatter_4").description
    for bad in ("gaussian_noise_6", "gaussian_noise", "snowy_2"):
        with pytest.raises(ConfigError):
            imagenet_c.parse_config(bad)


def test_a_config_reads_only_its_corruption_and_severity(tmp_path):
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", NOISE)
    folder = fx.build("imagenet_c", manual, tmp_path / "out", ["gaussian_noise_3"])
    rows = _rows(folder, "gaussian_noise_3")
    assert [r["image"]["bytes"] for r in rows] == [im.data for im in NOISE[("gaussian_noise", 3)]]
    assert [r["val_id"] for r in rows] == [f"ILSVRC2012_val_{i:08d}" for i in (1, 2, 3)]
    assert {(r["corruption"], r["severity"]) for r in rows} == {("gaussian_noise", 3)}
    assert [r["label"] for r in rows] == [0, 1, 999]
    assert rows[0]["file_name"] == f"gaussian_noise/3/{fx.wnid(0)}/ILSVRC2012_val_00000001.JPEG"
    sources = (folder / "build_info.json").read_text()
    assert '"noise.tar"' in sources and "blur.tar" not in sources


def test_a_missing_severity_names_the_tar_and_what_it_holds(tmp_path):
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", NOISE)
    with pytest.raises(
        InvalidSourceData,
        match=r"noise.tar: no gaussian_noise/2/<wnid>/\*.JPEG members: gaussian_noise "
        r"severity 2 is missing .*\['gaussian_noise/1', 'gaussian_noise/3'\]",
    ):
        fx.build("imagenet_c", manual, tmp_path / "out", ["gaussian_noise_2"])


def test_a_missing_corruption_names_the_tar(tmp_path):
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", NOISE)
    with pytest.raises(InvalidSourceData, match=r"noise.tar: .*impulse_noise severity 1 is missing"):
        fx.build("imagenet_c", manual, tmp_path / "out", ["impulse_noise_1"])


def test_a_missing_family_tar_is_named_offline(tmp_path):
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", NOISE)
    with pytest.raises(
        SourceError,
        match=r"blur.tar is not in the cache .* offline mode is on; download "
        r"https://zenodo.org/records/2235448/files/blur.tar",
    ):
        fx.build("imagenet_c", manual, tmp_path / "out", ["motion_blur_2"], offline=True)


def test_a_truncated_member_is_named(tmp_path):
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", NOISE)
    archive = manual / "noise.tar"
    with tarfile.open(archive) as tar:
        last = tar.getmembers()[-1]  # gaussian_noise/3/...
    archive.write_bytes(archive.read_bytes()[: last.offset_data + last.size // 2])
    fx.write_checksums(manual)
    with pytest.raises(InvalidSourceData, match=r"noise.tar"):
        fx.build("imagenet_c", manual, tmp_path / "out", ["gaussian_noise_3"])


def test_a_corrupted_jpeg_member_is_named(tmp_path):
    images = list(NOISE[("gaussian_noise", 3)])
    images[1] = fx.Img(images[1].folder, images[1].file, images[1].data[:-40])
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", {("gaussian_noise", 3): images})
    with pytest.raises(
        InvalidSourceData,
        match=rf"noise.tar:gaussian_noise/3/{fx.wnid(1)}/ILSVRC2012_val_00000002.JPEG: "
        r"not a readable image, or truncated",
    ):
        fx.build("imagenet_c", manual, tmp_path / "out", ["gaussian_noise_3"])


def test_a_renamed_file_is_named(tmp_path):
    images = list(NOISE[("gaussian_noise", 1)])
    images[0] = fx.Img(images[0].folder, "val_1.JPEG", images[0].data)
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", {("gaussian_noise", 1): images})
    with pytest.raises(
        InvalidSourceData,
        match=r"member 'gaussian_noise/1/n01440764/val_1.JPEG' is not named "
        r"ILSVRC2012_val_NNNNNNNN.JPEG",
    ):
        fx.build("imagenet_c", manual, tmp_path / "out", ["gaussian_noise_1"])


def test_the_same_val_image_in_two_class_folders_is_refused(tmp_path):
    images = list(NOISE[("gaussian_noise", 1)])
    images.append(fx.Img(fx.wnid(5), images[0].file, images[0].data))
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", {("gaussian_noise", 1): images})
    with pytest.raises(InvalidSourceData, match=r"ILSVRC2012_val_00000001 appears twice"):
        fx.build("imagenet_c", manual, tmp_path / "out", ["gaussian_noise_1"])


def test_extracted_corruption_folders_give_the_same_rows(tmp_path):
    manual = fx.write_imagenet_c(tmp_path / "m", "noise", NOISE)
    extracted = fx.extract(manual / "noise.tar", tmp_path / "extracted")  # gaussian_noise/<severity>/<wnid>/...
    from_tar = fx.build("imagenet_c", manual, tmp_path / "a", ["gaussian_noise_1"])
    from_folder = fx.build("imagenet_c", extracted, tmp_path / "b", ["gaussian_noise_1"])
    assert _rows(from_tar, "gaussian_noise_1") == _rows(from_folder, "gaussian_noise_1")
