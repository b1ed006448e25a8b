"""Contamination taxonomy in decisions (table format 2), two reviewers' agreement (Cohen's kappa), `review precheck`."""

from __future__ import annotations

import json
import math
import random
import warnings

import pytest
from sklearn.metrics import cohen_kappa_score

from imagenet_suite.review import decisions
from imagenet_suite.review.agreement import cohen_kappa, compare_labels
from imagenet_suite.review.decision_table import (
    Decision,
    DecisionTable,
    read_decision_table,
    write_decision_table,
)
from imagenet_suite.review.errors import DecisionTableError, ReviewError
from imagenet_suite.review.load import LoadOptions, load_for_review
from tests.fixtures.review_datasets import app_tags, tiny_ood_ids, tiny_review_setup
from tests.fixtures.review_mongo import fiftyone_on_private_db, shared_mongod

IDS = tiny_ood_ids()
PLATE, HAY, BURRITO = "n07579787", "n07802026", "n07880968"  # ImageNet-1k wnids
HEADER2 = "id,decision,reviewer,timestamp,note,contamination,incidental_mode,imagenet_classes"


def taxonomy_table(version: int = 1) -> DecisionTable:
    return DecisionTable(
        (
            Decision(
                "b", "id", "alice", "2025-11-21T06:12:00.123Z", 'plate, "left"', "incidental", "background", (PLATE,)
            ),
            Decision("a", "id", "alice", "", "", "categorical", "", (HAY, BURRITO)),
            Decision("c", "ood", "bob", "", "", "none"),
            Decision("d", "unsure"),
            Decision("e", "id", "", "", "", "incidental", "both_classes", (PLATE, BURRITO)),
        ),
        version=version,
        dataset="ninco-test",
    )


# --- the table file -----------------------------------------------------------------------------


def test_format_2_round_trips_byte_identically(tmp_path):
    sha = write_decision_table(taxonomy_table(3), tmp_path / "a.csv")
    text = (tmp_path / "a.csv").read_text()
    assert text.splitlines()[:3] == [
        '# imagenet-suite-decisions/2 {"dataset": "ninco-test", "version": 3}',
        HEADER2,
        f"a,id,alice,,,categorical,,{HAY};{BURRITO}",
    ]
    again = read_decision_table(tmp_path / "a.csv")
    assert again == taxonomy_table(3)
    assert again.by_id()["a"].imagenet_classes == (HAY, BURRITO)  # sorted: n07802026 < n07880968
    assert write_decision_table(again, tmp_path / "b.csv") == sha
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()


def test_format_1_is_still_read_with_an_empty_taxonomy(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text(
        '# imagenet-suite-decisions/1 {"dataset": "x", "version": 7}\n'
        "id,decision,reviewer,timestamp,note\nb,ood,bob,,\na,id,bob,2025-01-02T03:04:05.678Z,bagel\n"
    )
    table = read_decision_table(old)
    assert (table.version, table.dataset) == (7, "x")
    assert table.decisions == (
        Decision("a", "id", "bob", "2025-01-02T03:04:05.678Z", "bagel"),
        Decision("b", "ood", "bob"),
    )
    assert all(d.contamination == d.incidental_mode == "" and d.imagenet_classes == () for d in table.decisions)
    assert table.legacy_body_sha256() is not None and taxonomy_table().legacy_body_sha256() is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "a,id,,,,partial,,",
            "line 4: unknown contamination 'partial'; expected one of categorical, incidental, none or empty \\(id 'a'\\)",
        ),
        (
            "a,id,,,,incidental,foreground,",
            "line 4: unknown incidental_mode 'foreground'; expected one of background, prominent_part, both_classes "
            "or empty \\(id 'a'\\)",
        ),
        ("a,id,,,,categorical,background,", "line 4: incidental_mode 'background' needs contamination 'incidental'"),
        ("a,id,,,,none,,n99999999", "line 4: imagenet_classes: 'n99999999' is not an ImageNet-1k wnid"),
        (
            f"a,id,,,,none,,{PLATE} {HAY}",
            "line 4: imagenet_classes: 'n07579787 n07802026' is not an ImageNet-1k wnid; expected .* joined by ';'",
        ),
        ("a,id,,,,none,", "line 4: expected 8 fields"),
    ],
)
def test_bad_taxonomy_values_name_file_row_and_accepted_values(tmp_path, row, message):
    path = tmp_path / "bad.csv"
    path.write_text(f'# imagenet-suite-decisions/2 {{"dataset": "x", "version": 1}}\n{HEADER2}\nz,ood,,,,,,\n{row}\n')
    with pytest.raises(DecisionTableError, match=f"bad.csv: {message}"):
        read_decision_table(path)


