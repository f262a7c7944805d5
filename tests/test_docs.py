"""The documentation site: every public name has a page, every page is in the nav, the CLI
reference is generated from the parsers, and `mkdocs build --strict` passes (a broken link,
anchor or reference fails here as in `make docs`)."""

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import tfrecnp

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# docs/hooks.py: what the site generates at build time (loaded by path: docs/ is no package)
_spec = importlib.util.spec_from_file_location("tfrecnp_docs_hooks", DOCS / "hooks.py")
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)


def reference_names() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "api").glob("*.md"))
    return set(re.findall(r"^::: tfrecnp\.(\S+)", text, flags=re.M))


def test_every_public_name_has_a_page_in_the_api_reference():
    missing = sorted(set(tfrecnp.__all__) - reference_names())
    assert not missing, f"add `::: tfrecnp.NAME` for {missing} to a page of docs/api/"


def test_every_public_name_has_a_docstring_of_its_own():
    for name in set(tfrecnp.__all__) - {"__version__"}:  # (a str: its docstring is str's)
        obj = getattr(tfrecnp, name)
        assert obj.__doc__ and obj.__doc__.strip(), f"tfrecnp.{name} has no docstring"


def test_the_reference_names_only_what_exists():
    for name in reference_names():
        if name not in tfrecnp.__all__:  # a public module: tfrecnp.framing, tfrecnp.ray
            importlib.import_module(f"tfrecnp.{name}")


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert not pages - listed, f"pages missing from mkdocs.yml's nav: {sorted(pages - listed)}"
    generated = set(hooks.OUTSIDE.values())
    assert not listed - pages - generated, f"nav names no page: {listed - pages - generated}"


def test_cli_reference_holds_every_commands_help():
    assert hooks.CLI_MARK in (DOCS / "cli.md").read_text(encoding="utf-8")
    text = hooks.cli_reference()
    names = [name for name in hooks.commands() if name != "tfrecnp"]
    assert {"tfrecnp count", "tfrecnp convert", "tfrecnp verify"} <= set(names)
    for name in names:
        assert f"## `{name}`" in text and f"usage: {name}" in text, name


def test_links_out_of_docs_point_at_the_sites_pages():
    assert hooks.site_link("../CHANGELOG.md", "docs/HARDENING.md", "HARDENING.md") == (
        "changelog.md"
    )
    assert hooks.site_link("docs/HARDENING.md#x", "CHANGELOG.md", "changelog.md") == (
        "HARDENING.md#x"
    )
    assert hooks.site_link(
        "../docs/HARDENING.md", "benchmarks/CONSTANTS.md", "benchmarks/constants.md"
    ) == ("../HARDENING.md")
    assert hooks.site_link("https://a.b/c.md", "CHANGELOG.md", "changelog.md") == (
        "https://a.b/c.md"
    )


def test_site_builds_strictly(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "api" / "reading" / "index.html").read_text().count('id="tfrecnp.open"')
    assert "usage: tfrecnp convert" in (tmp_path / "cli" / "index.html").read_text()
