"""Loading built dataset folders (+ model outputs) into FiftyOne for review: fields, views, idempotency, errors.

In-process against a private mongod (FiftyOne's own binary, a temporary folder, a unix-socket URI).
"""

from __future__ import annotations

import time
import types
import warnings

import numpy as np
import psutil
import pytest
import torch

from imagenet_suite import classes
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import DatasetFolderError, OutputsError
from imagenet_suite.review import database, documents, views
from imagenet_suite.review.errors import ReviewError
from imagenet_suite.review.load import LoadOptions, load_for_review
from imagenet_suite.review.predictions import imagenet_display_names
from imagenet_suite.scoring.outputs import ModelOutputs
from tests.fixtures.review_datasets import CLASSES, tiny_ood_ids, tiny_review_setup, write_outputs
from tests.fixtures.review_mongo import fiftyone_on_private_db
from tests.helpers import build_val

CONFIDENT = {
    "donuts_000_1000": (931, 0.95),
    "s_sky_001_1001": (500, 0.7),
    "waffles_001_1001": (10, 0.55),
    "waffles_002_1002": (20, 0.3),
}


@pytest.fixture(scope="module")
def fo():
    return fiftyone_on_private_db()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_review_setup(tmp_path_factory.mktemp("tiny-ood"), CONFIDENT)


def _softmax(path):
    loaded = ModelOutputs.load(path)
    logits = loaded.values.double().numpy()
    probs = np.exp(logits - logits.max(1, keepdims=True))
    return dict(zip(loaded.ids, probs / probs.sum(1, keepdims=True))), dict(zip(loaded.ids, logits))


def test_samples_carry_images_ground_truth_and_predictions(fo, tiny, tmp_path):
    folder, outputs, _ = tiny
    dataset = load_for_review(
        folder, options=LoadOptions(outputs=outputs, name="load-fields", cache_dir=tmp_path / "cache")
    )

    images = {
        r["id"]: r for r in DatasetFolder(folder).read_table(None, None, ["id", "image", "class_name"]).to_pylist()
    }
    assert sorted(dataset.values("row_id")) == sorted(images) and len(dataset) == 12
    probs, logits = _softmax(outputs)
    names = imagenet_display_names()
    for sample in dataset.iter_samples():
        row = images[sample.row_id]
        with open(sample.filepath, "rb") as handle:
            assert handle.read() == row["image"]["bytes"]  # the original bytes, materialised once
        folder_name = next(c for c in CLASSES if sample.row_id.startswith(c + "_"))
        assert (sample.ground_truth.label, sample.ground_truth.raw_label) == (row["class_name"], folder_name)
        assert sample.is_ood and sample.source_dataset == CLASSES[folder_name][1]
        top = np.argsort(-probs[sample.row_id])[:5]
        assert [c.label for c in sample.predictions.classifications] == [names[i] for i in top]
        assert [c.raw_label for c in sample.predictions.classifications] == [classes.imagenet_wnids()[i] for i in top]
        assert np.allclose([c.confidence for c in sample.predictions.classifications], probs[sample.row_id][top])
        assert sample.predicted_class.label == names[top[0]] and sample.msp == pytest.approx(probs[sample.row_id].max())
        assert sample.energy == pytest.approx(np.log(np.exp(logits[sample.row_id]).sum()))
        assert sample.metadata.width == 16 and sample.metadata.mime_type in ("image/png", "image/jpeg")


def test_documents_are_what_fiftyone_itself_would_store(fo, tiny, tmp_path):
    folder, outputs, _ = tiny
    dataset = load_for_review(
        folder, options=LoadOptions(outputs=outputs, name="load-docs", cache_dir=tmp_path / "cache")
    )
    scratch = fo.Dataset()
    scratch.add_samples([sample.copy() for sample in dataset.iter_samples()])  # FiftyOne's own serialisation

    def stored(ds):
        return {d["row_id"]: _without_ids(d) for d in ds._sample_collection.find({})}

    ours, theirs = stored(dataset), stored(scratch)
    scratch.delete()
    assert all(0.999 <= d.pop("_rand") < 1 for d in [*ours.values(), *theirs.values()])  # random by design
    assert ours == theirs and len(ours) == 12
    assert set(next(iter(ours.values()))) >= {"filepath", "metadata", "ground_truth", "predictions", "msp"}