def test_format_versions_and_headers_must_match(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('# imagenet-suite-decisions/3 {"dataset": "x", "version": 1}\nid,decision\n')
    with pytest.raises(DecisionTableError, match="line 1: unknown table format imagenet-suite-decisions/3; .*reads"):
        read_decision_table(path)
    path.write_text(f'# imagenet-suite-decisions/1 {{"dataset": "x", "version": 1}}\n{HEADER2}\n')
    with pytest.raises(DecisionTableError, match="line 2: expected the header id,decision,reviewer,timestamp,note "):
        read_decision_table(path)


# --- Cohen's kappa ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_kappa_equals_sklearn(seed):
    rng = random.Random(seed)
    labels = ["id", "ood", "unsure", "q"][: rng.randint(2, 4)]
    first = [rng.choice(labels) for _ in range(rng.randint(2, 60))]
    second = [a if rng.random() < 0.6 else rng.choice(labels) for a in first]
    expected = cohen_kappa_score(first, second)
    if math.isnan(expected):
        assert cohen_kappa(first, second) is None
    else:
        assert cohen_kappa(first, second) == pytest.approx(expected, abs=1e-12)


def test_kappa_degenerate_cases_are_undefined_not_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(cohen_kappa_score(["ood"] * 4, ["ood"] * 4))
    assert cohen_kappa(["ood"] * 4, ["ood"] * 4) is None
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["id", "id"], ["ood", "ood"]) == cohen_kappa_score(["id", "id"], ["ood", "ood"]) == 0
    found = compare_labels({"a": {"decision": "ood"}}, {"a": {"decision": "ood"}, "b": {"decision": "id"}}, {})
    overall = found["decision"]["overall"]
    assert (overall["samples"], overall["agreement"], overall["kappa"]) == (1, 1.0, None)
    assert "same label ('ood')" in overall["kappa_undefined"]
    assert found["contamination"]["overall"]["kappa_undefined"] == "no sample labelled by both"


# --- in FiftyOne --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fo():
    return fiftyone_on_private_db()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_review_setup(tmp_path_factory.mktemp("tiny-ood"))


@pytest.fixture
def dataset(fo, tiny, request):
    folder, outputs, root = tiny
    return load_for_review(
        folder,
        options=LoadOptions(
            outputs=outputs, name=f"taxo-{request.node.name}"[:60], cache_dir=root / "cache", reviewer="alice"
        ),
    )


