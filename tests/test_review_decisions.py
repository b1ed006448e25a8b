"""Decisions: tags as the App writes them, reviewer/timestamp, export -> import -> export, bad tables, CLI."""

from __future__ import annotations

import json
import re

import pytest

from imagenet_suite.review import decisions
from imagenet_suite.review.decision_table import Decision, DecisionTable, format_timestamp, read_decision_table
from imagenet_suite.review.errors import DecisionTableError, ReviewError
from imagenet_suite.review.load import LoadOptions, load_for_review
from tests.fixtures.review_datasets import app_tags, tiny_ood_ids, tiny_review_setup
from tests.fixtures.review_mongo import fiftyone_on_private_db, shared_mongod

IDS = tiny_ood_ids()


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
            outputs=outputs, name=f"decide-{request.node.name}"[:60], cache_dir=root / "cache", reviewer="alice"
        ),
    )


def test_tags_are_decisions_and_sync_records_reviewer_and_time(fo, dataset):
    app_tags(fo, dataset, IDS[:2], {"id": True})
    app_tags(fo, dataset, [IDS[2]], {"ood": True})
    tagged_at = dict(zip(dataset.values("row_id"), dataset.values("last_modified_at")))

    assert decisions.sync(dataset).recorded == 3
    rows = {
        r: (d, who, t)
        for r, d, who, t in zip(*dataset.values(["row_id", "review_decision", "review_reviewer", "review_timestamp"]))
        if d
    }
    assert {r: v[0] for r, v in rows.items()} == {IDS[0]: "id", IDS[1]: "id", IDS[2]: "ood"}
    assert all(who == "alice" for _, who, _ in rows.values())
    assert all(format_timestamp(t) == format_timestamp(tagged_at[r]) for r, (_, _, t) in rows.items())
    assert decisions.sync(dataset).recorded == 0  # nothing new

    app_tags(fo, dataset, [IDS[1]], {"id": False})  # withdrawn in the App
    app_tags(fo, dataset, [IDS[2]], {"ood": False, "unsure": True})  # changed in the App
    result = decisions.sync(dataset)
    assert (result.recorded, result.withdrawn) == (1, 1)
    assert decisions.current_table(dataset).by_id().keys() == {IDS[0], IDS[2]}
    assert decisions.current_table(dataset).by_id()[IDS[2]].decision == "unsure"


