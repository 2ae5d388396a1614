"""docs/ARCHITECTURE.md and the import-linter contracts say the same thing, and every
package folder of tuneadvisor is on exactly one layer (import-linter itself runs in the test
command and checks the code against the contracts)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
CONTRACTS: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "importlinter"
]["contracts"]
NOT_CODE = {"bundled", "__pycache__", "__init__.py", "__main__.py", "py.typed"}


def contract_layers() -> list[set[str]]:
    (layers,) = [c["layers"] for c in CONTRACTS if c["type"] == "layers"]
    return [{m.strip().removeprefix("tuneadvisor.") for m in layer.split("|")} for layer in layers]


def documented_layers() -> dict[int, set[str]]:
    """The table of ARCHITECTURE.md: | number | `folder` | what it is for |"""
    rows: dict[int, set[str]] = {}
    for number, folder in re.findall(r"^\| (\d+) \| `([a-z_]+)` \|", DOC, re.MULTILINE):
        rows.setdefault(int(number), set()).add(folder)
    return rows


def package_parts() -> set[str]:
    """Every subpackage and top-level module of tuneadvisor."""
    parts = set()
    for path in (ROOT / "tuneadvisor").iterdir():
        if path.name in NOT_CODE or path.name.startswith("."):
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            parts.add(path.name)
        elif path.suffix == ".py":
            parts.add(path.stem)
    return parts


def test_the_document_and_the_layers_contract_list_the_same_layers_in_the_same_order() -> None:
    documented = documented_layers()
    assert sorted(documented) == list(range(1, len(documented) + 1))
    assert [documented[n] for n in sorted(documented)] == contract_layers()


def test_every_package_folder_is_on_exactly_one_layer() -> None:
    placed = [part for layer in contract_layers() for part in layer]
    assert len(placed) == len(set(placed)), "a folder on two layers"
    assert set(placed) == package_parts()


def test_every_arrow_never_allowed_is_a_forbidden_contract_and_back() -> None:
    section = DOC.split("## Arrows never allowed", 1)[1].split("\n## ", 1)[0]
    never = set(re.findall(r"^- \*\*(.+?)\.\*\*", section, re.MULTILINE))
    forbidden = {re.split(r"[:,]", c["name"])[0] for c in CONTRACTS if c["type"] == "forbidden"}
    assert never == forbidden


def test_type_checking_imports_are_left_out_as_the_document_says() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert options["exclude_type_checking_imports"] is True
    assert "exclude_type_checking_imports" in DOC
