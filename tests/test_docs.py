"""The user documentation holds together: every relative link of the README and docs/ resolves (anchors too), the
results page opens with the headline figures, and no page names a path of the machine it was written on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> slug("Speed against the peers' shapes")
    'speed-against-the-peers-shapes'
    >>> slug("Evaluator (`scripts/bench_evaluate.py`)")
    'evaluator-scriptsbench_evaluatepy'
    """
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a link may name in ``page``: its headings' slugs (repeats numbered, as GitHub does)."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if heading:
            base = slug(heading.group(1))
            found.add(base if base not in seen else f"{base}-{seen[base]}")
            seen[base] = seen.get(base, 0) + 1
    return found


def test_slugs_follow_github(tmp_path: Path) -> None:
    assert slug("Speed against the peers' shapes") == "speed-against-the-peers-shapes"
    assert slug("Evaluator (`scripts/bench_evaluate.py`)") == "evaluator-scriptsbench_evaluatepy"
    assert slug("What it may learn — constraints") == "what-it-may-learn--constraints"
    page = tmp_path / "page.md"
    page.write_text("# Notes\n\n```bash\n# not a heading\n```\n\n## Notes\n", encoding="utf-8")
    assert anchors(page) == {"notes", "notes-1"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for link in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", link):
            continue
        target, _, fragment = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: no such file")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            broken.append(f"{link}: no such heading")
    assert not broken, broken


@pytest.mark.parametrize("page", [*PAGES, *sorted((REPO / "docs" / "results").glob("*.json"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_no_path_of_the_machine(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.findall(r"(?<![\w.])/(?:work|tmp|home|Users)/[\w.-]+", text)


def test_the_results_page_opens_with_the_headline() -> None:
    head = "\n".join((REPO / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8").splitlines()[:60])
    headline = re.search(r"\*\*0\.\d{3}\*\*", (REPO / "README.md").read_text(encoding="utf-8")).group(0)
    for figure in ("source-disjoint split of RAGTruth test", headline, "flag-all", "LettuceDetect",
                   "ragtruth-spans evaluate"):
        assert figure in head, figure


def test_the_readme_first_screen_has_the_table_and_the_example() -> None:
    head = "\n".join((REPO / "README.md").read_text(encoding="utf-8").splitlines()[:40])
    assert "from ragtruth_spans import detect" in head
    assert "source-disjoint split of RAGTruth test" in head and "LettuceDetect" in head and "flag-all" in head


@pytest.mark.slow
def test_the_readme_python_example_prints_what_it_says() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(from ragtruth_spans import detect\n.*?)```", text, re.S).group(1)
    expected = code.rstrip().rsplit("# ", 1)[1]
    printed: list[str] = []
    exec(code, {"print": lambda *args: printed.append(" ".join(map(str, args)))})
    assert printed == [expected]
