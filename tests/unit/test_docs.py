"""The README is a front page and docs/ holds the reference (issue 29, point 6): the README
stays under 15,000 bytes, every page it or a docs page links to exists (with the heading an
anchor names), every `tuneadvisor` command the pages show parses with tuneadvisor's own
argument parser, and rules/README.md names every rule file. The quoted outputs are checked
against what the commands print in tests/integration/test_docs_outputs.py."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from tests.unit.test_readme_first_hour import FENCE, README, REPO
from tuneadvisor.cli import build_parser

DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
MAX_README_BYTES = 15_000
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Placeholders the pages write in commands, and a value of the type each option wants.
PLACEHOLDERS = {"PID": "1234", "JOBID": "1234", "$TRAIN_PID": "1234", "S": "60", "ID": "1234"}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def _links(page: Path) -> list[tuple[Path, str]]:
    """(target file, anchor) of each relative link of ``page``, outside its code blocks."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        found.append(((page.parent / path).resolve() if path else page, anchor))
    return found


def test_the_readme_is_a_front_page() -> None:
    assert len(README.read_bytes()) <= MAX_README_BYTES


def test_the_readme_links_every_docs_page() -> None:
    linked = {target for target, _ in _links(README)}
    for page in PAGES:
        assert page.resolve() in linked, f"README.md does not link {page.name}"


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_link_leads_somewhere(page: Path) -> None:
    links = _links(page)
    for target, anchor in links:
        assert target.exists(), f"{page.name} links {target}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"{page.name}: no heading #{anchor} in {target.name}"


def _commands(page: Path) -> list[str]:
    """Each `tuneadvisor ...` line of the page's code blocks, its comment dropped."""
    lines = []
    for match in FENCE.finditer(page.read_text(encoding="utf-8")):
        for line in match.group(2).splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("tuneadvisor "):
                lines.append(line)
    return lines


DOCS_COMMANDS = [(page.name, line) for page in PAGES for line in _commands(page)]


def test_the_pages_show_commands() -> None:
    shown = {name for name, _ in DOCS_COMMANDS}
    for name in ("inputs.md", "watch.md", "relaunch.md", "slurm.md"):
        assert name in shown, name


@pytest.mark.parametrize(("page", "line"), DOCS_COMMANDS)
def test_each_command_of_the_docs_parses(page: str, line: str) -> None:
    words = shlex.split(line)
    end = words.index(">") if ">" in words else len(words)
    argv = [PLACEHOLDERS.get(word, word) for word in words[1:end]]
    build_parser(argv[0]).parse_args(argv)  # SystemExit (status 2) when it does not parse


def _rule_names_in_tables(text: str) -> set[str]:
    """The rule ids a table row of rules/README.md names in its first cell ("a, b (sizing)")."""
    names: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith("| rule |"):
            continue
        first = line.split("|")[1]
        if "no rule" in first:  # the plan's bounds and compare's check, named beside the rules
            continue
        first = re.sub(r"\([^)]*\)?", "", first)
        names.update(n.strip() for n in first.split(",") if re.fullmatch(r"[a-z0-9-]+", n.strip()))
    return names


def test_the_rules_readme_names_every_rule() -> None:
    rules = {
        tomllib.loads(path.read_text(encoding="utf-8"))["id"]
        for path in (REPO / "rules").glob("*.toml")
    }
    assert len(rules) >= 50  # the pack, not an empty glob
    named = _rule_names_in_tables((REPO / "rules" / "README.md").read_text(encoding="utf-8"))
    assert rules - named == set(), "rules/README.md has no row for these rules"
    assert named - rules == set(), "rules/README.md names rules that have no file"
