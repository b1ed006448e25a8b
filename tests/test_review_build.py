"""Back into builders: a decision table makes a new version with the decided rows dropped or flagged."""

from __future__ import annotations

import hashlib
import json

import pytest

from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.review.decision_table import (
    Decision,
    DecisionTable,
    write_decision_table,
)
from imagenet_suite.review.errors import DecisionTableError
from imagenet_suite.review.rebuild import ReviewApplication
from tests.helpers import build_val, folder_bytes, load, run_cli

DECIDED = {
    "ILSVRC2012_val_00000002": "id",
    "ILSVRC2012_val_00000005": "id",
    "ILSVRC2012_val_00000007": "ood",
    "ILSVRC2012_val_00000009": "unsure",
    "ILSVRC2012_val_00000011": "q",
}


def _table(path, decided=DECIDED, version=2):
    rows = [
        Decision(i, d, "alice", f"2025-11-21T06:12:0{n}.125Z", "plate, left" if d == "id" else "")
        for n, (i, d) in enumerate(sorted(decided.items()))
    ]
    sha = write_decision_table(DecisionTable(tuple(rows), version=version, dataset="val-review"), path)
    return path, sha


def review(table, action: str = "drop") -> ReviewApplication:
    """The decision table as the build's row transform (what `build --decisions` passes)."""
    return ReviewApplication.from_file(table, action)


def _rows(folder, columns=("id", "label", "image")) -> dict[str, dict]:
    table = DatasetFolder(folder).read_table(None, None, list(columns))
    return {row["id"]: row for row in table.to_pylist()}


@pytest.fixture(scope="module")
def plain(val_layouts, tmp_path_factory):
    return build_val(val_layouts, "folders", tmp_path_factory.mktemp("plain"), shard_size=5)


def test_drop_removes_exactly_the_rows_decided_id_and_records_the_table(val_layouts, plain, tmp_path):
    table, sha = _table(tmp_path / "decisions.csv")
    folder = build_val(val_layouts, "folders", tmp_path / "out", shard_size=5, transform=review(table))

    assert folder.name == f"imagenet_val-1.0.0-reviewed-drop-{sha[:8]}" and folder.name != plain.name
    before, after = _rows(plain), _rows(folder)
    assert set(before) - set(after) == {i for i, d in DECIDED.items() if d == "id"}
    assert all(after[i] == before[i] for i in after)  # kept rows unchanged, image bytes included
    assert sha == hashlib.sha256(table.read_bytes()).hexdigest()
    info = json.loads((folder / "build_info.json").read_text())
    assert info["review"] == {
        "decisions_file": "decisions.csv",
        "decisions_sha256": sha,
        "decisions_version": 2,
        "action": "drop",
        "decisions": {"id": 2, "ood": 1, "unsure": 1, "q": 1},
        "rows_dropped": {"default": 2},
    }
    card = (folder / "README.md").read_text()
    assert sha in card and "## Review decisions" in card
    assert info["configs"]["default"]["splits"]["validation"]["num_examples"] == len(before) - 2
    assert len(load(folder, "default", cache_dir=tmp_path / "hf")) == len(before) - 2  # the card's split sizes hold


def test_flag_adds_the_decision_of_exactly_the_decided_rows(val_layouts, plain, tmp_path):
    table, sha = _table(tmp_path / "decisions.csv")
    folder = build_val(val_layouts, "folders", tmp_path / "out", transform=review(table, "flag"))

    assert folder.name == f"imagenet_val-1.0.0-reviewed-flag-{sha[:8]}"
    flagged = _rows(folder, ("id", "review_decision"))
    assert set(flagged) == set(_rows(plain, ("id",)))
    assert {i: r["review_decision"] for i, r in flagged.items() if r["review_decision"] is not None} == DECIDED
    ds = load(folder, "default", cache_dir=tmp_path / "hf")  # the new column is declared in the card's features
    assert ds.features["review_decision"].dtype == "string"
    assert json.loads((folder / "build_info.json").read_text())["review"]["rows_flagged"] == {"default": len(DECIDED)}


