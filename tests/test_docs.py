"""The documentation: the site builds strictly, the generated builders page is current, the README
stays short and names no machine a figure was measured on."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

from tests.helpers import REPO_ROOT

README_LIMIT = 15 * 1024  # bytes
PAGES = sorted((REPO_ROOT / "docs").glob("*.md"))
# How a figure's conditions must not be stated: relative to a machine, a loan or a work item.
MACHINE_TALK = re.compile(
    r"this (?:\d+-core )?(?:CPU )?machine|\bwas lent\b|been lent|\blent to\b|issue target|on this (?:box|host|computer)",
    re.I,
)


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_builders", REPO_ROOT / "docs" / "gen_builders.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` (any warning fails: broken link or anchor, page left out, ...)."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO_ROOT / "mkdocs.yml")]
        + ["--site-dir", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    assert (tmp_path / "site" / "builders" / "index.html").is_file()
    cards = sorted(p.stem for p in (REPO_ROOT / "cards").glob("*.md"))
    assert cards and all((tmp_path / "site" / "cards" / name / "index.html").is_file() for name in cards)


def test_builders_page_is_current():
    generator = _load_generator()
    expected = generator.render()
    actual = (REPO_ROOT / "docs" / "builders.md").read_text(encoding="utf-8")
    assert actual == expected, f"docs/builders.md is not current: regenerate it with `{generator.COMMAND}`"


def test_builders_page_has_one_row_per_builder():
    from imagenet_suite.core import registry

    text = (REPO_ROOT / "docs" / "builders.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[`([a-z0-9_]+)`\]\(cards/[a-z0-9_]+\.md\) \| ([0-9.]+) \|", text, re.M)
    own = {
        name: cls.VERSION
        for name, cls in registry.all_builders().items()
        if cls.__module__.startswith(registry.BUILDERS_PACKAGE + ".")
    }
    assert dict(rows) == own and len(rows) == len(own)


def test_readme_is_short():
    size = len((REPO_ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes (limit {README_LIMIT}): move details to docs/"


def test_readme_links_resolve():
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    links = [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+://", target)]
    assert links, "the README links no documentation page"
    missing = [target for target in links if not (REPO_ROOT / target.split("#")[0]).exists()]
    assert not missing, f"README.md links files that do not exist: {missing}"


def test_no_text_about_the_machine_a_figure_was_measured_on():
    """Figures state their conditions ("2 CPU cores, files in the page cache"), not where they were taken."""
    found = []
    for path in [REPO_ROOT / "README.md", *PAGES]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MACHINE_TALK.search(line):
                found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not found, "state a figure's conditions in neutral terms:\n" + "\n".join(found)
