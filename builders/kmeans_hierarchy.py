"""``kmeans_hierarchy``: a K-means class hierarchy from a model's outputs on a labelled dataset.

LCA-on-the-Line (Shi et al. 2024), Appendix F.2: per-class mean vectors (logits or features) of a
model on a labelled dataset, L2-normalised, clustered with K-means at k = 2^0 … 2^⌊log2 C⌋; level ℓ
assigns each class a cluster. Levels are clustered independently, as the paper's code does, so the result is not a
strict tree (two classes can share a level-ℓ cluster but not a level-(ℓ−1) one); the card reports
the ultrametric violation rate, and ``--option nested=true`` builds a strict tree instead.
Deterministic for a seed.

Inputs: ``--input`` a built dataset with a ``label`` column, and ``--option outputs=FILE`` — an
``.npz``/``.pt`` holding ``ids`` (the dataset's ids) and one ``[N, D]`` array named ``features``
or ``logits``. Output: split ``classes`` (``wnid``, ``class_index`` in the dataset's label space,
``level_0`` …) and the distance matrices beside it (``distance_*.npy``, ``lca_level.npy``; rows and
columns in the order of the ``classes`` split). ``--option classes=present`` builds the hierarchy
over the classes that occur (e.g. the 200 ImageNet-A classes) instead of the whole label space.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from imagenet_suite.core.builder import Builder, BuilderConfig, Option, Prepared, Shard
from imagenet_suite.core.sources import ResolvedSource, SourceResolver, sha256_file
from imagenet_suite.errors import InvalidSourceData, param

from ._citations import LCA_ON_THE_LINE, cite

if TYPE_CHECKING:
    import numpy as np

# NumPy and the hierarchies are imported where they are used: ``imagenet-suite list``/``info`` import this
# module for its metadata only

VECTOR_NAMES = ("features", "logits")


def read_vectors(path: Path) -> tuple[list[str], np.ndarray]:
    """``(ids, vectors [N, D] float32)`` from an ``.npz`` (``np.savez(ids=..., features=...)``) or ``.pt`` dict."""
    import numpy as np

    if not path.is_file():
        raise InvalidSourceData(f"{path}: no such outputs file")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            entries = {name: archive[name] for name in archive.files}
    elif path.suffix == ".pt":
        from imagenet_suite.scoring.outputs import load_torch_file

        loaded = load_torch_file(path, InvalidSourceData, f"a dict of 'ids' and one of {VECTOR_NAMES}")
        if not isinstance(loaded, dict):
            raise InvalidSourceData(f"{path}: holds a {type(loaded).__name__}; expected a dict of 'ids' and vectors")
        entries = {k: (v.float().numpy() if hasattr(v, "numpy") else v) for k, v in loaded.items()}
    else:
        raise InvalidSourceData(f"{path}: expected an .npz or .pt file")
    names = [n for n in VECTOR_NAMES if n in entries]
    if "ids" not in entries or len(names) != 1:
        raise InvalidSourceData(f"{path}: expected 'ids' and exactly one of {VECTOR_NAMES}, found {sorted(entries)}")
    vectors = np.asarray(entries[names[0]], dtype=np.float32)
    ids = [str(i) for i in np.asarray(entries["ids"]).tolist()]
    if vectors.ndim != 2 or len(ids) != len(vectors):
        raise InvalidSourceData(
            f"{path}: {names[0]!r} must be [N, D] with one row per id; got {vectors.shape} for {len(ids)} ids"
        )
    if not np.isfinite(vectors).all():
        raise InvalidSourceData(f"{path}: {names[0]!r} contains NaN or inf")
    return ids, vectors


class KmeansHierarchy(Builder):
    NAME = "kmeans_hierarchy"
    VERSION = "1.0.0"
    RELEASE_NOTES = {
        "1.0.0": "Initial release: K-means class hierarchy of LCA-on-the-Line (Shi et al. 2024, App. F.2; "
        "independent levels by default)."
    }
    CONFIGS = (
        BuilderConfig(
            "default",
            "cluster of every class at each level + distance matrices",
            shard_size=1_000_000,
            row_group_rows=100_000,
        ),
    )
    OPTIONS = {
        "outputs": Option("", help="model outputs (.npz/.pt) with 'ids' and 'features' or 'logits'"),
        "config": Option("", help="config of the --input dataset (default: its only config)"),
        "split": Option("", help="split of the --input dataset (default: its only split)"),
        "nested": Option(False, help="cluster each level inside the previous one (a strict tree)"),
        "n_init": Option(1, help="K-means restarts per level"),
        "classes": Option(
            "all",
            ("all", "present"),
            help="all: every class of the label space must have samples; present: only the classes "
            "that occur (e.g. the 200 ImageNet-A classes)",
        ),
    }
    SEEDED = True
    KEY_COLUMN = "wnid"
    CITATION = cite(LCA_ON_THE_LINE)

    def prepare(self, resolver: SourceResolver) -> Prepared:
        import numpy as np

        from imagenet_suite.hierarchies.kmeans import KMeansHierarchy

        if not self.options["outputs"]:
            raise InvalidSourceData(
                f"kmeans_hierarchy needs {param('builder_options')} outputs=FILE (an .npz/.pt with ids and features or logits)"
            )
        path = Path(self.options["outputs"])
        ids, vectors = read_vectors(path)
        folder, dataset_source = resolver.input_dataset(
            None, build_hint="Pass the labelled dataset the outputs were computed on (it needs a 'label' column)."
        )
        config = folder.resolve_config(self.options["config"] or None)
        split = folder.resolve_split(config, self.options["split"] or None)
        if "label" not in folder.column_names(config):
            raise InvalidSourceData(f"{folder.path}: config {config!r} has no 'label' column to group classes by")
        label_of = dict(zip(*folder.read_table(config, split, ["id", "label"]).to_pydict().values()))
        missing = [i for i in ids if i not in label_of]
        if missing:
            raise InvalidSourceData(
                f"{path}: {len(missing)} id(s) are not in {folder.path} {config}/{split}, e.g. {missing[0]!r}"
            )
        names = folder.features(config)["label"].names
        labels = np.array([label_of[i] for i in ids])
        classes = sorted(set(labels.tolist())) if self.options["classes"] == "present" else list(range(len(names)))
        position = {c: p for p, c in enumerate(classes)}
        self.num_classes = len(classes)
        hierarchy = KMeansHierarchy.fit(
            vectors,
            np.array([position[c] for c in labels]),
            len(classes),
            seed=self.seed,
            n_init=self.options["n_init"],
            nested=self.options["nested"],
            class_wnids=[names[c] for c in classes],
        )
        sources = {
            "outputs": ResolvedSource("outputs", path, path.stat().st_size, sha256_file(path)),
            "dataset": dataset_source,
        }
        return Prepared(sources, {"hierarchy": hierarchy, "class_indices": classes})

    num_classes = 1000  # set by prepare() from the input dataset's label names

    def features(self):
        from imagenet_suite.hierarchies import export
        from imagenet_suite.hierarchies.kmeans import num_levels

        return export.assignment_features(num_levels(self.num_classes))

    def split_keys(self, prepared: Prepared) -> dict[str, list[str]]:
        return {"classes": list(prepared.data["hierarchy"].class_wnids)}

    def generate(self, prepared: Prepared, shard: Shard) -> Iterator[dict]:
        """Rows keyed by wnid; ``class_index`` is the class's index in the input dataset's label space."""
        from imagenet_suite.hierarchies import export

        rows = {row["wnid"]: row for row in export.assignment_rows(prepared.data["hierarchy"])}
        for wnid in shard.keys:
            row = rows[wnid]
            yield {**row, "class_index": prepared.data["class_indices"][row["class_index"]]}

    def extra_files(self, prepared: Prepared) -> dict[str, bytes]:
        from imagenet_suite.hierarchies import export

        return export.matrix_files(prepared.data["hierarchy"])

    def card_context(self, prepared: Prepared) -> dict:
        hierarchy = prepared.data["hierarchy"]
        return {"levels": hierarchy.top_level, "violation_rate": f"{hierarchy.ultrametric_violation_rate():.4f}"}
