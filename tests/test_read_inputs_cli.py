"""Commands that read a model's outputs, features, detector statistics or weights check them first.

Each case runs ``imagenet-suite`` in this process (``cli.main``) on a tiny built ``imagenet_val``
(12 rows): a hostile or damaged input file, or an argument that cannot work, gives exit code 2 and one
stderr line naming the file or argument, before any large allocation, any model is loaded or any
file is written.
"""

from __future__ import annotations

import io
import pickle
import re
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

from tests.helpers import build_val, one_line
from tests.test_trust_outputs import BIG, Payload, allocated_while, zeros_npz

ALLOWED = 32 << 20


@pytest.fixture(scope="module")
def world(tmp_path_factory, val_layouts, val_images):
    """A built dataset, its ids, good outputs on it, and good detector statistics."""
    root = tmp_path_factory.mktemp("read-inputs")
    dataset = build_val(val_layouts, "folders", root / "built")
    ids = [image.image_id for image in val_images]
    outputs = zeros_npz(root / "outputs.npz", (len(ids), 1000), ids=ids)
    return {"root": root, "dataset": dataset, "ids": ids, "outputs": outputs}


def pickled(path: Path, entries: dict) -> Path:
    torch.save({**entries, "payload": Payload(path.with_suffix(".ran"))}, path)
    return path


def test_score_checks_the_outputs_header_against_the_dataset_before_decompressing(world, tmp_path, capsys):
    wide = zeros_npz(tmp_path / "wide.npz", (len(world["ids"]), BIG), ids=world["ids"])
    found = []
    used = allocated_while(
        lambda: found.append(one_line(capsys, ["score", str(world["dataset"]), "--outputs", str(wide)]))
    )
    assert re.search(r"wide.npz: .*logits.npy' holds 2000000 scores per row, expected 1000", found[0]), found[0]
    assert used < ALLOWED, used

    short = zeros_npz(tmp_path / "short.npz", (10, 1000), ids=world["ids"][:10])
    err = one_line(capsys, ["score", str(world["dataset"]), "--outputs", str(short)])
    assert re.search(r"short.npz: .*logits.npy' holds 10 rows, expected 12 \(the rows of imagenet_val", err), err


def test_score_refuses_pickles_in_outputs_and_features_in_one_line(world, tmp_path, capsys):
    ids = world["ids"]
    evil = pickled(tmp_path / "evil.pt", {"ids": ids, "logits": torch.zeros(len(ids), 1000)})
    err = one_line(capsys, ["score", str(world["dataset"]), "--outputs", str(evil)])
    assert f"{evil}: holds pickled Python objects other than tensors (posix.system)" in err
    assert "weights_only" not in err and not evil.with_suffix(".ran").exists()

    features = tmp_path / "features.pt"
    torch.save({"ids": ids, "features": torch.zeros(len(ids), 4)}, features)
    evil_features = pickled(tmp_path / "evil-features.pt", {"ids": ids, "features": torch.zeros(len(ids), 4)})
    argv = ["score", str(world["dataset"]), "--outputs", str(world["outputs"]), "--id-outputs", str(world["outputs"])]
    err = one_line(capsys, [*argv, "--id-features", str(features), "--ood-features", str(evil_features)])
    assert f"{evil_features}: holds pickled Python objects other than tensors (posix.system)" in err


@pytest.mark.parametrize("damage", ["truncated", "not a DetectorStats file", "corrupt pickle"])
def test_score_refuses_damaged_detector_statistics_in_one_line(world, tmp_path, capsys, damage):
    from tests.test_trust_outputs import _stats

    path = tmp_path / "stats.pt"
    _stats().save(path)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "not a DetectorStats file":
        torch.save({"ids": world["ids"], "logits": torch.zeros(12, 1000)}, path)
    else:  # a pickle that fetches a memo entry it never stored: the unpickler raises KeyError
        with zipfile.ZipFile(io.BytesIO(data)) as good, zipfile.ZipFile(path, "w") as bad:
            for info in good.infolist():
                broken = b"\x80\x02}q\x00X\x06\x00\x00\x00presetq\x01h\x07s."
                bad.writestr(info, broken if info.filename.endswith("data.pkl") else good.read(info))
    argv = ["score", str(world["dataset"]), "--outputs", str(world["outputs"]), "--id-outputs", str(world["outputs"])]
    err = one_line(capsys, [*argv, "--detector-stats", str(path)])
    assert f"{path}: " in err
    assert {"truncated": "not a readable torch file", "corrupt pickle": "not a readable torch file"}.get(
        damage, "no 'format' entry"
    ) in err, err


def _predict(dataset: Path, out: Path, *extra: str, model: str = "timm:test_resnet") -> list[str]:
    return ["predict", str(dataset), "--model", model, "--out", str(out), "--no-progress", *extra]


def test_predict_refuses_a_pickle_in_the_weights_in_one_line(world, tmp_path, capsys):
    from imagenet_suite.inference import load_model

    weights = pickled(tmp_path / "w.pth", dict(load_model("timm:test_resnet", "none").model.state_dict()))
    err = one_line(capsys, _predict(world["dataset"], tmp_path / "o.pt", "--weights", str(weights)))
    assert f"weights file {weights}: holds pickled Python objects other than tensors (posix.system)" in err
    assert "weights_only" not in err and not weights.with_suffix(".ran").exists()
    assert not (tmp_path / "o.pt").exists() and not (tmp_path / "o.pt.partial").exists()


@pytest.mark.parametrize(
    ("extra", "out", "message"),
    [
        (["--workers", "-1"], "o.pt", r"--workers must be 0 or more, got -1"),
        (["--batch-size", "0"], "o.pt", r"--batch-size must be at least 1, got 0"),
        ([], "a-folder.pt", r"--out .*a-folder.pt: is a folder; expected the path of a .pt file to write"),
        ([], "a-file.txt/o.pt", r"--out .*a-file.txt/o.pt: .*a-file.txt is a file, not a folder"),
    ],
)
def test_predict_checks_its_arguments_before_loading_the_model(world, tmp_path, capsys, extra, out, message):
    (tmp_path / "a-folder.pt").mkdir()
    (tmp_path / "a-file.txt").write_text("in the way\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    # a model string that cannot be loaded: the argument must be refused first
    err = one_line(capsys, _predict(world["dataset"], tmp_path / out, *extra, model="resnet50"))
    assert re.search(message, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing left behind (no .partial folder)


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_raw_pickle_is_refused_in_one_line_without_torchs_warning(world, tmp_path, capsys, protocol):
    """A plain ``pickle.dump`` of the outputs (not torch's format): our line only, no warning from torch about
    the pickle protocol above it (warnings go to stderr outside pytest)."""
    raw = tmp_path / "raw.pt"
    raw.write_bytes(pickle.dumps({"ids": world["ids"], "logits": [[0.0] * 1000] * len(world["ids"])}, protocol))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        err = one_line(capsys, ["score", str(world["dataset"]), "--outputs", str(raw)])
    assert f"{raw}: not a readable torch file" in err, err
    assert [str(w.message) for w in caught] == []
