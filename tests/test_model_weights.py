"""Weights are named everywhere (issue 25): ``torchvision:<name>.<WEIGHTS>`` and ``timm:<name>.<tag>``.

A spec without a tag resolves to the library's default (torchvision's ``DEFAULT`` enum, timm's default
tag) and the resolved tag is what is stated and recorded; an unknown tag is one line listing the valid
ones. ``predict`` / ``evaluate`` say which pretrained weights they load before loading them, and an
offline failure is that line plus one error line naming the weights and ``--weights FILE``. The tag,
where the weights came from and their sha256 are recorded in run.json and suite.json and shown in
suite.md and in every leaderboard row.

Nothing is downloaded: torchvision's download is replaced by one that fails (the network boundary) and
its cache is a temporary ``TORCH_HOME``; timm's pretrained weights are read from a temporary Hugging Face
cache this file lays out (``HF_HUB_OFFLINE=1`` is set by conftest), as timm reads a downloaded file.
"""

from __future__ import annotations

import json
import re
import urllib.error
from pathlib import Path

import pytest
import torch

from imagenet_suite import cli
from imagenet_suite.errors import ConfigError
from imagenet_suite.files import sha256_file
from imagenet_suite.inference import load_model, resolve_weights
from imagenet_suite.inference import models as models_module
from imagenet_suite.scoring.summary.suite_json import read_suite
from imagenet_suite.testing import tiny_val_build
from tests.helpers import one_line

V2_URL = "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"
V1_URL = "https://download.pytorch.org/models/resnet50-0676ba61.pth"
TIMM_REPO = "timm/test_resnet.r160_in1k"


@pytest.fixture(scope="module")
def val(tmp_path_factory) -> Path:
    """A two-image imagenet_val build."""
    return tiny_val_build(tmp_path_factory.mktemp("weights-val"))


