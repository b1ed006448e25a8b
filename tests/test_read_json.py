"""``json_schema.read_json``: msgspec's parse where it parses, :mod:`json`'s everywhere else: the same value as
``json.loads`` of the file's UTF-8 text, and the same one-line error."""

from __future__ import annotations

import json
import random
import struct

import pytest

from imagenet_suite.errors import RunFolderError
from imagenet_suite.scoring.summary.json_schema import read_json

SAME_AS_JSON = [
    b'{"a": 1, "a": 2}',  # duplicate keys: the last
    b"[18446744073709551616, -9223372036854775809, 123456789012345678901234567890]",  # beyond 64 bits: exact ints
    b"[NaN, Infinity, -Infinity]",  # json's extensions (msgspec refuses them)
    b"[1e400, -1e400, 1e-400]",  # out of a double's range: json reads +-inf and 0.0
    b'["\\ud800", "\\udc00x"]',  # lone surrogates
    b"[-0.0, -0, 0.1, 2.2250738585072011e-308, 4.9e-324, 1.7976931348623157e308, 1E5, 1e-5]",
    b'{"\\u00e9t\\u00e9": "\\u0000\\n\\"", "\xc3\xa9": true, "n": null, "f": false}',
    b"  [1] \n",
]


@pytest.mark.parametrize("data", SAME_AS_JSON)
def test_value_is_json_loads(tmp_path, data):
    path = tmp_path / "a.json"
    path.write_bytes(data)
    found, expected = read_json(path, "file"), json.loads(data.decode("utf-8"))
    assert repr(found) == repr(expected)  # repr: 1 and 1.0, -0.0 and 0.0, nan told apart


def test_numbers_are_json_loads(tmp_path):
    """Random doubles (their repr, as suite.json has them) and random decimal strings of up to 30 digits with
    exponents near a double's limits: the same Python value and type as json's, digit for digit."""
    rng = random.Random(0)
    texts = [repr(struct.unpack("<d", rng.randbytes(8))[0]) for _ in range(4000)]
    texts = [text for text in texts if text not in ("nan", "inf", "-inf")]
    for _ in range(4000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30))).lstrip("0") or "0"
        texts.append(rng.choice(["", "-"]) + digits + rng.choice(["", f".{digits}", f"e{rng.randint(-330, 310)}"]))
    data = ("[" + ", ".join(texts) + "]").encode()
    path = tmp_path / "numbers.json"
    path.write_bytes(data)
    found, expected = read_json(path, "numbers"), json.loads(data)
    assert [(type(v), repr(v)) for v in found] == [(type(v), repr(v)) for v in expected]


@pytest.mark.parametrize(
    "data", [b'{"a": 1,}', b"\xef\xbb\xbf[1]", b'["\xff"]', b'{"\xc3": 1}', b"[1] [2]", b"", b"[1"]
)
def test_error_is_jsons_in_one_line(tmp_path, data):
    """Bytes that are not JSON: json's own message (this Python's wording), in one line naming the file."""
    try:
        json.loads(data.decode("utf-8"))
    except ValueError as err:  # UnicodeDecodeError and JSONDecodeError
        message = " ".join(str(err).split())
    else:
        pytest.fail(f"json reads {data!r}")
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    with pytest.raises(RunFolderError) as raised:
        read_json(path, "suite.json of `imagenet-suite evaluate`")
    assert str(raised.value) == f"{path}: not a readable suite.json of `imagenet-suite evaluate` ({message})"


def test_missing_file_is_named(tmp_path):
    with pytest.raises(RunFolderError, match=r"missing.json: not a readable run.json \(\[Errno 2\] No such file"):
        read_json(tmp_path / "missing.json", "run.json")