def test_declared_fields_are_those_add_sample_field_declares_one_by_one(fo):
    """``documents.declare`` merges the review's fields into the schema at once; what FiftyOne stores is what its
    ``add_sample_field`` stores declaring them one by one: types, labels' documents and attributes, a list's
    subfield, the order."""
    plan = types.SimpleNamespace(extra_kinds={"difficulty": "int", "hard": "bool", "note": "string", "x": "float"})
    fields = {**documents.review_fields(fo, plan), "unit_tests_failed": fo.ListField(fo.StringField())}
    merged, one_by_one = fo.Dataset(), fo.Dataset()
    try:
        documents.declare(merged, fields)
        for path, field in fields.items():
            kwargs = {"embedded_doc_type": getattr(field, "document_type", None)}
            if isinstance(field, fo.ListField):
                kwargs["subfield"] = type(field.field)
            one_by_one.add_sample_field(path, type(field), **kwargs)

        def stored(dataset):
            return [_without_ids(field.to_dict()) for field in dataset._doc.sample_fields]

        assert stored(merged) == stored(one_by_one)
        assert "predictions.classifications.raw_label" in merged.get_field_schema(flat=True)
        documents.declare(merged, fields)  # declared already: nothing changes
        assert stored(merged) == stored(one_by_one)
    finally:
        merged.delete()
        one_by_one.delete()


def _without_ids(value):
    """A stored document without what differs by design: ids, dataset id, timestamps."""
    if isinstance(value, dict):
        return {
            k: _without_ids(v)
            for k, v in value.items()
            if k not in ("_id", "_dataset_id", "created_at", "last_modified_at")
        }
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def test_saved_views_surface_candidates_classes_and_decisions(fo, tiny, tmp_path):
    folder, outputs, _ = tiny
    dataset = load_for_review(
        folder, options=LoadOptions(outputs=outputs, name="load-views", cache_dir=tmp_path / "cache", threshold=0.5)
    )
    probs, _ = _softmax(outputs)

    assert set(dataset.list_saved_views()) == {
        "unreviewed",
        "decided_id",
        "decided_ood",
        "unsure",
        "conflicting_decisions",
        "contamination_candidates",
        "by_predicted_imagenet_class",
        *(f"class: {c}" for c in CLASSES),
        *(f"most_id_like: {d}" for d in ("msp", "maxlogit", "energy")),  # the detectors logits allow
        "detector_disagreements",
    }
    expected = sorted((i for i in probs if probs[i].max() >= 0.5), key=lambda i: -probs[i].max())
    assert dataset.load_saved_view("contamination_candidates").values("row_id") == expected
    assert len(expected) == 3  # the fixture's three confident OOD rows, most confident first
    for name in CLASSES:
        view = dataset.load_saved_view(f"class: {name}")
        assert sorted(view.values("row_id")) == sorted(i for i in tiny_ood_ids() if i.startswith(name + "_"))
        assert view.values("msp") == sorted(view.values("msp"), reverse=True)
    groups = dataset.load_saved_view("by_predicted_imagenet_class")
    assert groups._is_dynamic_groups and groups.count() == 12
    # the App opens on the candidates, whose description says how to review; tiles show labelled chips
    assert views.opening_view(dataset) == ("contamination_candidates", "contamination-candidates")
    description = dataset.get_saved_view_info("contamination_candidates")["description"]
    assert f"review export {dataset.name} --out decisions.csv" in description and "tag icon" in description
    assert "review export" not in dataset.get_saved_view_info("unreviewed")["description"]
    assert dataset.app_config.active_fields.paths == [views.CARD_FIELD]
    names = imagenet_display_names()
    for sample in dataset.select_by("row_id", expected):
        top = int(probs[sample.row_id].argmax())
        assert sample.card == [
            f"truth: {sample.ground_truth.label}",
            f"model: {names[top]}",
            f"MSP: {probs[sample.row_id].max():.2f}",
        ]
    dataset.match(fo.ViewField("row_id") == expected[0]).tag_samples("id")
    assert len(dataset.load_saved_view("unreviewed")) == 11  # views are live queries
    assert dataset.load_saved_view("decided_id").values("row_id") == [expected[0]]