def test_taxonomy_tags_export_import_export_byte_identically(fo, dataset, tmp_path):
    app_tags(fo, dataset, IDS[:2], {"id": True, "contamination:categorical": True, f"in1k:{BURRITO}": True})
    app_tags(fo, dataset, [IDS[2]], {"id": True, "incidental:prominent_part": True, f"in1k:{PLATE}": True})
    app_tags(fo, dataset, [IDS[3]], {"ood": True, "contamination:none": True})
    app_tags(fo, dataset, [IDS[4]], {"unsure": True})
    app_tags(fo, dataset, [IDS[5]], {"contamination:incidental": True})  # no decision: not recorded
    first, sha = decisions.export_decisions(dataset, tmp_path / "a.csv")
    rows = first.by_id()
    assert rows.keys() == set(IDS[:5])
    assert rows[IDS[0]].taxonomy_values() == ("categorical", "", BURRITO)
    assert rows[IDS[2]].taxonomy_values() == ("incidental", "prominent_part", PLATE)
    assert rows[IDS[3]].taxonomy_values() == ("none", "", "")
    assert rows[IDS[4]].taxonomy_values() == ("", "", "")
    assert (tmp_path / "a.csv").read_text().splitlines()[1] == HEADER2

    app_tags(fo, dataset, [IDS[2]], {"incidental:prominent_part": False, "incidental:background": True})
    changed, _ = decisions.export_decisions(dataset, tmp_path / "changed.csv")  # a taxonomy edit is a change
    assert changed.version == 2 and changed.by_id()[IDS[2]].incidental_mode == "background"

    dataset.untag_samples(dataset.distinct("tags"))  # wipe every decision and taxonomy ...
    decisions.sync(dataset)
    assert decisions.current_table(dataset).decisions == ()
    decisions.import_decisions(dataset, read_decision_table(tmp_path / "a.csv"))  # ... and bring them back
    _, again = decisions.export_decisions(dataset, tmp_path / "b.csv")
    assert again == sha and (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()
    assert set(dataset.match(fo.ViewField("row_id") == IDS[2]).first().tags) == {
        "id",
        "contamination:incidental",
        "incidental:prominent_part",
        f"in1k:{PLATE}",
    }


def test_format_1_export_keeps_its_version_after_the_upgrade(fo, dataset, tmp_path):
    old = tmp_path / "old.csv"
    old.write_text(
        '# imagenet-suite-decisions/1 {"dataset": "x", "version": 5}\n'
        f"id,decision,reviewer,timestamp,note\n{IDS[0]},id,bob,,\n"
    )
    decisions.import_decisions(dataset, read_decision_table(old))
    info = dict(dataset.info["imagenet_suite"])  # what a format-1 export had recorded: the format-1 body's sha256
    info[decisions.TABLE_KEY] = {"version": 5, "body_sha256": read_decision_table(old).legacy_body_sha256()}
    dataset.info["imagenet_suite"] = info
    dataset.save()
    table, _ = decisions.export_decisions(dataset, tmp_path / "new.csv")
    assert table.version == 5  # same decisions: no bump just because the format changed


def test_conflicting_taxonomy_tags_are_reported_and_block_export(fo, dataset, tmp_path):
    app_tags(fo, dataset, [IDS[0]], {"id": True, "contamination:categorical": True, "incidental:background": True})
    app_tags(fo, dataset, [IDS[1]], {"id": True, "in1k:n99999999": True})
    result = decisions.sync(dataset)
    assert result.taxonomy_conflicts.keys() == {IDS[0], IDS[1]}
    assert "incidental_mode 'background' needs contamination 'incidental'" in result.taxonomy_conflicts[IDS[0]]
    with pytest.raises(ReviewError, match=f"2 sample.*conflicting contamination tags, e.g. '{IDS[0]}'"):
        decisions.export_decisions(dataset, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
    with pytest.raises(ReviewError, match="unknown contamination 'partial'"):
        decisions.set_taxonomy(dataset, IDS[2], "partial")
    bad = DecisionTable((Decision(IDS[2], "id", contamination="none", incidental_mode="background"),))
    with pytest.raises(
        DecisionTableError, match="t.csv: id .*needs contamination 'incidental', got 'none'; nothing was imported"
    ):
        decisions.import_decisions(dataset, bad, source="t.csv")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    from imagenet_suite.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_status_compare_gives_per_class_agreement_and_sklearn_kappa(fo, dataset, tmp_path, capsys):
    uri = shared_mongod().uri
    rng = random.Random(3)
    ours = {i: rng.choice(["id", "ood", "unsure"]) for i in IDS[:10]}
    theirs = {i: (ours.get(i, "id") if rng.random() < 0.6 else rng.choice(["id", "ood", "unsure"])) for i in IDS[2:12]}
    theirs_contamination = {i: rng.choice(["categorical", "incidental", "none"]) for i in theirs}
    for row_id, value in ours.items():
        decisions.set_decision(dataset, row_id, value)
        decisions.set_taxonomy(dataset, row_id, "none" if value == "ood" else "incidental")
    other = tmp_path / "bob.csv"
    write_decision_table(
        DecisionTable(tuple(Decision(i, d, "bob", contamination=theirs_contamination[i]) for i, d in theirs.items())),
        other,
    )
    code, out, _ = cli(
        capsys, "review", "status", dataset.name, "--compare", str(other), "--json", "--database-uri", uri
    )
    assert code == 0
    agreement = json.loads(out)["agreement"]
    assert (agreement["only_ours"], agreement["only_theirs"]) == (2, 2)
    classes = dict(zip(dataset.values("row_id"), dataset.values("ground_truth.label")))
    both = sorted(ours.keys() & theirs.keys())
    found = agreement["labels"]["decision"]
    assert found["overall"]["samples"] == len(both) == 8
    assert found["overall"]["kappa"] == pytest.approx(
        cohen_kappa_score([ours[i] for i in both], [theirs[i] for i in both]), abs=1e-12
    )
    for name in set(classes[i] for i in both):
        ids = [i for i in both if classes[i] == name]
        per_class = found["per_class"][name]
        assert per_class["samples"] == len(ids)
        assert per_class["agreement"] == pytest.approx(sum(ours[i] == theirs[i] for i in ids) / len(ids))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = cohen_kappa_score([ours[i] for i in ids], [theirs[i] for i in ids])
        assert per_class["kappa"] is None if math.isnan(expected) else per_class["kappa"] == pytest.approx(expected)
    contamination = agreement["labels"]["contamination"]["overall"]
    mine = ["none" if ours[i] == "ood" else "incidental" for i in both]
    assert contamination["kappa"] == pytest.approx(
        cohen_kappa_score(mine, [theirs_contamination[i] for i in both]), abs=1e-12
    )

    code, text, _ = cli(capsys, "review", "status", dataset.name, "--compare", str(other), "--database-uri", uri)
    assert code == 0 and f"agreement of FiftyOne dataset '{dataset.name}' with {other}" in text
    assert "\ndecision:\n" in text and "\ncontamination:\n" in text
    assert any(
        line.startswith("all classes") and line.split()[2:4] == ["8", str(sum(ours[i] == theirs[i] for i in both))]
        for line in text.splitlines()
    )


def test_cli_status_compare_two_tables_and_the_degenerate_kappa(fo, dataset, tmp_path, capsys):
    uri = shared_mongod().uri
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_decision_table(DecisionTable(tuple(Decision(i, "ood") for i in IDS[:4])), a)
    write_decision_table(DecisionTable(tuple(Decision(i, "ood") for i in IDS[1:6])), b)
    code, text, _ = cli(capsys, "review", "status", dataset.name, "--compare", str(a), str(b), "--database-uri", uri)
    assert code == 0 and f"agreement of {a} with {b} (1 decided only in the first, 2 only in the other)" in text
    assert "kappa is undefined over all classes: both reviewers gave every sample the same label ('ood')" in text
    code, _, err = cli(capsys, "review", "status", dataset.name, "--compare", str(a), str(b), str(a))
    assert code == 2 and "--compare takes one or two decision tables, got 3" in err and err.count("\n") == 1
    elsewhere = tmp_path / "elsewhere.csv"
    write_decision_table(DecisionTable((Decision("not_a_row", "id"),)), elsewhere)
    code, _, err = cli(capsys, "review", "status", dataset.name, "--compare", str(elsewhere), "--database-uri", uri)
    assert code == 2 and "elsewhere.csv: 1 id(s) are not rows of FiftyOne dataset" in err and err.count("\n") == 1


# --- review precheck ----------------------------------------------------------------------------


def test_cli_precheck_prints_verdicts_and_matched_classes(capsys):
    code, out, _ = cli(capsys, "review", "precheck", "quesadilla", "hayfield.n.01", "police_dog.n.01", "no_such_word")
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == [
        "quesadilla: categorical suspect (1 ImageNet-1k class; checked: quesadilla.n.01)",
        f"  {BURRITO} burrito: hyponym [quesadilla.n.01]",
    ]
    assert "hayfield.n.01: no match (0 ImageNet-1k classes; checked: hayfield.n.01)" in lines
    assert "no_such_word: no match (0 ImageNet-1k classes; checked: not a WordNet noun)" in lines
    assert "  n02106662 German_shepherd: close_ancestor via working_dog.n.01 [police_dog.n.01]" in lines
    code, out, _ = cli(capsys, "review", "precheck", "n02084071", "--json")
    (dog,) = json.loads(out)
    assert dog["verdict"] == "categorical suspect" and len(dog["classes"]) >= 118
    code, out, err = cli(capsys, "review", "precheck", "quesadilla", "n99999999")
    assert code == 2 and out == "" and err.count("\n") == 1 and "'n99999999' is not a WordNet 3.0 noun synset" in err