def test_export_import_export_is_byte_identical(fo, dataset, tmp_path):
    app_tags(fo, dataset, IDS[:3], {"id": True})
    app_tags(fo, dataset, IDS[5:7], {"ood": True})
    app_tags(fo, dataset, [IDS[8]], {"unsure": True})
    decisions.set_decision(dataset, IDS[3], "q", note='plate, "left"\nsecond line')
    first, sha = decisions.export_decisions(dataset, tmp_path / "a.csv")
    assert (
        first.version == 1 and len(first.decisions) == 7 and first.counts() == {"id": 3, "ood": 2, "unsure": 1, "q": 1}
    )

    dataset.untag_samples(["id", "ood", "unsure", "q"])  # wipe every decision ...
    decisions.sync(dataset)
    assert decisions.current_table(dataset).decisions == ()
    decisions.import_decisions(dataset, read_decision_table(tmp_path / "a.csv"))  # ... and bring them back
    _, again = decisions.export_decisions(dataset, tmp_path / "b.csv")
    assert again == sha and (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()

    _, same = decisions.export_decisions(dataset, tmp_path / "c.csv")  # unchanged decisions: same version, bytes
    assert same == sha
    app_tags(fo, dataset, [IDS[9]], {"ood": True})
    changed, _ = decisions.export_decisions(dataset, tmp_path / "d.csv")
    assert changed.version == 2 and IDS[9] in changed.by_id()


def test_conflicting_tags_block_export(fo, dataset, tmp_path):
    app_tags(fo, dataset, [IDS[4]], {"id": True, "ood": True})
    assert dataset.load_saved_view("conflicting_decisions").values("row_id") == [IDS[4]]
    with pytest.raises(ReviewError, match=f"1 sample.*two decision tags, e.g. '{IDS[4]}'.*conflicting_decisions"):
        decisions.export_decisions(dataset, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()


def test_import_refuses_unknown_ids_and_writes_nothing(fo, dataset, tmp_path):
    app_tags(fo, dataset, [IDS[0]], {"ood": True})
    table = DecisionTable((Decision(IDS[0], "id", "bob"), Decision("not_a_row", "id", "bob")), version=3)
    with pytest.raises(DecisionTableError, match="t.csv: 1 id\\(s\\) are not rows of FiftyOne dataset.*'not_a_row'"):
        decisions.import_decisions(dataset, table, source="t.csv")
    assert dataset.match_tags(["id", "ood"]).values("row_id") == [IDS[0]]
    assert dataset.match_tags("ood").count() == 1 and dataset.match_tags("id").count() == 0


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """``imagenet-suite ARGS`` in this process (the console script's code path, without re-importing FiftyOne)."""
    from imagenet_suite.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_import_status_export(fo, dataset, tmp_path, capsys):
    uri = shared_mongod().uri
    table = tmp_path / "t.csv"
    table.write_text(
        '# imagenet-suite-decisions/1 {"dataset": "elsewhere", "version": 4}\n'
        "id,decision,reviewer,timestamp,note\n"
        f"{IDS[0]},id,bob,2025-01-02T03:04:05.678Z,bagel\n{IDS[4]},ood,bob,,\n"
    )
    assert cli(capsys, "review", "import", dataset.name, str(table), "--database-uri", uri)[0] == 0
    code, out, _ = cli(capsys, "review", "status", dataset.name, "--json", "--database-uri", uri)
    status = json.loads(out)
    assert status["decisions"] == {"id": 1, "ood": 1, "unsure": 0, "q": 0, "undecided": 10}
    assert status["per_class"]["donuts"] == {"id": 1, "ood": 0, "unsure": 0, "q": 0, "undecided": 3}
    assert status["per_class"]["sky"] == {"id": 0, "ood": 1, "unsure": 0, "q": 0, "undecided": 3}
    code, text, _ = cli(capsys, "review", "status", dataset.name, "--database-uri", uri)
    assert code == 0 and text.splitlines()[0] == f"{dataset.name}: 12 samples; id 1, ood 1, unsure 0, q 0, undecided 10"
    out = tmp_path / "out.csv"
    code, sha, _ = cli(capsys, "review", "export", dataset.name, "--out", str(out), "--database-uri", uri)
    old_rows = table.read_text().splitlines()[1:]  # a format-1 table comes back in format 2, empty taxonomy
    assert out.read_text().splitlines()[1:] == [old_rows[0] + ",contamination,incidental_mode,imagenet_classes"] + [
        row + ",,," for row in old_rows[1:]
    ]
    assert out.read_text().startswith("# imagenet-suite-decisions/2 ")
    assert json.loads(out.read_text().splitlines()[0].split(" ", 2)[2]) == {"dataset": dataset.name, "version": 4}
    assert (tmp_path / "out.csv.sha256").read_text() == f"{sha.strip()}  out.csv\n"
    code, _, err = cli(capsys, "review", "status", "no-such-dataset", "--database-uri", uri)
    assert code == 2 and "no FiftyOne dataset named 'no-such-dataset'" in err and len(err.strip().splitlines()) == 1


def test_cli_errors_are_one_line_and_write_nothing(fo, tmp_path, tiny, capsys):
    import socket

    folder, _, _ = tiny
    before = set(fo.list_datasets())
    bad = tmp_path / "bad.csv"
    bad.write_text(
        '# imagenet-suite-decisions/1 {"dataset": "x", "version": 1}\n'
        "id,decision,reviewer,timestamp,note\ndonuts_000_1000,maybe,bob,,\n"
    )
    code, _, err = cli(capsys, "review", "import", "any-dataset", str(bad))
    assert code == 2 and err.count("\n") == 1
    assert "bad.csv: line 3: unknown decision 'maybe' for id 'donuts_000_1000'" in err

    code, _, err = cli(capsys, "review", "open", str(tmp_path), "--cache-dir", str(tmp_path / "cache"))
    assert code == 2 and "is not an imagenet-suite dataset folder" in err and not (tmp_path / "cache").exists()

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = cli(
            capsys, "review", "open", str(folder), "--port", str(port), "--cache-dir", str(tmp_path / "c2")
        )
    assert code == 2 and f"port {port} on 127.0.0.1 is in use; pass another --port" in err
    assert not (tmp_path / "c2").exists() and set(fo.list_datasets()) == before


V1 = '# imagenet-suite-decisions/1 {"dataset": "x", "version": 1}\nid,decision,reviewer,timestamp,note\n'
V2 = (
    '# imagenet-suite-decisions/2 {"dataset": "x", "version": 1}\n'
    "id,decision,reviewer,timestamp,note,contamination,incidental_mode,imagenet_classes\n"
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", r"line 1: not an imagenet-suite decision table; expected '# imagenet-suite-decisions/2"),
        (
            b"index,image_location,decision\n0,a.jpg,id\n",
            r"line 1: .*this looks like a NINCO authors' log: import it with `imagenet-suite review import",
        ),
        (b'# imagenet-suite-decisions/0 {"dataset": "x", "version": 1}\n', r"line 1: unknown table format .*/0;"),
        (b'# imagenet-suite-decisions/2 {"dataset": "x", version: 1}\n', r"line 1: metadata is not valid JSON"),
        (b'# imagenet-suite-decisions/2 {"dataset": "x", "version": true}\n', r"line 1: expected a positive integer"),
        (b'# imagenet-suite-decisions/2 {"dataset": "x", "version": 0}\n', r"line 1: expected a positive integer"),
        (b'# imagenet-suite-decisions/2 {"version": 2}\n', r"line 1: expected a positive integer 'version' and a"),
        (
            V2.replace("\n", "\r\n").encode(),
            r"line 1: the table ends its lines in '\\r\\n' \(Windows line ends\); expected '\\n'",
        ),
        (V2.encode()[:-1] + b"\xff\n", r"not UTF-8 text"),
        (
            V2.split("\n")[0].encode() + b"\n",
            r"line 2: expected the header id,decision,.*,imagenet_classes \(format 2\), got no header",
        ),
        (
            V1.replace(",note", "").encode(),
            r"line 2: expected the header id,decision,reviewer,timestamp,note \(format 1\)",
        ),
        ((V1 + "a,id,,,\n,ood,,,\n").encode(), r"line 4: empty id"),
        ((V1 + "a,id,,,\nb,ood,,,\na,ood,,,\n").encode(), r"line 5: id 'a' already decided on line 3"),
        ((V1 + 'a,id,,,"a note cut\n').encode(), r"line 3: not a CSV row \(unexpected end of data\)"),
        ((V1 + 'a,id,,,"quoted" then more\n').encode(), r"line 3: not a CSV row \(',' expected after '\"'\)"),
        ((V1 + "a,id,,," + "x" * 200_000 + "\n").encode(), r"line 3: not a CSV row \(field larger than field limit"),
        (
            (V2 + "a,id,,,,,,\n").replace("id,decision", "id,verdict").encode(),
            r"line 2: expected the header id,decision,",
        ),
    ],
)
def test_a_bad_decision_table_is_refused_naming_file_and_line(tmp_path, data, message):
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    with pytest.raises(DecisionTableError) as caught:
        read_decision_table(path)
    text = str(caught.value)
    assert len(text.splitlines()) == 1 and re.search(f"^{re.escape(str(path))}: {message}", text), text
