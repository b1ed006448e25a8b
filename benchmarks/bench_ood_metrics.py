"""Benchmark: every OOD detector + the OOD metrics, imagenet-suite (torch) vs numpy/sklearn, same run, same data.

    uv run --frozen python benchmarks/bench_ood_metrics.py                 # 50,000 ID x 10,000 OOD, 2048-d, 1000 classes
    uv run --frozen python benchmarks/bench_ood_metrics.py --quick         # 5,000 x 1,000, 256-d
    uv run --frozen python benchmarks/bench_ood_metrics.py --device cuda   # the torch side on a GPU

Data: a synthetic linear classifier — class-clustered float32 penultimate features (ID: train and val
drawn around 1000 class centres; OOD: off-centre), logits ``W h + b``. ``--n-train`` train images
(default 50,000, 50 per class) feed the fitted statistics; the NINCO preset (KNN K = 1000, ViM's
D rule, ReAct q0.99 of train, KL-matching templates of train).

Baseline ("numpy/sklearn"): the same numbers the way NINCO's ``detection_methods.py`` and
OpenOOD compute them, vectorized where the original loops per sample would take hours here:
scipy softmax / logsumexp; class means + sklearn ``EmpiricalCovariance`` for (relative) Mahalanobis,
scored as one float64 matrix product (NINCO's per-sample GPU loop is also timed on a few rows and
extrapolated); ``np.linalg.eig`` for ViM; sklearn ``NearestNeighbors(algorithm="brute")`` for KNN
(faiss is not installed); scipy ``rel_entr`` for KL-matching (NINCO's
``pairwise_distances_argmin_min(metric=kl)`` Python callable is timed on a few rows and
extrapolated); ``np.quantile`` / ``roc_auc_score`` / ``roc_curve`` / ``precision_recall_curve`` + ``auc``
for the metrics, per OOD class (64 groups) and pooled.

Printed: seconds per phase and side, speed-ups, the largest relative difference of every
detector's scores between the sides, and the largest metric difference end to end (each side on its
own scores) and on the same (baseline) scores.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import scipy.special
import torch


def synthetic(n_id: int, n_ood: int, n_train: int, dim: int, classes: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (classes, dim)).astype(np.float32) * 0.6
    weight = (centres / np.linalg.norm(centres, axis=1, keepdims=True) * 8).astype(np.float32)
    bias = rng.normal(0, 0.1, classes).astype(np.float32)

    def draw(n, offset):
        labels = np.arange(n) % classes
        feats = centres[labels] + rng.normal(0, 0.5, (n, dim)).astype(np.float32) + offset
        return np.maximum(feats, 0).astype(np.float32), labels  # post-ReLU-like, as pooled CNN features

    train, train_labels = draw(n_train, 0.3)
    val, _ = draw(n_id, 0.3)
    ood = np.maximum(rng.normal(0.3, 0.7, (n_ood, dim)), 0).astype(np.float32)
    logits = {name: x @ weight.T + bias for name, x in (("train", train), ("val", val), ("ood", ood))}
    return {
        "train": train,
        "train_labels": train_labels,
        "val": val,
        "ood": ood,
        "weight": weight,
        "bias": bias,
        "groups": rng.integers(0, 64, n_ood),
        **{f"{k}_logits": v for k, v in logits.items()},
    }


class Clock:
    def __init__(self, device: str):
        self.device, self.times = device, {}

    def __call__(self, key: str, fn):
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        value = fn()
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        self.times[key] = self.times.get(key, 0.0) + time.perf_counter() - start
        return value


# -- imagenet-suite ----------------------------------------------------------------------------------------


def suite(data: dict, device: str, clock: Clock) -> tuple[dict, dict]:
    from imagenet_suite.scoring.metrics import ood
    from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats
    from imagenet_suite.scoring.metrics.ood_detectors import DETECTORS, detector_scores
    from imagenet_suite.scoring.metrics.ood_fit import FitSet

    t = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device) for k, v in data.items()}
    stats = clock(
        "fit",
        lambda: fit_detector_stats(
            FitSet(t["train"], t["train_labels"], t["train_logits"]),
            weight=t["weight"],
            bias=t["bias"],
            preset_name="ninco",
        ),
    )
    scores = {}
    for name in DETECTORS:
        scores[name] = clock(
            f"score/{name}",
            lambda name=name: (
                detector_scores(name, t["val_logits"], "logits", t["val"], stats),
                detector_scores(name, t["ood_logits"], "logits", t["ood"], stats),
            ),
        )
    groups = t["groups"]
    names = [f"class{g:02d}" for g in range(64)]
    metrics = {
        name: clock("metrics", lambda ids=ids, oods=oods: ood.grouped_ood_metrics(ids, oods, groups, names))
        for name, (ids, oods) in scores.items()
    }
    return (
        {k: (a.cpu().numpy(), b.cpu().numpy()) for k, (a, b) in scores.items()},
        {k: _flatten(v) for k, v in metrics.items()},
    )


def _flatten(grouped) -> dict:
    out = {f"macro/{m}": v for m, v in grouped.macro.items()}
    out.update({f"pooled/{m}": (v.value if hasattr(v, "value") else v) for m, v in grouped.pooled.items()})
    return out


# -- numpy / sklearn -------------------------------------------------------------------------------------------


def baseline(data: dict, k: int, clock: Clock) -> tuple[dict, dict, dict]:
    from sklearn.covariance import EmpiricalCovariance
    from sklearn.neighbors import NearestNeighbors

    train, labels, w, b = (
        data["train"],
        data["train_labels"],
        data["weight"].astype(np.float64),
        data["bias"].astype(np.float64),
    )
    classes, dim = w.shape
    sets = {"val": data["val"], "ood": data["ood"]}
    extrapolated = {}

    def fit():
        means = np.stack([train[labels == c].mean(axis=0) for c in range(classes)]).astype(np.float64)
        centred = train.astype(np.float64) - means[labels]
        prec = EmpiricalCovariance(assume_centered=True).fit(centred).precision_
        mean_g = train.astype(np.float64).mean(axis=0)
        prec_g = EmpiricalCovariance(assume_centered=True).fit(train.astype(np.float64) - mean_g).precision_
        probs = scipy.special.softmax(data["train_logits"].astype(np.float64), axis=1)
        predicted = probs.argmax(axis=1)
        templates = np.stack(
            [
                probs[predicted == c].mean(axis=0) if (predicted == c).any() else np.eye(classes)[c]
                for c in range(classes)
            ]
        )
        u = -np.linalg.pinv(w) @ b
        vim_dim = 1000 if dim >= 2048 else 512 if dim >= 768 else dim // 2
        eig_vals, eig_vecs = np.linalg.eig(EmpiricalCovariance(assume_centered=True).fit(train - u).covariance_)
        ns = np.ascontiguousarray(eig_vecs.T[np.argsort(eig_vals * -1)[vim_dim:]].T).real
        alpha = data["train_logits"].max(axis=-1).mean() / np.linalg.norm((train - u) @ ns, axis=-1).mean()
        normalized = train / np.linalg.norm(train, axis=-1, keepdims=True) + 1e-10
        knn = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(normalized)
        return dict(
            means=means,
            prec=prec,
            mean_g=mean_g,
            prec_g=prec_g,
            templates=templates,
            u=u,
            ns=ns,
            alpha=alpha,
            knn=knn,
            clip=np.quantile(train, 0.99),
        )

    f = clock("fit", fit)

    def maha(x, means, prec):
        x = x.astype(np.float64)
        xp = x @ prec
        return (xp * x).sum(1)[:, None] - 2 * xp @ means.T + ((means @ prec) * means).sum(1)[None, :]

    def score(name, which):
        x, logits = sets[which], data[f"{which}_logits"].astype(np.float64)
        if name == "msp":
            return scipy.special.softmax(logits, axis=1).max(axis=1)
        if name == "maxlogit":
            return logits.max(axis=1)
        if name == "energy":
            return scipy.special.logsumexp(logits, axis=1)
        if name == "kl_matching":
            p = scipy.special.softmax(logits, axis=1)
            with np.errstate(divide="ignore"):
                log_templates = np.log(f["templates"])
            blocks = [p[i : i + 1024] for i in range(0, len(p), 1024)]
            return -np.concatenate(
                [np.min(scipy.special.xlogy(q, q).sum(1)[:, None] - q @ log_templates.T, axis=1) for q in blocks]
            )
        if name == "mahalanobis":
            return -maha(x, f["means"], f["prec"]).min(axis=1)
        if name == "relative_mahalanobis":
            return -maha(x, f["means"], f["prec"]).min(axis=1) + maha(x, f["mean_g"][None], f["prec_g"])[:, 0]
        if name in ("cosine", "rcos"):
            mn = f["means"] / np.linalg.norm(f["means"], axis=1, keepdims=True)
            cos = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ mn.T
            return cos.max(axis=1) if name == "cosine" else scipy.special.softmax(cos, axis=1).max(axis=1)
        if name == "knn":
            distances, _ = f["knn"].kneighbors(x / np.linalg.norm(x, axis=-1, keepdims=True) + 1e-10)
            return -(distances[:, -1] ** 2)
        if name == "react_energy":
            return scipy.special.logsumexp(np.clip(x, None, f["clip"]) @ w.T + b, axis=-1)
        if name == "vim":
            return scipy.special.logsumexp(logits, axis=-1) - f["alpha"] * np.linalg.norm(
                (x - f["u"]) @ f["ns"], axis=-1
            )
        raise KeyError(name)

    from imagenet_suite.scoring.metrics.ood_detectors import DETECTORS

    scores = {
        name: clock(f"score/{name}", lambda name=name: (score(name, "val"), score(name, "ood"))) for name in DETECTORS
    }
    extrapolated.update(_extrapolations(data, f))
    metrics = {
        name: clock("metrics", lambda ids=ids, oods=oods: _sklearn_metrics(ids, oods, data["groups"]))
        for name, (ids, oods) in scores.items()
    }
    return scores, metrics, extrapolated


def _extrapolations(data: dict, f: dict) -> dict:
    """Seconds NINCO's literal loops would take for all ID + OOD rows, from a timed sample of rows."""
    from sklearn.metrics import pairwise_distances_argmin_min

    def kl(p, q):
        return np.sum(np.where(p != 0, p * np.log(p / q), 0))

    rows = len(data["val"]) + len(data["ood"])
    probs = scipy.special.softmax(data["ood_logits"][:20].astype(np.float64), axis=1)
    start = time.perf_counter()
    pairwise_distances_argmin_min(probs, f["templates"], metric=kl)
    klm = (time.perf_counter() - start) / 20 * rows
    mean, prec = torch.from_numpy(f["means"]), torch.from_numpy(f["prec"])
    start = time.perf_counter()
    for x in torch.from_numpy(data["ood"][:5]).double():  # NINCO evaluate_Mahalanobis, on the CPU here
        (((x - mean) @ prec) * (x - mean)).sum(dim=-1).min().item()
    maha = (time.perf_counter() - start) / 5 * rows
    return {"kl_matching_ninco_loop_s": round(klm, 1), "mahalanobis_ninco_loop_s": round(maha, 1)}


