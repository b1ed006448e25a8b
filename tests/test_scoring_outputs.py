"""The outputs contract: on-disk formats and every refusal."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imagenet_suite.errors import OutputsError
from imagenet_suite.scoring.outputs import ModelOutputs


def logits(rows=4, classes=10, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(rows, classes, generator=torch.Generator().manual_seed(1)).to(dtype)


IDS = ["a", "b", "c", "d"]


@pytest.mark.parametrize("suffix", [".pt", ".npz"])
@pytest.mark.parametrize("kind", ["logits", "probs", "log_probs"])
def test_save_load_round_trip(tmp_path, suffix, kind):
    values = {"logits": logits(), "probs": logits().softmax(1), "log_probs": logits().log_softmax(1)}[kind]
    path = ModelOutputs(values, IDS, kind).save(tmp_path / f"out{suffix}")
    loaded = ModelOutputs.load(path)
    assert loaded.kind == kind and loaded.ids == tuple(IDS)
    assert torch.equal(loaded.values, values)
    loaded.validate(num_classes=10)


def test_pt_keeps_bfloat16_and_npz_stores_it_as_float32(tmp_path):
    values = logits(dtype=torch.bfloat16)
    assert ModelOutputs.load(ModelOutputs(values, IDS).save(tmp_path / "o.pt")).values.dtype == torch.bfloat16
    from_npz = ModelOutputs.load(ModelOutputs(values, IDS).save(tmp_path / "o.npz")).values
    assert from_npz.dtype == torch.float32 and torch.equal(from_npz, values.float())


def test_plain_numpy_npz_loads_as_is(tmp_path):
    path = tmp_path / "from_jax.npz"
    np.savez(path, ids=np.array(["x1", "x2"]), probs=np.array([[0.25, 0.75], [1.0, 0.0]], dtype=np.float16))
    loaded = ModelOutputs.load(path)
    assert loaded.kind == "probs" and loaded.ids == ("x1", "x2") and loaded.values.dtype == torch.float16
    loaded.validate()


def test_plain_torch_dict_loads_as_is(tmp_path):
    torch.save({"ids": ["x1", "x2"], "log_probs": torch.log_softmax(torch.randn(2, 3), 1)}, tmp_path / "o.pt")
    assert ModelOutputs.load(tmp_path / "o.pt").kind == "log_probs"


def test_bytes_ids_in_npz_are_decoded(tmp_path):
    np.savez(tmp_path / "o.npz", ids=np.array([b"x1", b"x2"]), logits=np.zeros((2, 3), dtype=np.float32))
    assert ModelOutputs.load(tmp_path / "o.npz").ids == ("x1", "x2")


def test_refuses_object_ids_in_npz(tmp_path):
    np.savez(tmp_path / "o.npz", ids=np.array(["x1", 2], dtype=object), logits=np.zeros((2, 3)))
    with pytest.raises(OutputsError, match=r"np.asarray\(ids, dtype=str\)"):
        ModelOutputs.load(tmp_path / "o.npz")


def test_refuses_a_file_without_ids(tmp_path):
    np.savez(tmp_path / "o.npz", logits=np.zeros((2, 3)))
    with pytest.raises(OutputsError, match="no 'ids' entry"):
        ModelOutputs.load(tmp_path / "o.npz")


@pytest.mark.parametrize("arrays", [{}, {"logits": np.zeros((2, 3)), "probs": np.full((2, 3), 1 / 3)}])
def test_refuses_zero_or_two_value_arrays(tmp_path, arrays):
    np.savez(tmp_path / "o.npz", ids=np.array(["a", "b"]), **arrays)
    with pytest.raises(OutputsError, match="needs exactly one of"):
        ModelOutputs.load(tmp_path / "o.npz")


def test_refuses_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(OutputsError, match="must end in one of"):
        ModelOutputs(logits(), IDS).save(tmp_path / "o.csv")
    with pytest.raises(OutputsError, match="does not exist"):
        ModelOutputs.load(tmp_path / "missing.pt")


def test_refuses_a_torch_file_that_is_not_a_dict(tmp_path):
    torch.save(torch.zeros(2, 3), tmp_path / "o.pt")
    with pytest.raises(OutputsError, match="expected a dict"):
        ModelOutputs.load(tmp_path / "o.pt")


def test_refuses_duplicate_ids():
    with pytest.raises(OutputsError, match=r"'b' appears twice \(rows 1 and 3\)"):
        ModelOutputs(logits(), ["a", "b", "c", "b"])


def test_refuses_id_count_mismatch_and_non_string_ids():
    with pytest.raises(OutputsError, match="4 rows but 3 ids"):
        ModelOutputs(logits(), ["a", "b", "c"])
    with pytest.raises(OutputsError, match="id at row 2 is 7"):
        ModelOutputs(logits(), ["a", "b", 7, "d"])


def test_refuses_bad_shapes_dtypes_and_kinds():
    with pytest.raises(OutputsError, match=r"\[N, C\] tensor"):
        ModelOutputs(torch.zeros(4), IDS)
    with pytest.raises(OutputsError, match="float tensor"):
        ModelOutputs(torch.zeros(4, 3, dtype=torch.int64), IDS)
    with pytest.raises(OutputsError, match="kind 'softmax'"):
        ModelOutputs(logits(), IDS, "softmax")


def test_refuses_wrong_number_of_classes():
    with pytest.raises(OutputsError, match="C=10 scores per row, the dataset's label space has 1000"):
        ModelOutputs(logits(), IDS).validate(num_classes=1000)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_refuses_non_finite_logits(bad):
    values = logits(dtype=torch.bfloat16)
    values[2, 5] = bad
    with pytest.raises(OutputsError, match=r"row 2 \(id 'c'\) contains NaN or inf"):
        ModelOutputs(values, IDS).validate()


def test_log_probs_may_hold_minus_infinity_but_not_nan():
    values = torch.tensor([[0.0, float("-inf")], [np.log(0.5), np.log(0.5)]])
    ModelOutputs(values, ["a", "b"], "log_probs").validate()
    values[1, 0] = float("nan")
    with pytest.raises(OutputsError, match="row 1"):
        ModelOutputs(values, ["a", "b"], "log_probs").validate()


def test_refuses_probs_that_do_not_sum_to_one():
    values = logits().softmax(1)
    ModelOutputs(values, IDS, "probs").validate()
    values[3] *= 1.5
    with pytest.raises(OutputsError, match=r"declared 'probs' but row 3 \(id 'd'\) sums to 1.5"):
        ModelOutputs(values, IDS, "probs").validate()


def test_refuses_logits_declared_as_probs():
    with pytest.raises(OutputsError, match="save raw scores as 'logits'"):
        ModelOutputs(logits(), IDS, "probs").validate()


def test_refuses_log_probs_that_are_not_normalized():
    with pytest.raises(OutputsError, match=r"declared 'log_probs' but exp\(row\) 0"):
        ModelOutputs(logits(), IDS, "log_probs").validate()


def test_probability_tolerance_follows_the_dtype():
    values = logits(rows=4, classes=1000).softmax(1).to(torch.bfloat16)
    ModelOutputs(values, IDS, "probs").validate()  # bf16 rounding of 1000 values is allowed
    with pytest.raises(OutputsError, match="sums to"):
        ModelOutputs(values, IDS, "probs").validate(prob_tolerance=1e-9)


def test_refuses_files_that_are_not_archives(tmp_path):
    (tmp_path / "o.npz").write_text("ids,logits\n")
    with pytest.raises(OutputsError, match="not an .npz archive"):
        ModelOutputs.load(tmp_path / "o.npz")
    (tmp_path / "o.pt").write_bytes(b"\x00garbage")
    with pytest.raises(OutputsError, match="not a readable torch file"):
        ModelOutputs.load(tmp_path / "o.pt")


def test_refuses_two_dimensional_ids_and_non_tensor_values(tmp_path):
    np.savez(tmp_path / "o.npz", ids=np.array([["a", "b"]]), logits=np.zeros((2, 3)))
    with pytest.raises(OutputsError, match="'ids' must be 1-D"):
        ModelOutputs.load(tmp_path / "o.npz")
    torch.save({"ids": ["a"], "logits": [[0.0, 1.0]]}, tmp_path / "o.pt")
    with pytest.raises(OutputsError, match="'logits' must be a tensor"):
        ModelOutputs.load(tmp_path / "o.pt")