def test_reviewed_build_is_deterministic_across_workers(val_layouts, tmp_path):
    table, _ = _table(tmp_path / "decisions.csv")
    one = build_val(val_layouts, "folders", tmp_path / "a", shard_size=3, transform=review(table))
    two = build_val(val_layouts, "folders", tmp_path / "b", shard_size=3, transform=review(table), num_proc=2)
    assert folder_bytes(one) == folder_bytes(two)
    other, other_sha = _table(tmp_path / "other.csv", {"ILSVRC2012_val_00000003": "id"})
    assert build_val(val_layouts, "folders", tmp_path / "a", shard_size=3, transform=review(other)).name.endswith(
        other_sha[:8]
    )


def test_unknown_ids_are_refused_before_anything_is_written(val_layouts, tmp_path):
    table, _ = _table(tmp_path / "decisions.csv", {**DECIDED, "ILSVRC2012_val_00099999": "id"})
    with pytest.raises(
        DecisionTableError,
        match=r"decisions.csv: 1 decided id\(s\) are not rows of config 'default'.*"
        r"ILSVRC2012_val_00099999",
    ):
        build_val(val_layouts, "folders", tmp_path / "out", transform=review(table))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "ILSVRC2012_val_00000002,contaminated,alice,,",
            r"line 3: unknown decision 'contaminated'.*id, ood, unsure, q",
        ),
        ("ILSVRC2012_val_00000002,id,alice,yesterday,", r"line 3: timestamp 'yesterday'"),
        ("ILSVRC2012_val_00000002,id", r"line 3: expected 5 fields"),
    ],
)
def test_bad_rows_are_refused_naming_file_and_line(val_layouts, tmp_path, line, message):
    table = tmp_path / "decisions.csv"
    table.write_text(
        f'# imagenet-suite-decisions/1 {{"dataset": "x", "version": 1}}\nid,decision,reviewer,timestamp,note\n{line}\n'
    )
    with pytest.raises(DecisionTableError, match="decisions.csv: " + message):
        build_val(val_layouts, "folders", tmp_path / "out", transform=review(table))
    assert not (tmp_path / "out").exists()


def test_cli_build_with_decisions_and_its_errors(val_layouts, tmp_path):
    table, sha = _table(tmp_path / "decisions.csv")
    manual = str(val_layouts["folders"])
    result = run_cli(
        "build",
        "imagenet_val",
        "--manual-dir",
        manual,
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
        "--decisions",
        str(table),
        "--decision-action",
        "flag",
    )
    assert result.stdout.strip().splitlines()[-1].endswith(f"imagenet_val-1.0.0-reviewed-flag-{sha[:8]}")

    ninco_log = tmp_path / "donuts.csv"
    ninco_log.write_text("index,image_location,decision\n0,Food-101/images/donuts/520733.jpg,i\n")
    bad = run_cli(
        "build",
        "imagenet_val",
        "--manual-dir",
        manual,
        "--out",
        str(tmp_path / "bad"),
        "--no-progress",
        "--decisions",
        str(ninco_log),
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "donuts.csv: line 1: not an imagenet-suite decision table" in bad.stderr
    assert "review import" in bad.stderr and not (tmp_path / "bad").exists()


def test_table_bytes_are_canonical(tmp_path):
    _, first = _table(tmp_path / "a.csv")
    shuffled = dict(reversed(list(DECIDED.items())))
    _, second = _table(tmp_path / "b.csv", shuffled)
    assert first == second  # row order of the input does not matter: rows are sorted by id
    text = (tmp_path / "a.csv").read_text()
    assert text.splitlines()[:3] == [
        '# imagenet-suite-decisions/2 {"dataset": "val-review", "version": 2}',
        "id,decision,reviewer,timestamp,note,contamination,incidental_mode,imagenet_classes",
        'ILSVRC2012_val_00000002,id,alice,2025-11-21T06:12:00.125Z,"plate, left",,,',
    ]
    assert (tmp_path / "a.csv.sha256").read_text() == f"{first}  a.csv\n"