def _sklearn_metrics(ids: np.ndarray, oods: np.ndarray, groups: np.ndarray) -> dict:
    from sklearn import metrics as skm

    def one(i, o):
        conf = np.concatenate([i, o])
        is_ood = np.r_[np.zeros(len(i)), np.ones(len(o))]
        fpr, tpr, _ = skm.roc_curve(is_ood, -conf)
        p_in, r_in, _ = skm.precision_recall_curve(1 - is_ood, conf)
        p_out, r_out, _ = skm.precision_recall_curve(is_ood, -conf)
        return {
            "auroc": skm.roc_auc_score(1 - is_ood, conf),
            "fpr95": float((o >= np.quantile(i, 1 - 0.95)).mean()),
            "fpr95_openood_v15": float(fpr[np.argmax(tpr >= 0.95)]),
            "aupr_in": skm.auc(r_in, p_in),
            "aupr_out": skm.auc(r_out, p_out),
        }

    per_group = [one(ids, oods[groups == g]) for g in range(64)]
    out = {f"macro/{m}": float(np.mean([r[m] for r in per_group])) for m in per_group[0]}
    out.update({f"pooled/{m}": v for m, v in one(ids, oods).items()})
    return out


def _max_rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-id", type=int, default=50_000)
    parser.add_argument("--n-ood", type=int, default=10_000)
    parser.add_argument("--n-train", type=int, default=50_000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="5,000 x 1,000, 256-d, 5,000 train")
    args = parser.parse_args()
    if args.quick:
        args.n_id, args.n_ood, args.n_train, args.dim = 5_000, 1_000, 5_000, 256
    data = synthetic(args.n_id, args.n_ood, args.n_train, args.dim, args.classes)
    ours_clock, base_clock = Clock(args.device), Clock("cpu")
    ours_scores, ours_metrics = suite(data, args.device, ours_clock)
    base_scores, base_metrics, extrapolated = baseline(data, 1000, base_clock)
    agreement = {
        name: max(
            _max_rel(ours_scores[name][0], base_scores[name][0]), _max_rel(ours_scores[name][1], base_scores[name][1])
        )
        for name in ours_scores
    }
    metric_gap = max(abs(ours_metrics[d][m] - base_metrics[d][m]) for d in ours_metrics for m in ours_metrics[d])
    from imagenet_suite.scoring.metrics import ood

    names = [f"class{g:02d}" for g in range(64)]
    same_scores_gap = max(
        abs(_flatten(ood.grouped_ood_metrics(ids, oods, data["groups"], names))[m] - base_metrics[d][m])
        for d, (ids, oods) in base_scores.items()
        for m in base_metrics[d]
    )
    phases = sorted(set(ours_clock.times) | set(base_clock.times))
    table = {
        p: {
            "imagenet_suite_s": round(ours_clock.times.get(p, 0), 2),
            "numpy_sklearn_s": round(base_clock.times.get(p, 0), 2),
            "speedup": round(base_clock.times.get(p, 0) / max(ours_clock.times.get(p, 1e-9), 1e-9), 1),
        }
        for p in phases
    }
    total_ours, total_base = sum(ours_clock.times.values()), sum(base_clock.times.values())
    print(
        json.dumps(
            {
                "sizes": vars(args),
                "torch_threads": torch.get_num_threads(),
                "phases": table,
                "total": {
                    "imagenet_suite_s": round(total_ours, 1),
                    "numpy_sklearn_s": round(total_base, 1),
                    "speedup": round(total_base / total_ours, 2),
                },
                "ninco_literal_loops_extrapolated": extrapolated,
                "max_relative_score_difference": {k: float(f"{v:.2e}") for k, v in agreement.items()},
                "max_metric_difference_end_to_end": float(f"{metric_gap:.2e}"),
                "max_metric_difference_on_the_same_scores": float(f"{same_scores_gap:.2e}"),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
