"""verify catches any flipped byte; push does everything up to the network; the CLI contract."""

from __future__ import annotations

import json
import shutil

import pytest

from imagenet_suite.dataset.verify import verify_folder
from imagenet_suite.errors import DatasetFolderError
from tests.helpers import build_val, run_cli


@pytest.fixture(scope="module")
def folder(val_layouts, tmp_path_factory):
    return build_val(val_layouts, "kaggle", tmp_path_factory.mktemp("v"), configs=("default", "boxes"), shard_size=5)


def test_verify_accepts_a_fresh_build(folder):
    result = run_cli("verify", str(folder), "--deep-verify")
    assert result.returncode == 0 and "OK imagenet_val 1.0.0" in result.stdout
    assert "24 images pass the structural check and the pixel bound (and decoded)" in result.stdout  # 12 x 2 configs


def test_verify_catches_a_flipped_byte_in_every_file(folder, tmp_path):
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    assert len(files) >= 8
    for target in files:
        size = target.stat().st_size
        for position in (0, size // 3, size // 2, size - 2):
            copy = tmp_path / "copy"
            shutil.copytree(folder, copy)
            victim = copy / target.relative_to(folder)
            data = bytearray(victim.read_bytes())
            data[position] ^= 0x01
            victim.write_bytes(bytes(data))
            with pytest.raises(DatasetFolderError) as err:
                verify_folder(copy)
            assert target.name in str(err.value), (target.name, position, str(err.value))
            shutil.rmtree(copy)
    corrupt = tmp_path / "cli"
    shutil.copytree(folder, corrupt)
    shard = next((corrupt / "boxes").glob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-1] + b"\x00")
    result = run_cli("verify", str(corrupt), check=False)
    assert result.returncode == 2 and shard.name in result.stderr and "Traceback" not in result.stderr


def test_verify_catches_a_stray_shard_and_a_wrong_card_count(folder, tmp_path):
    copy = tmp_path / "c"
    shutil.copytree(folder, copy)
    shutil.copy(next((copy / "default").glob("*.parquet")), copy / "default" / "validation-00009-of-00009.parquet")
    with pytest.raises(DatasetFolderError, match="validation-00009-of-00009.parquet: not listed"):
        verify_folder(copy)


def test_the_cards_front_matter_reads_as_yaml_safe_load_reads_it(folder):
    """verify's faster loader (libyaml's, where PyYAML has it) gives the split sizes of PyYAML's own safe loader."""
    import yaml

    from imagenet_suite.dataset import verify

    text = (folder / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(text[4 : text.index("\n---", 4)])
    expected = {
        (info["config_name"], s["name"]): s["num_examples"] for info in meta["dataset_info"] for s in info["splits"]
    }
    assert (
        verify._card_split_sizes(folder / "README.md")
        == expected
        == {("boxes", "validation"): 12, ("default", "validation"): 12}
    )
    assert verify._SAFE_LOADER is (yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)


def test_verify_refuses_a_folder_that_is_not_a_dataset(tmp_path):
    result = run_cli("verify", str(tmp_path), check=False)
    assert result.returncode == 2 and "build_info.json is missing" in result.stderr and "Traceback" not in result.stderr


class FakeHub:
    """Records the HfApi calls push would make; the Hub itself is unreachable here."""

    def __init__(self, existing: dict[str, bool] | None = None):
        self.calls = []
        self.existing = existing or {}  # repo id -> private

    def repo_info(self, repo_id, **kwargs):
        from types import SimpleNamespace

        from huggingface_hub.errors import RepositoryNotFoundError

        self.calls.append(("repo_info", repo_id, kwargs))
        if repo_id not in self.existing:
            import httpx

            request = httpx.Request("GET", f"https://huggingface.co/api/datasets/{repo_id}")
            raise RepositoryNotFoundError(f"404: {repo_id}", response=httpx.Response(404, request=request))
        return SimpleNamespace(id=repo_id, private=self.existing[repo_id])

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs))
        return "https://huggingface.co/datasets/x/y/commit/abc"

    def create_tag(self, repo_id, **kwargs):
        self.calls.append(("create_tag", repo_id, kwargs))


def test_push_uploads_listed_files_private_and_tags_version(folder):
    from imagenet_suite.dataset.hub import push_folder

    hub = FakeHub()
    push_folder(folder, "org/imagenet-val", api=hub)
    (_, _info_repo, _), (_, repo, repo_kwargs), (_, upload), (_, _tag_repo, tag_kwargs) = hub.calls
    assert repo == "org/imagenet-val" and repo_kwargs["private"] is True and repo_kwargs["repo_type"] == "dataset"
    info = json.loads((folder / "build_info.json").read_text())
    listed = {rel for cfg in info["configs"].values() for rel in cfg["files"]}
    assert set(upload["allow_patterns"]) == listed | {"README.md", "build_info.json"}
    assert tag_kwargs["tag"] == "v1.0.0"