@pytest.fixture
def offline_torchvision(tmp_path, monkeypatch) -> list[str]:
    """An empty torch.hub cache and a download that fails as offline; the URLs asked for."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    asked: list[str] = []

    def no_network(url, dst, hash_prefix=None, progress=True):
        asked.append(url)
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(torch.hub, "download_url_to_file", no_network)
    return asked


@pytest.fixture
def hf_cache(tmp_path, monkeypatch) -> Path:
    """An empty Hugging Face cache (read offline)."""
    import huggingface_hub.constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


def cache_timm_weights(cache: Path, seed: int = 5) -> Path:
    """``timm/test_resnet.r160_in1k``'s ``model.safetensors`` in the Hub cache layout (as a download leaves
    it): a random init drawn from ``seed``; the file."""
    import timm
    from safetensors.torch import save_file

    repo = cache / f"models--{TIMM_REPO.replace('/', '--')}"
    commit = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        save_file(timm.create_model("test_resnet").state_dict(), snapshot / "model.safetensors")
    return snapshot / "model.safetensors"


# ------------------------------------------------------------------------------------------ spec parsing


@pytest.mark.parametrize(
    ("spec", "tag", "requested", "location", "text"),
    [
        ("torchvision:resnet50", "IMAGENET1K_V2", None, V2_URL, "torchvision resnet50.IMAGENET1K_V2 (DEFAULT: no tag in the spec)"),
        ("torchvision:resnet50.DEFAULT", "IMAGENET1K_V2", "DEFAULT", V2_URL, "torchvision resnet50.IMAGENET1K_V2 (DEFAULT)"),
        ("torchvision:resnet50.IMAGENET1K_V1", "IMAGENET1K_V1", "IMAGENET1K_V1", V1_URL, "torchvision resnet50.IMAGENET1K_V1"),
        ("timm:resnet50", "a1_in1k", None, "hf-hub:timm/resnet50.a1_in1k", "timm resnet50.a1_in1k (timm's default tag: no tag in the spec)"),
        ("timm:resnet50.am_in1k", "am_in1k", "am_in1k", "hf-hub:timm/resnet50.am_in1k", "timm resnet50.am_in1k"),
        ("timm:test_resnet", "r160_in1k", None, f"hf-hub:{TIMM_REPO}", "timm test_resnet.r160_in1k (timm's default tag: no tag in the spec)"),
    ],
)  # fmt: skip
def test_a_spec_names_its_weights_tag_or_resolves_the_default(spec, tag, requested, location, text):
    source = resolve_weights(spec)
    library, _, name = spec.partition(":")
    assert (source.library, source.architecture) == (library, name.partition(".")[0])
    assert (source.tag, source.requested, source.kind, source.loaded) == (tag, requested, library, True)
    assert source.location == location and source.tag_text() == text == source.weights_text()
    random_init = resolve_weights(spec, "none", seed=4)  # the tag is still recorded, as not loaded
    assert (random_init.tag, random_init.kind, random_init.loaded, random_init.seed) == (tag, "none", False, 4)
    assert random_init.location is None and random_init.weights_text() == "none (seed 4)"
    from_file = resolve_weights(spec, "w.safetensors")
    assert (from_file.tag, from_file.kind, from_file.loaded, from_file.location) == (
        tag,
        "file",
        False,
        "w.safetensors",
    )


def test_torchvision_default_is_not_the_papers_resnet50_and_the_statement_says_so():
    default = resolve_weights("torchvision:resnet50").statement()
    assert default == (
        f"weights: torchvision resnet50.IMAGENET1K_V2 (DEFAULT: no tag in the spec) from {V2_URL} — Beyond Accuracy "
        "(Hesse et al. 2025) evaluated resnet50 with IMAGENET1K_V1 (torchvision:resnet50.IMAGENET1K_V1)"
    )
    assert resolve_weights("torchvision:resnet50.IMAGENET1K_V1").statement() == (
        f"weights: torchvision resnet50.IMAGENET1K_V1 from {V1_URL} — as Beyond Accuracy (Hesse et al. 2025)"
    )


def test_the_papers_tags_are_tags_of_the_installed_libraries():
    import timm
    import torchvision

    for (library, architecture), papers in models_module.PAPER_TAGS.items():
        for tag, _paper in papers:
            if library == "torchvision":
                assert tag in torchvision.models.get_model_weights(architecture).__members__, (architecture, tag)
            else:
                assert f"{architecture}.{tag}" in timm.list_pretrained(f"{architecture}.*"), (architecture, tag)


UNKNOWN_TAGS = {
    "torchvision:resnet50.IMAGENET1K_V3": "model 'torchvision:resnet50.IMAGENET1K_V3': torchvision has no weights "
    "'IMAGENET1K_V3' for resnet50 (valid: IMAGENET1K_V1, IMAGENET1K_V2, DEFAULT = IMAGENET1K_V2)",
    "timm:resnet50.bogus_in1k": "model 'timm:resnet50.bogus_in1k': timm has no pretrained tag 'bogus_in1k' for "
    "resnet50 (valid: a1_in1k, a1h_in1k, ",
    "timm:test_resnet.r224_in1k": "model 'timm:test_resnet.r224_in1k': timm has no pretrained tag 'r224_in1k' for "
    "test_resnet (valid: r160_in1k)",
    "timm:test_resnet.": "model 'timm:test_resnet.': an empty weights tag after '.'; write test_resnet or "
    "test_resnet.<tag>",
}


@pytest.mark.parametrize("spec", list(UNKNOWN_TAGS))
def test_an_unknown_tag_is_one_line_naming_the_spec_and_the_valid_tags(spec, val, tmp_path, capsys):
    import timm

    for weights in ([], ["--weights", "none"]):  # refused before anything is loaded, whatever the weights
        line = one_line(capsys, ["predict", str(val), "--model", spec, "--out", str(tmp_path / "o.pt"), *weights])
        assert line.startswith("imagenet-suite predict: error: " + UNKNOWN_TAGS[spec]), line
        if spec == "timm:resnet50.bogus_in1k":  # every tag of the architecture: timm.list_pretrained("resnet50.*")
            assert all(f" {name.partition('.')[2]}" in line for name in timm.list_pretrained("resnet50.*")), line
    assert not list(tmp_path.iterdir())


def test_a_timm_tag_without_weights_is_refused_unless_a_random_init_is_asked_for():
    with pytest.raises(
        ConfigError, match=r"timm has no pretrained weights for coatnet_0_224\.untrained; pass weights FILE"
    ):
        resolve_weights("timm:coatnet_0_224")
    assert resolve_weights("timm:coatnet_0_224", "none").tag == "untrained"


def test_the_tag_chooses_the_preprocessing_of_a_random_init():
    """torchvision's V1 and V2 recipes resize to 256 and 232 before the 224 crop: ``--weights`` FILE or none
    with ``.IMAGENET1K_V1`` preprocesses as V1 (before tags every torchvision model took DEFAULT's)."""
    resize = {}
    for spec in (
        "torchvision:mobilenet_v2",
        "torchvision:mobilenet_v2.IMAGENET1K_V1",
        "torchvision:mobilenet_v2.DEFAULT",
    ):
        loaded = load_model(spec, "none", seed=0)
        resize[spec] = (loaded.source.tag, loaded.transform.resize_size)
        assert loaded.weights == "none (seed 0)" and loaded.weights_sha256 is None and not loaded.source.loaded
    assert resize == {
        "torchvision:mobilenet_v2": ("IMAGENET1K_V2", [232]),
        "torchvision:mobilenet_v2.IMAGENET1K_V1": ("IMAGENET1K_V1", [256]),
        "torchvision:mobilenet_v2.DEFAULT": ("IMAGENET1K_V2", [232]),
    }
    loaded = load_model("timm:test_resnet.r160_in1k", "none", seed=0)
    assert loaded.data_config["input_size"] == (3, 160, 160) and loaded.source.requested == "r160_in1k"


# ------------------------------------------------------------------------------ pretrained weights, offline


def test_predict_states_the_weights_then_fails_offline_in_one_line(val, tmp_path, offline_torchvision, capsys):
    out = tmp_path / "o.pt"
    code = cli.main(["predict", str(val), "--model", "torchvision:resnet50", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    statement, error = err.strip().splitlines()
    assert statement == resolve_weights("torchvision:resnet50").statement()
    assert error == (
        "imagenet-suite predict: error: model 'torchvision:resnet50': the pretrained weights torchvision "
        f"resnet50.IMAGENET1K_V2 (DEFAULT: no tag in the spec) cannot be fetched from {V2_URL} (URLError: <urlopen "
        "error [Errno -2] Name or service not known>); pass --weights FILE, or --weights none for a random init"
    )
    assert offline_torchvision == [V2_URL]  # the statement came first, then the one download tried
    assert not out.exists() and not out.with_name("o.pt.partial").exists()


def test_timm_weights_not_in_the_offline_cache_are_stated_then_one_error_line(val, tmp_path, hf_cache, capsys):
    code = cli.main(["predict", str(val), "--model", "timm:test_resnet", "--out", str(tmp_path / "o.pt")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    statement, error = err.strip().splitlines()
    assert (
        statement
        == f"weights: timm test_resnet.r160_in1k (timm's default tag: no tag in the spec) from hf-hub:{TIMM_REPO}"
    )
    assert error.startswith(
        "imagenet-suite predict: error: model 'timm:test_resnet': the pretrained weights timm test_resnet.r160_in1k "
        f"(timm's default tag: no tag in the spec) cannot be fetched from hf-hub:{TIMM_REPO} (LocalEntryNotFoundError"
    ) and error.endswith("pass --weights FILE, or --weights none for a random init"), error


def test_a_cached_torchvision_file_is_hashed_and_must_match_its_url(tmp_path, offline_torchvision, monkeypatch):
    spec = "torchvision:squeezenet1_1.IMAGENET1K_V1"
    url = resolve_weights(spec).location
    cached = Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[1]
    cached.parent.mkdir(parents=True)
    import torchvision

    state = torchvision.models.squeezenet1_1().state_dict()
    torch.save(state, cached)
    sha = sha256_file(cached)
    with pytest.raises(ConfigError) as refused:  # not the published file: its sha256 does not begin as the URL says
        load_model(spec)
    message = str(refused.value)
    assert message == (
        f"model {spec!r}: the cached file {cached} of torchvision squeezenet1_1.IMAGENET1K_V1 has sha256 "
        f"{sha[:12]}, but {url} names a file whose sha256 begins {url.rsplit('-', 1)[1][:8]}; delete it to "
        "download it again, or pass weights FILE"
    )
    monkeypatch.setattr(models_module, "_url_hash_prefix", lambda url: sha[:8])  # as if it were the published file
    loaded = load_model(spec)
    assert loaded.weights_sha256 == sha and loaded.weights == "torchvision squeezenet1_1.IMAGENET1K_V1"
    assert all(torch.equal(loaded.model.state_dict()[key], value) for key, value in state.items())
    assert offline_torchvision == []  # read from the cache: nothing was downloaded


# ------------------------------------------------------------------- recorded: suite.json, suite.md, board


def evaluate(val: Path, out: Path, spec: str, *weights: str) -> list[str]:
    return ["evaluate", "--model", spec, *weights, "--datasets", str(val), "--out", str(out), "--batch-size", "2",
            "--workers", "0", "--no-progress", "--bootstrap", "0"]  # fmt: skip


def test_evaluate_records_the_weights_in_suite_json_suite_md_and_every_leaderboard_row(val, tmp_path, hf_cache, capsys):
    cached = cache_timm_weights(hf_cache)
    weights_file = tmp_path / "w.pth"
    torch.save(load_model("timm:test_resnet", "none", seed=2).model.state_dict(), weights_file)
    runs = {
        "pretrained": ("timm:test_resnet",),
        "random": ("timm:test_resnet.r160_in1k", "--weights", "none", "--seed", "1"),
        "file": ("timm:test_resnet", "--weights", str(weights_file)),
    }
    for name, (spec, *weights) in runs.items():
        assert cli.main(evaluate(val, tmp_path / name, spec, *weights)) == 0, capsys.readouterr().err
        err = capsys.readouterr().err
        expected = [
            f"weights: timm test_resnet.r160_in1k (timm's default tag: no tag in the spec) from hf-hub:{TIMM_REPO}"
        ]
        assert err.strip().splitlines() == (expected if name == "pretrained" else []), err
    suites = {name: read_suite(tmp_path / name) for name in runs}
    assert {suite["format"] for suite in suites.values()} == {"imagenet-suite.suite/4"}
    source = {
        "library": "timm",
        "architecture": "test_resnet",
        "tag": "r160_in1k",
        "family": "resnet",
        "pretraining": "in1k",
    }
    assert suites["pretrained"]["weights_source"] == {
        **source, "kind": "timm", "requested": None, "loaded": True, "location": f"hf-hub:{TIMM_REPO}", "seed": None
    }  # fmt: skip
    assert suites["random"]["weights_source"] == {
        **source, "kind": "none", "requested": "r160_in1k", "loaded": False, "location": None, "seed": 1
    }  # fmt: skip
    assert suites["file"]["weights_source"] == {
        **source, "kind": "file", "requested": None, "loaded": False, "location": str(weights_file), "seed": None
    }  # fmt: skip
    sha = {"pretrained": sha256_file(cached), "random": None, "file": sha256_file(weights_file)}
    assert {name: suite["weights_sha256"] for name, suite in suites.items()} == sha
    assert suites["pretrained"]["weights"] == "timm test_resnet.r160_in1k (timm's default tag: no tag in the spec)"
    for name in runs:  # run.json records the same
        assert (
            json.loads((tmp_path / name / "run.json").read_text())["weights_source"] == suites[name]["weights_source"]
        )

    default_tag = "timm test_resnet.r160_in1k (timm's default tag: no tag in the spec)"
    headings = {name: (tmp_path / name / "suite.md").read_text().splitlines()[2] for name in runs}
    assert headings["pretrained"].startswith(
        f"weights: {default_tag}, sha256 {sha['pretrained']} from hf-hub:{TIMM_REPO}; "
    ), headings
    assert headings["random"].startswith("weights: none (seed 1); tag timm test_resnet.r160_in1k not loaded; ")
    assert headings["file"].startswith(
        f"weights: file {weights_file}, sha256 {sha['file']}; tag {default_tag} not loaded; "
    ), headings

    legacy = read_suite(tmp_path / "random")  # written as format 2 (rows as a list): read, tag not recorded
    legacy["format"] = "imagenet-suite.suite/2"
    del legacy["weights_source"]
    legacy["summary"].pop("uncertainty", None)  # format 2 predates intervals
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "suite.json").write_text(json.dumps({**legacy, "model": "timm:old"}))
    board = tmp_path / "board"
    assert cli.main(["leaderboard", *(str(tmp_path / n) for n in (*runs, "legacy")), "--out", str(board)]) == 0
    text = (board / "leaderboard.md").read_text()
    labels = {
        "pretrained": f"{default_tag}, sha256 {sha['pretrained'][:12]}",
        "random": "none (seed 1); tag timm test_resnet.r160_in1k not loaded",
        "file": f"file {weights_file}, sha256 {sha['file'][:12]}; tag {default_tag} not loaded",
        "legacy": "none (seed 1); weights tag not recorded",
    }
    names = {
        "pretrained": "timm:test_resnet (pretrained)",
        "random": "timm:test_resnet.r160_in1k",
        "file": "timm:test_resnet (file)",
        "legacy": "timm:old",
    }
    sections = re.split(r"\n###? ", text)[1:]  # the papers' sections (##) and their tables (###)
    legend = [s for s in sections if s.startswith("Models\n")]  # one legend of the weights, not a column per table
    assert len(legend) == 1 and "| model | weights |" in legend[0]
    for name, label in labels.items():
        assert f"| {names[name]} | {label} |" in legend[0], (name, legend[0])
    tables = [s for s in sections if s.startswith(("QUBA", "Accuracy per dataset", "Dataset-level Sum / Borda"))]
    assert len(tables) == 3 and not any("| weights |" in section for section in tables)
    models = (board / "leaderboard_models.csv").read_text()
    assert sha["pretrained"] in models and f"hf-hub:{TIMM_REPO}" in models


def test_a_run_folder_of_another_weights_tag_is_refused(val, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(evaluate(val, run, "timm:test_resnet", "--weights", "none")) == 0
    manifest = json.loads((run / "run.json").read_text())
    manifest["weights_source"]["tag"] = "r224_in1k"  # as if the default tag had changed since
    (run / "run.json").write_text(json.dumps(manifest))
    line = one_line(capsys, evaluate(val, run, "timm:test_resnet", "--weights", "none"))
    assert line.endswith(
        f"--out {run} holds the run of timm:test_resnet, not of this model: weights tag r224_in1k there, r160_in1k "
        "now; choose another --out"
    ), line