def test_reloading_is_idempotent_keeps_decisions_and_resumes(fo, tiny, tmp_path):
    folder, outputs, _ = tiny
    cache = tmp_path / "cache"
    dataset = load_for_review(folder, options=LoadOptions(outputs=outputs, name="load-again", cache_dir=cache))
    before = dict(zip(dataset.values("row_id"), dataset.values("id")))
    files = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    dataset.match(fo.ViewField("row_id") == "waffles_003_1003").tag_samples("ood")

    again = load_for_review(folder, options=LoadOptions(outputs=outputs, name="load-again", cache_dir=cache))
    assert dict(zip(again.values("row_id"), again.values("id"))) == before
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()} == files  # nothing rewritten
    assert again.match_tags("ood").values("row_id") == ["waffles_003_1003"]

    lost = again.match(fo.ViewField("row_id").is_in(tiny_ood_ids()[:5]))
    again.delete_samples(lost)  # as if a first load had been interrupted
    resumed = load_for_review(folder, options=LoadOptions(outputs=outputs, name="load-again", cache_dir=cache))
    after = dict(zip(resumed.values("row_id"), resumed.values("id")))
    assert set(after) == set(before) and all(after[i] == before[i] for i in tiny_ood_ids()[5:])
    assert resumed.match_tags("ood").values("row_id") == ["waffles_003_1003"]


def test_new_outputs_replace_predictions(fo, tiny, tmp_path):
    folder, outputs, _root = tiny
    dataset = load_for_review(
        folder, options=LoadOptions(outputs=outputs, name="load-outputs", cache_dir=tmp_path / "cache")
    )
    ids = tiny_ood_ids()
    other = write_outputs(tmp_path / "other.pt", ids[:6], {ids[3]: (7, 0.9)}, seed=1)
    dataset = load_for_review(
        folder, options=LoadOptions(outputs=other, name="load-outputs", cache_dir=tmp_path / "cache")
    )
    msp = dict(zip(dataset.values("row_id"), dataset.values("msp")))
    assert msp[ids[3]] == pytest.approx(0.9) and all(msp[i] is None for i in ids[6:])
    cards = dict(zip(dataset.values("row_id"), dataset.values(views.CARD_FIELD)))
    assert cards[ids[3]][2] == "MSP: 0.90" and all(len(cards[i]) == 1 for i in ids[6:])  # the card follows
    assert dataset.load_saved_view("contamination_candidates").values("row_id") == [ids[3]]
    assert dataset.info["imagenet_suite"]["outputs"]["file"].endswith("other.pt")


def test_imagenet_val_gets_readable_imagenet_names(fo, val_layouts, tmp_path):
    folder = build_val(val_layouts, "folders", tmp_path / "out")
    ids = DatasetFolder(folder).read_table(None, None, ["id", "label"]).to_pylist()
    outputs = write_outputs(tmp_path / "val.npz", [r["id"] for r in ids], {ids[0]["id"]: (3, 0.99)})
    dataset = load_for_review(
        folder, options=LoadOptions(outputs=outputs, name="load-val", cache_dir=tmp_path / "cache")
    )
    names = imagenet_display_names()
    truth = dict(zip(dataset.values("row_id"), dataset.values("ground_truth.label")))
    assert truth == {r["id"]: names[r["label"]] for r in ids}
    assert not any(dataset.values("is_ood")) and dataset.info["imagenet_suite"]["ood_classes"] == []
    assert len(dataset.load_saved_view("contamination_candidates")) == 0  # in-distribution: no candidates
    assert names.count("crane (n02012849)") == 1 and "crane" not in names  # duplicate lemmas made unique


def test_bad_inputs_are_refused_before_anything_is_written(fo, tiny, tmp_path):
    folder, _, _ = tiny
    before = set(fo.list_datasets())
    cache = tmp_path / "cache"
    plain = tmp_path / "not-a-dataset"
    plain.mkdir()
    (plain / "x.parquet").write_bytes(b"")
    with pytest.raises(DatasetFolderError, match="not-a-dataset is not an imagenet-suite dataset folder"):
        load_for_review(plain, options=LoadOptions(name="bad-1", cache_dir=cache))
    ids = tiny_ood_ids()
    stranger = write_outputs(tmp_path / "stranger.npz", [*ids, "not_a_row"], {})
    with pytest.raises(ReviewError, match="1 id\\(s\\) that are not rows of the dataset, e.g. 'not_a_row'"):
        load_for_review(folder, options=LoadOptions(outputs=stranger, name="bad-2", cache_dir=cache))
    ten_way = tmp_path / "ten.npz"
    ModelOutputs(torch.zeros(len(ids), 10), ids, "logits").save(ten_way)
    with pytest.raises(ReviewError, match="10 scores per row; review needs the 1000 ImageNet-1k classes"):
        load_for_review(folder, options=LoadOptions(outputs=ten_way, name="bad-3", cache_dir=cache))
    with pytest.raises(OutputsError, match="does not exist"):
        load_for_review(folder, options=LoadOptions(outputs=tmp_path / "missing.pt", name="bad-4", cache_dir=cache))
    with pytest.raises(ReviewError, match="^threshold 1.5: expected an MSP between 0 and 1"):
        load_for_review(folder, options=LoadOptions(name="bad-5", cache_dir=cache, threshold=1.5))
    assert set(fo.list_datasets()) == before and not cache.exists()


