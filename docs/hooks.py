"""MkDocs hooks: what the site generates at build time instead of holding a copy.

- The CLI reference: every `tfrecnp` command's `--help`, taken from the argparse parser the
  command runs (`tfrecnp.cli.main.build_parser`), in place of `<!-- cli-reference -->`.
- Pages kept outside docs/ (the README as the home page, the changelog, the benchmarks'
  notes) join the site as they are, and links between those files and docs/ pages are
  pointed at the pages the site builds, so each reads correctly in the repository and on
  the site.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI_MARK = "<!-- cli-reference -->"
HELP_COLUMNS = "100"  # argparse wraps help to $COLUMNS: a fixed width keeps builds alike

# a file outside docs/ (path in the repository) -> its page on the site; the README is the
# site's home page, so the front door is written once
OUTSIDE = {
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
    "benchmarks/CONSTANTS.md": "benchmarks/constants.md",
    "benchmarks/README.md": "benchmarks/suite.md",
}
LINK = re.compile(r"\]\(([^)\s]+)\)")


def commands() -> dict[str, argparse.ArgumentParser]:
    """The `tfrecnp` parser and each subcommand's, by the name a user types."""
    from tfrecnp.cli.main import build_parser

    parser = build_parser()
    found = {"tfrecnp": parser}
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"tfrecnp {name}"] = sub
    return found


def cli_reference() -> str:
    """Markdown: one section per command holding its `--help`, as a terminal shows it."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parts = []
        for name, parser in commands().items():
            parts.append(f"## `{name}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
        return "\n".join(parts)
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def site_link(target: str, repo_path: str, site_path: str) -> str:
    """A relative link written in the repository file `repo_path`, as the page `site_path`
    must spell it; links that do not name a repository file come back unchanged."""
    if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
        return target
    path, _, anchor = target.partition("#")
    named = posixpath.normpath(posixpath.join(posixpath.dirname(repo_path), path))
    if named.startswith("docs/"):
        page = named[len("docs/") :]
    elif named in OUTSIDE:
        page = OUTSIDE[named]
    else:
        return target
    new = posixpath.relpath(page, posixpath.dirname(site_path) or ".")
    return new + (f"#{anchor}" if anchor else "")


def relink(markdown: str, repo_path: str, site_path: str) -> str:
    return LINK.sub(lambda m: f"]({site_link(m.group(1), repo_path, site_path)})", markdown)


def on_files(files, config):
    from mkdocs.structure.files import File

    for repo_path, site_path in OUTSIDE.items():
        text = (ROOT / repo_path).read_text(encoding="utf-8")
        files.append(File.generated(config, site_path, content=text))
    return files


def on_page_markdown(markdown, page, config, files):
    site_path = page.file.src_uri
    outside = {site: repo for repo, site in OUTSIDE.items()}
    repo_path = outside.get(site_path, f"docs/{site_path}")
    markdown = relink(markdown, repo_path, site_path)
    if CLI_MARK in markdown:
        markdown = markdown.replace(CLI_MARK, cli_reference())
    return markdown