def test_push_refuses_an_existing_public_repository_unless_public_is_asked(folder):
    from imagenet_suite.dataset.hub import push_folder
    from imagenet_suite.errors import ConfigError

    hub = FakeHub(existing={"org/open": False, "org/closed": True})
    with pytest.raises(ConfigError, match="org/open: the dataset repository exists and is public"):
        push_folder(folder, "org/open", api=hub)
    assert [call[0] for call in hub.calls] == ["repo_info"]  # nothing created or uploaded
    push_folder(folder, "org/open", api=hub, private=False)  # --public: intended
    push_folder(folder, "org/closed", api=hub)  # private already: fine
    assert [call[0] for call in hub.calls].count("upload_folder") == 2


def test_push_refuses_a_corrupt_folder_before_any_network_call(folder, tmp_path):
    from imagenet_suite.dataset.hub import push_folder

    copy = tmp_path / "c"
    shutil.copytree(folder, copy)
    (copy / "README.md").write_text("tampered")
    hub = FakeHub()
    with pytest.raises(DatasetFolderError):
        push_folder(copy, "org/x", api=hub)
    assert hub.calls == []


def test_cli_list_and_info():
    listing = run_cli("list").stdout.splitlines()  # the table itself: tests/test_cli_list_info.py
    assert [line.split()[:4] for line in listing if line.startswith(("imagenet_val ", "imagenet_real "))] == [
        ["imagenet_real", "1.0.0", "labels,", "images"],
        ["imagenet_val", "1.0.0", "default,", "boxes"],
    ]
    info = run_cli("info", "imagenet_val").stdout
    assert (
        "ILSVRC2012_img_val.tar" in info and "ILSVRC2012_devkit_t12.tar.gz" in info and "LOC_val_solution.csv" in info
    )
    assert (
        "md5 29b22e2961454d5413ddabcf34fc5622" in info
        and "columns:" in run_cli("info", "imagenet_val", "--features").stdout
    )
    unknown = run_cli("info", "imagenet_xyz", check=False)
    assert unknown.returncode == 2 and "unknown builder 'imagenet_xyz'" in unknown.stderr


def test_cli_build_prints_folder_last_and_progress_on_stderr(val_layouts, tmp_path):
    result = run_cli(
        "build",
        "imagenet_val",
        "--out",
        str(tmp_path),
        "--manual-dir",
        str(val_layouts["tar"]),
        "--pins",
        str(val_layouts["tar"] / "checksums.tsv"),
        "--num-proc",
        "2",
        "--shard-size",
        "6",
    )
    last = result.stdout.strip().splitlines()[-1]
    assert last == str((tmp_path / "imagenet_val-1.0.0").resolve())
    assert "imagenet_val/default" in result.stderr  # the progress bar
    verify_folder(last)


def test_cli_unknown_config_and_option(val_layouts, tmp_path):
    bad_config = run_cli("build", "imagenet_val", "--config", "nope", "--out", str(tmp_path), check=False)
    assert bad_config.returncode == 2 and "no config 'nope'" in bad_config.stderr
    bad_option = run_cli("build", "imagenet_val", "--option", "x=1", "--out", str(tmp_path), check=False)
    assert bad_option.returncode == 2 and "has no option 'x'; there are no options" in bad_option.stderr
    assert not any(tmp_path.iterdir())  # nothing written on failure


def test_input_datasets_are_verified_and_read_by_id(folder, tmp_path):
    from imagenet_suite.core.sources import SourceResolver
    from imagenet_suite.errors import ManualFileMissing

    resolver = SourceResolver(inputs=[folder])
    dataset, source = resolver.input_dataset("imagenet_val", "boxes")
    assert source.sha256 and dataset.path == folder
    table = dataset.take(["ILSVRC2012_val_00000009", "ILSVRC2012_val_00000002"], "boxes", columns=["id", "label"])
    assert table.column("id").to_pylist() == ["ILSVRC2012_val_00000009", "ILSVRC2012_val_00000002"]
    assert sum(b.num_rows for b in dataset.iter_batches("default", columns=["id"], batch_size=5)) == 12
    with pytest.raises(ManualFileMissing, match="needs a built imagenet_a dataset: pass its folder as inputs"):
        resolver.input_dataset("imagenet_a")
    copy = tmp_path / "c"
    shutil.copytree(folder, copy)
    (copy / "README.md").write_text("x")
    with pytest.raises(DatasetFolderError):
        SourceResolver(inputs=[copy]).input_dataset("imagenet_val")
