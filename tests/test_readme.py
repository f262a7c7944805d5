"""Every Python block of README.md and of every page of the documentation site (docs/) runs as
written, each in a fresh folder; the README stays a front door (at most 300 lines)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)


def blocks(page: Path) -> list[str]:
    return FENCE.findall(page.read_text(encoding="utf-8"))


BLOCKS = [(page, i, code) for page in PAGES for i, code in enumerate(blocks(page))]


def test_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the details to docs/"
    assert len(blocks(README)) >= 5  # the five jobs, one block each


def test_every_python_fence_is_collected():
    # A block fenced as ```py, ```python3, ```python title=..., or indented (inside a list)
    # would be shown but never run: spell it ```python at the start of a line.
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        fences = re.findall(r"^[ \t]*```[ \t]*(?:py|python|python3|pycon)\b.*$", text, flags=re.M)
        assert len(fences) == len(blocks(page)), (
            f"{page.relative_to(ROOT)}: {fences} - not every Python fence is run by the tests"
        )


@pytest.mark.parametrize(
    "page,index,code",
    BLOCKS,
    ids=[f"{page.relative_to(ROOT).as_posix()}:block{i}" for page, i, _ in BLOCKS],
)
def test_example_runs(page, index, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page} block {index}", "exec"), {"__name__": "__docs__"})