def test_the_database_uri_names_a_uuid_representation():
    """mongoengine (FiftyOne connects through it) warns on a URI without one, in every process."""
    import mongoengine

    for uri in (database.socket_uri("/run/me/mongodb.sock"), database.journaled_uri("mongodb://localhost:27017")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the DeprecationWarning "No uuidRepresentation is specified!" fails
            mongoengine.register_connection("uuid-check", host=uri)
        mongoengine.disconnect("uuid-check")


def test_database_is_local_only_and_journaled(fo):
    assert "journal=true" in fo.config.database_uri and fo.config.database_uri.startswith("mongodb://%2F")
    options = "journal=true&uuidRepresentation=standard"
    assert database.journaled_uri("mongodb://localhost:27017") == f"mongodb://localhost:27017/?{options}"
    assert database.journaled_uri("mongodb://u:p@[::1]:1/db?w=1") == f"mongodb://u:p@[::1]:1/db?w=1&{options}"
    assert database.journaled_uri("/run/me/mongodb.sock") == f"mongodb://%2Frun%2Fme%2Fmongodb.sock/?{options}"
    kept = database.journaled_uri("mongodb://localhost:1/?uuidrepresentation=pythonLegacy&journal=false")
    assert kept == "mongodb://localhost:1/?uuidrepresentation=pythonLegacy&journal=false"  # set by the user
    assert database.journaled_uri("mongodb://%2Frun%2Fme%2Fmongodb.sock") == database.socket_uri("/run/me/mongodb.sock")
    for uri, message in [
        ("mongodb://10.0.0.5:27017", "must be on loopback"),
        ("mongodb://127.0.0.1:1,db.example.org:2", "must be on loopback"),
        ("mongodb://%2Frun%2Fme%2Fnot-a-socket", "must be on loopback"),
        ("mongodb+srv://cluster.example.org", "expected mongodb://"),
        ("http://127.0.0.1:27017", "expected mongodb://"),
    ]:
        with pytest.raises(ReviewError, match=message):
            database.journaled_uri(uri)
    with pytest.raises(ReviewError, match="already uses the database"):
        database.connect("mongodb://127.0.0.1:1")


def test_embedded_mode_refuses_a_fiftyone_database_service_on_its_folder(tmp_path):
    """FiftyOne's own database service (TCP, and it holds the folder's lock) on our data folder is refused;
    one on another folder does not matter (we never attach to it)."""
    import subprocess
    import sys

    child = (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', "
        f"'--dbpath', {str(tmp_path / 'theirs')!r}]); time.sleep(60)"
    )
    fake = subprocess.Popen([sys.executable, "-c", child, *database.SERVICE_ARGS])
    try:
        for _ in range(100):
            if database.running_services().get(fake.pid):
                break
            time.sleep(0.1)
        assert database.running_services()[fake.pid] == tmp_path / "theirs"
        database._refuse_fiftyone_service_on(tmp_path / "ours")  # another folder: irrelevant
        with pytest.raises(ReviewError, match=f"pid {fake.pid}\\) is running on .*theirs, over TCP"):
            database._refuse_fiftyone_service_on(tmp_path / "theirs")
    finally:
        for process in psutil.Process(fake.pid).children(recursive=True) + [psutil.Process(fake.pid)]:
            process.kill()
        fake.wait()


def test_outputs_can_come_later(fo, tiny, tmp_path):
    folder, outputs, _ = tiny
    dataset = load_for_review(folder, options=LoadOptions(name="load-later", cache_dir=tmp_path / "cache"))
    assert (
        "contamination_candidates" not in dataset.list_saved_views() and "class: donuts" in dataset.list_saved_views()
    )
    assert dataset.exists("predictions").count() == 0 and len(dataset) == 12

    dataset = load_for_review(
        folder, options=LoadOptions(outputs=outputs, name="load-later", cache_dir=tmp_path / "cache")
    )
    assert dataset.exists("predictions").count() == 12
    assert dataset.load_saved_view("contamination_candidates").values("row_id") == sorted(
        (i for i, (_, p) in CONFIDENT.items() if p >= 0.5), key=lambda i: -CONFIDENT[i][1]
    )
