"""OOD detectors against NINCO's numpy/sklearn implementations (j-cb/NINCO detection_methods.py), re-run here.

A small synthetic "model": class-clustered train features, a linear head, val/OOD sets. Every detector
agrees with the reference to 1e-9 relative (MSP: float32 like NINCO's, to one float32 ulp; KNN: float64 bank
exact, float32 bank to 1e-5), the
presets pick the anchors' hyper-parameters, and the exact quantile matches numpy at any size.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import torch
from sklearn.covariance import EmpiricalCovariance
from sklearn.neighbors import NearestNeighbors

from imagenet_suite.errors import ConfigError, OutputsError
from imagenet_suite.scoring.metrics import ood_detector_fit as fitting
from imagenet_suite.scoring.metrics import ood_detector_stats as dstats
from imagenet_suite.scoring.metrics import ood_detectors as det
from imagenet_suite.scoring.metrics import ood_fit

C, D, N_TRAIN = 6, 12, 900


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(11)
    centres = rng.normal(0, 3, (C, D))
    labels = rng.integers(0, C, N_TRAIN)
    train = centres[labels] + rng.normal(0, 1, (N_TRAIN, D)) + 0.5
    weight, bias = rng.normal(0, 0.5, (C, D)), rng.normal(0, 0.2, C)
    val_labels = rng.integers(0, C, 300)
    val = centres[val_labels] + rng.normal(0, 1, (300, D)) + 0.5
    oods = rng.normal(0, 4, (120, D))
    return {
        "train": train,
        "labels": labels,
        "weight": weight,
        "bias": bias,
        "val": val,
        "ood": oods,
        "train_logits": train @ weight.T + bias,
        "val_logits": val @ weight.T + bias,
        "ood_logits": oods @ weight.T + bias,
    }


@pytest.fixture(scope="module")
def stats(model):
    t = {k: torch.from_numpy(v) for k, v in model.items()}
    return fitting.fit_detector_stats(
        ood_fit.FitSet(t["train"], t["labels"], t["train_logits"]),
        weight=t["weight"],
        bias=t["bias"],
        preset_name="ninco",
        knn_dtype=torch.float64,
    )


def ours(name, model, stats, which="val"):
    t = {k: torch.from_numpy(v) for k, v in model.items()}
    return det.detector_scores(name, t[f"{which}_logits"], "logits", t[which], stats).numpy()


def close(a, b, rtol=1e-9):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


# -- NINCO's reference implementations (numpy / scipy / sklearn) --------------------------------------------


def ref_softmax(logits):
    return scipy.special.softmax(logits, axis=1)


def ref_class_stats(train, labels):
    means, centred = [], []
    for c in range(C):
        fs = train[labels == c]
        means.append(fs.mean(axis=0))
        centred.extend(fs - means[-1])
    ec = EmpiricalCovariance(assume_centered=True).fit(np.array(centred))
    return np.array(means), ec.precision_


def ref_maha(x, means, prec):
    return -np.array([(((f - means) @ prec) * (f - means)).sum(axis=-1).min() for f in x])


def test_logit_detectors(model, stats):
    for which in ("val", "ood"):
        logits = model[f"{which}_logits"]
        # MSP: NINCO's scipy softmax of the float32 logits it saves (float32 throughout); torch's float32 softmax
        # may differ from numpy's in the last bit
        msp = ref_softmax(logits.astype(np.float32)).max(axis=1)
        assert msp.dtype == np.float32
        close(ours("msp", model, stats, which), msp, rtol=2**-23)
        close(ours("maxlogit", model, stats, which), logits.max(axis=1))
        close(ours("energy", model, stats, which), scipy.special.logsumexp(logits, axis=1))
    probs = torch.from_numpy(ref_softmax(model["val_logits"]))
    assert np.allclose(det.detector_scores("msp", probs, "probs").numpy(), ref_softmax(model["val_logits"]).max(axis=1))
    assert np.allclose(
        det.detector_scores("msp", probs.log(), "log_probs").numpy(), ref_softmax(model["val_logits"]).max(axis=1)
    )


def test_kl_matching(model, stats):
    train_probs = ref_softmax(model["train_logits"])
    predicted = train_probs.argmax(axis=1)
    templates = np.array(
        [train_probs[predicted == c].mean(axis=0) if (predicted == c).any() else np.eye(C)[c] for c in range(C)]
    )
    for which in ("val", "ood"):
        probs = ref_softmax(model[f"{which}_logits"])
        kl = np.array([[scipy.special.rel_entr(p, q).sum() for q in templates] for p in probs])
        close(ours("kl_matching", model, stats, which), -kl.min(axis=1))


def test_mahalanobis_and_relative(model, stats):
    means, prec = ref_class_stats(model["train"], model["labels"])
    centred_global = model["train"] - model["train"].mean(axis=0)
    prec_global = EmpiricalCovariance(assume_centered=True).fit(centred_global).precision_
    for which in ("val", "ood"):
        x = model[which]
        maha = ref_maha(x, means, prec)
        close(ours("mahalanobis", model, stats, which), maha)
        global_term = np.array(
            [(((f - model["train"].mean(axis=0)) @ prec_global) * (f - model["train"].mean(axis=0))).sum() for f in x]
        )
        close(ours("relative_mahalanobis", model, stats, which), maha + global_term)


def test_vim_equals_ninco_and_is_monotone_in_the_paper_form(model, stats):
    w, b, train = model["weight"], model["bias"], model["train"]
    u = -np.matmul(np.linalg.pinv(w), b)
    dim = D // 2
    ec = EmpiricalCovariance(assume_centered=True).fit(train - u)
    eig_vals, eigen_vectors = np.linalg.eig(ec.covariance_)
    ns = np.ascontiguousarray((eigen_vectors.T[np.argsort(eig_vals * -1)[dim:]]).T)
    alpha = model["train_logits"].max(axis=-1).mean() / np.linalg.norm(np.matmul(train - u, ns), axis=-1).mean()
    assert stats.vim_dim == dim and stats.vim_alpha == pytest.approx(alpha, rel=1e-9)
    for which in ("val", "ood"):
        vlogit = np.linalg.norm(np.matmul(model[which] - u, ns), axis=-1) * alpha
        reference = -vlogit + scipy.special.logsumexp(model[f"{which}_logits"], axis=-1)
        close(ours("vim", model, stats, which), reference)
    paper = -np.exp(vlogit) / (np.exp(model["ood_logits"]).sum(axis=1) + np.exp(vlogit))  # the paper's s
    assert (np.argsort(paper, kind="stable") == np.argsort(reference, kind="stable")).all()


def test_knn(model, stats):
    def normalize(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True) + 1e-10  # NINCO's normalizer

    bank = normalize(model["train"])
    for k in (1, 50):
        stats_k = dstats.DetectorStats(**{**stats.__dict__, "knn_k": k})
        distances, _ = NearestNeighbors(n_neighbors=k).fit(bank).kneighbors(normalize(model["ood"]))
        close(ours("knn", model, stats_k, "ood"), -(distances[:, -1] ** 2), rtol=1e-9)
    float32 = fitting.fit_detector_stats(
        ood_fit.FitSet(torch.from_numpy(model["train"]), torch.from_numpy(model["labels"])), detectors=["knn"]
    )
    float32.knn_k = 50
    assert float32.knn_bank.dtype == torch.float32
    close(
        det.detector_scores(
            "knn", torch.from_numpy(model["ood_logits"]), "logits", torch.from_numpy(model["ood"]), float32
        ).numpy(),
        -(distances[:, -1] ** 2),
        rtol=1e-5,
    )


def test_cosine_rcos_react(model, stats):
    means, _ = ref_class_stats(model["train"], model["labels"])
    means_n = means / np.linalg.norm(means, axis=1, keepdims=True)
    clip = np.quantile(model["train"], 0.99)
    assert stats.react_threshold == clip
    for which in ("val", "ood"):
        x = model[which]
        cos = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ means_n.T
        close(ours("cosine", model, stats, which), cos.max(axis=1))
        close(ours("rcos", model, stats, which), ref_softmax(cos).max(axis=1))
        clipped = np.clip(x, a_min=None, a_max=clip) @ model["weight"].T + model["bias"]
        close(ours("react_energy", model, stats, which), scipy.special.logsumexp(clipped, axis=-1))


def test_openood_preset_fits_on_val_with_its_hyper_parameters(model):
    t = {k: torch.from_numpy(v) for k, v in model.items()}
    train, val = ood_fit.FitSet(t["train"], t["labels"]), ood_fit.FitSet(t["val"], logits=t["val_logits"])
    with pytest.raises(ConfigError, match="openood_v15 preset fits kl_matching on the ID validation set: pass val"):
        fitting.fit_detector_stats(
            ood_fit.FitSet(t["train"], t["labels"], t["train_logits"]),
            weight=t["weight"],
            bias=t["bias"],
            preset_name="openood_v15",
        )
    with pytest.raises(ConfigError, match="ViM dimension D=256 must be in 1..11"):
        fitting.fit_detector_stats(train, val=val, weight=t["weight"], bias=t["bias"], preset_name="openood_v15")
    stats = fitting.fit_detector_stats(
        train,
        val=val,
        weight=t["weight"],
        bias=t["bias"],
        preset_name="openood_v15",
        detectors=["react_energy", "kl_matching", "knn"],
    )
    assert stats.knn_k == 50 and stats.react_threshold == np.percentile(model["val"], 90)
    val_probs = ref_softmax(model["val_logits"])
    predicted = val_probs.argmax(axis=1)
    expected = np.array(
        [val_probs[predicted == c].mean(axis=0) if (predicted == c).any() else np.eye(C)[c] for c in range(C)]
    )
    close(stats.klm_templates.numpy(), expected)
    assert (
        dstats.PRESETS["ninco"].knn_k == 1000
        and dstats.vim_dimension(2048, None) == 1000
        and dstats.vim_dimension(768, None) == 512
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_quantile_by_radix_select_matches_numpy(dtype):
    rng = np.random.default_rng(4)
    values = np.concatenate(
        [
            rng.normal(0, 3, 40_000),
            -np.abs(rng.normal(0, 1e-3, 3000)),
            np.zeros(50),
            [-0.0, np.inf, -np.inf],
            np.repeat(1.25, 500),
        ]
    )
    tensor = torch.from_numpy(values).to(dtype)
    upcast = tensor.double().numpy()
    finite = np.isfinite(upcast)
    for q in (0.0, 0.01, 0.5, 0.9, 0.99, 1 - 0.95):
        expected = np.quantile(upcast[finite], q)
        got = fitting.exact_quantile(tensor[torch.from_numpy(finite)], q, sort_limit=1000)  # forces the radix path
        assert got == expected, (q, got, expected)
    for q in (0.0, 1.0):  # with ±inf at the ends numpy interpolates inf - inf = nan; so does this
        with np.errstate(invalid="ignore"):
            assert np.isnan(fitting.exact_quantile(tensor, q, sort_limit=10)) and np.isnan(np.quantile(upcast, q))


def test_fitting_refuses_bad_inputs(model):
    t = {k: torch.from_numpy(v) for k, v in model.items()}
    with pytest.raises(OutputsError, match="class 6 has no train features"):
        fitting.class_statistics(t["train"], t["labels"], C + 1)
    with pytest.raises(OutputsError, match=r"^labels must be \[N\] = \[900\] \(one per features row\), got \(899,\)"):
        ood_fit.FitSet(t["train"], t["labels"][:-1])
    with pytest.raises(OutputsError, match=r"^train needs features \[N, d\] and their true labels"):
        fitting.fit_detector_stats(ood_fit.FitSet(logits=t["train_logits"]))
    with pytest.raises(OutputsError, match=r"last layer weight \(6, 11\)"):
        fitting.fit_detector_stats(ood_fit.FitSet(t["train"], t["labels"]), weight=t["weight"][:, :11], bias=t["bias"])
    with pytest.raises(ConfigError, match="OOD detector 'vim': needs penultimate features"):
        det.detector_scores("vim", t["val_logits"], "logits", None, None)
    with pytest.raises(ConfigError, match="'maxlogit': needs raw logits, the outputs are 'probs'"):
        det.detector_scores("maxlogit", torch.softmax(t["val_logits"], 1), "probs")
    knn = fitting.fit_detector_stats(
        ood_fit.FitSet(t["train"], t["labels"]), detectors=["knn"]
    )  # ninco: K = 1000 > 900
    with pytest.raises(ConfigError, match="'knn': needs K=1000 ≤ the 900 fitted train features"):
        det.detector_scores("knn", t["val_logits"], "logits", t["val"], knn)
    assert "knn" not in det.available_detectors("logits", True, knn)
    with pytest.raises(ConfigError, match="unknown OOD preset 'openood'"):
        dstats.preset("openood")


def test_stats_and_features_round_trip(model, stats, tmp_path):
    loaded = dstats.DetectorStats.load(stats.save(tmp_path / "stats.pt"))
    assert loaded.vim_alpha == stats.vim_alpha and torch.equal(loaded.precision, stats.precision)
    features = dstats.Embeddings(torch.from_numpy(model["ood"]), [f"o{i}" for i in range(120)])
    for suffix in (".pt", ".npz"):
        again = dstats.Embeddings.load(features.save(tmp_path / f"f{suffix}"))
        assert again.ids == features.ids and torch.allclose(again.values.double(), features.values, atol=1e-6)
    assert torch.equal(features.aligned(["o3", "o1"], "x"), features.values[[3, 1]])
    with pytest.raises(OutputsError, match="OOD outputs: 1 ids have no features"):
        features.aligned(["o1", "zz"], "OOD outputs")
    with pytest.raises(OutputsError, match="features row 1 .*NaN"):
        dstats.Embeddings(torch.tensor([[0.0], [float("nan")]]), ["a", "b"])


def test_kl_matching_with_zero_probabilities_and_one_hot_templates():
    import scipy.special as sp

    probs = torch.softmax(torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)), 1)
    probs[0] = torch.tensor([1.0, 0, 0, 0], dtype=torch.float64)  # 0 log 0 = 0
    templates = torch.softmax(torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)), 1)
    templates[2] = torch.tensor([0, 0, 1.0, 0], dtype=torch.float64)  # one-hot: KL = inf unless p is that one-hot
    probs[1] = templates[2]  # ... as this row is: KL 0, its zeros where the template's are
    reference = np.array([[sp.rel_entr(p, q).sum() for q in templates.numpy()] for p in probs.numpy()])
    assert reference[1, 2] == 0 and np.isinf(np.delete(reference[:, 2], 1)).all()
    scores = det.detector_scores(
        "kl_matching", probs, "probs", stats=dstats.DetectorStats("ninco", klm_templates=templates)
    )
    np.testing.assert_allclose(scores.numpy(), -reference.min(axis=1), rtol=1e-12)
