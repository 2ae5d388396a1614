"""docs/ARCHITECTURE.md and the import-linter contracts say the same thing, and every
package folder of tuneadvisor is on exactly one layer (import-linter itself runs in the test
command and checks the code against the contracts). What is compared is what each contract
allows: the layers in order, and for each arrow never allowed its sources, its forbidden
modules, its ignored imports and whether indirect imports pass; a contract that lets through
more than the page says fails here. And no package of tuneadvisor imports itself round a
circle, `if TYPE_CHECKING:` imports counted (the contracts leave those out)."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tuneadvisor"
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
OPTIONS: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "importlinter"
]
CONTRACTS: list[dict[str, Any]] = OPTIONS["contracts"]
NOT_CODE = {"bundled", "__pycache__", "__init__.py", "__main__.py", "py.typed"}
# Contract keys this test reads; any other could let an import through unseen.
LAYERS_KEYS = {"name", "type", "layers"}
FORBIDDEN_KEYS = {
    "name", "type", "source_modules", "forbidden_modules", "ignore_imports",
    "allow_indirect_imports",
}  # fmt: skip
ARROW = "-/->"


@dataclass(frozen=True)
class Arrow:
    """One forbidden contract, in the page's terms: names without `tuneadvisor.`."""

    title: str
    sources: frozenset[str]
    targets: frozenset[str]
    ignored: frozenset[str] = frozenset()  # "metrics.nvml -> pynvml"
    indirect_allowed: bool = False


# ------------------------------------------------------------------------------- the page


def documented_layers(doc: str = DOC) -> dict[int, set[str]]:
    """The table of ARCHITECTURE.md: | number | `folder` | what it is for |"""
    rows: dict[int, set[str]] = {}
    for number, folder in re.findall(r"^\| (\d+) \| `([a-z_]+)` \|", doc, re.MULTILINE):
        rows.setdefault(int(number), set()).add(folder)
    return rows


def drawn_order(doc: str = DOC) -> list[str]:
    """The folders of the layer diagram, top to bottom, left to right."""
    section = doc.split("## The layers", 1)[1]
    drawing = section.split("```", 2)[1]
    return re.findall(r"\b([a-z_]+)(?:/|\.py)", drawing)


def arrow_bullets(doc: str = DOC) -> dict[str, str]:
    """Title -> text of each `- **Title.** ...` bullet of "Arrows never allowed", its lines
    joined."""
    section = doc.split("## Arrows never allowed", 1)[1].split("\n## ", 1)[0]
    bullets: dict[str, str] = {}
    for block in re.split(r"\n(?=- )|\n\n", section):
        found = re.match(r"- \*\*(.+?)\.\*\*(.*)", block.strip(), re.DOTALL)
        if found is not None:
            assert found[1] not in bullets, f"two bullets titled {found[1]!r}"
            bullets[found[1]] = " ".join(found[2].split())
    return bullets


def documented_arrows(doc: str = DOC) -> set[Arrow]:
    layers = documented_layers(doc)
    arrows: set[Arrow] = set()
    for title, text in arrow_bullets(doc).items():
        contract = text.split("Contract:", 1)
        assert len(contract) == 2, f"{title!r}: no 'Contract:' line"
        spans = re.findall(r"`([^`]*)`", contract[1])
        assert spans and all(ARROW in span for span in spans), f"{title!r}: {contract[1]!r}"
        arrows |= {_arrow(title, span, layers) for span in spans}
    return arrows


def _arrow(title: str, span: str, layers: Mapping[int, set[str]]) -> Arrow:
    """`SOURCES -/-> TARGETS[ except A -> B, ...][ (indirect allowed)]`"""
    sources, rest = span.split(ARROW, 1)
    indirect = rest.rstrip().endswith("(indirect allowed)")
    rest = rest.rstrip().removesuffix("(indirect allowed)")
    targets, _, ignored = rest.partition(" except ")
    return Arrow(
        title,
        frozenset(_expand(sources, layers)),
        frozenset(_expand(targets, layers)),
        frozenset(" -> ".join(p.strip() for p in i.split("->")) for i in _words(ignored)),
        indirect,
    )


def _words(text: str) -> list[str]:
    return [word.strip() for word in text.split(",") if word.strip()]


def _expand(names: str, layers: Mapping[int, set[str]]) -> set[str]:
    out: set[str] = set()
    for name in _words(names):
        relative = re.fullmatch(r"(below|above)\((\w+)\)", name)
        if relative is None:
            out.add(name)
            continue
        (layer,) = [n for n, folders in layers.items() if relative[2] in folders]
        sign = 1 if relative[1] == "below" else -1  # below: a higher number in the table
        out |= {f for n, folders in layers.items() if sign * (n - layer) > 0 for f in folders}
    return out


# -------------------------------------------------------------------------- the contracts


def _short(module: str) -> str:
    return module if module == "tuneadvisor" else module.removeprefix("tuneadvisor.")


def contract_layers(contracts: Sequence[Mapping[str, Any]] = CONTRACTS) -> list[set[str]]:
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [{_short(m.strip()) for m in layer.split("|")} for layer in layers]


def contract_arrows(contracts: Sequence[Mapping[str, Any]] = CONTRACTS) -> set[Arrow]:
    arrows: set[Arrow] = set()
    for c in contracts:
        if c["type"] != "forbidden":
            continue
        ignored = (" -> ".join(_short(p.strip()) for p in i.split("->")) for i in
                   c.get("ignore_imports", ()))  # fmt: skip
        arrows.add(
            Arrow(
                re.split(r"[:,]", c["name"])[0],
                frozenset(map(_short, c["source_modules"])),
                frozenset(map(_short, c["forbidden_modules"])),
                frozenset(ignored),
                bool(c.get("allow_indirect_imports", False)),
            )
        )
    return arrows


def package_parts() -> set[str]:
    """Every subpackage and top-level module of tuneadvisor."""
    parts = set()
    for path in PACKAGE.iterdir():
        if path.name in NOT_CODE or path.name.startswith("."):
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            parts.add(path.name)
        elif path.suffix == ".py":
            parts.add(path.stem)
    return parts


# ------------------------------------------------------------------------------ the checks


def test_the_document_and_the_layers_contract_list_the_same_layers_in_the_same_order() -> None:
    documented = documented_layers()
    assert sorted(documented) == list(range(1, len(documented) + 1))
    assert [documented[n] for n in sorted(documented)] == contract_layers()


def test_the_diagram_draws_the_layers_of_the_table_in_its_order() -> None:
    documented = documented_layers()
    assert drawn_order() == [f for n in sorted(documented) for f in _in_row_order(documented[n])]


def _in_row_order(folders: set[str]) -> list[str]:
    """A layer's folders in the order of the table's rows (as the diagram draws them)."""
    rows = re.findall(r"^\| \d+ \| `([a-z_]+)` \|", DOC, re.MULTILINE)
    return [f for f in rows if f in folders]


def test_every_package_folder_is_on_exactly_one_layer() -> None:
    placed = [part for layer in contract_layers() for part in layer]
    assert len(placed) == len(set(placed)), "a folder on two layers"
    assert set(placed) == package_parts()


def test_the_contracts_say_nothing_the_test_does_not_read() -> None:
    assert [c["type"] for c in CONTRACTS].count("layers") == 1
    for c in CONTRACTS:
        assert c["type"] in ("layers", "forbidden"), c["name"]
        keys = LAYERS_KEYS if c["type"] == "layers" else FORBIDDEN_KEYS
        assert set(c) <= keys, (c["name"], set(c) - keys)


def test_every_arrow_never_allowed_is_its_forbidden_contract_and_back() -> None:
    """Same sources, same forbidden modules, same exceptions, same indirect rule."""
    documented, contracted = documented_arrows(), contract_arrows()
    assert {a.title for a in documented} == {a.title for a in contracted}
    assert documented == contracted


def test_every_package_name_in_the_arrows_is_a_module_of_the_package() -> None:
    """A misspelt `slurm.clinet` would otherwise pass as an outside package nobody imports."""
    parts = package_parts()
    for arrow in documented_arrows():
        ends = {end.strip() for rule in arrow.ignored for end in rule.split("->")}
        for name in arrow.sources | arrow.targets | ends:
            if name.split(".")[0] in parts:
                path = PACKAGE.joinpath(*name.split("."))
                assert path.with_suffix(".py").is_file() or path.is_dir(), (arrow.title, name)


def _loosened(contracts: Sequence[Mapping[str, Any]]) -> Iterable[Any]:
    """Each way a forbidden contract could let through what the page forbids: a forbidden
    module dropped, a source dropped, an import ignored, indirect imports let through (or,
    where they were, no longer: the page says which)."""
    for i, c in enumerate(contracts):
        if c["type"] != "forbidden":
            continue
        for new in (
            {**c, "forbidden_modules": c["forbidden_modules"][1:]},
            {**c, "source_modules": c["source_modules"][1:]},
            {**c, "ignore_imports": [*c.get("ignore_imports", ()), "tuneadvisor.advisor -> os"]},
            {**c, "allow_indirect_imports": not c.get("allow_indirect_imports", False)},
        ):
            yield pytest.param([*contracts[:i], new, *contracts[i + 1 :]], id=c["name"][:40])


@pytest.mark.parametrize("contracts", list(_loosened(CONTRACTS)))
def test_a_contract_that_allows_more_than_the_page_is_caught(contracts: list[Any]) -> None:
    """The comparison above fails on any one forbidden contract loosened."""
    assert documented_arrows() != contract_arrows(contracts)


def test_layers_out_of_order_are_caught() -> None:
    swapped = [dict(c) for c in CONTRACTS]
    for c in swapped:
        if c["type"] == "layers":
            c["layers"] = [c["layers"][1], c["layers"][0], *c["layers"][2:]]
    documented = documented_layers()
    assert [documented[n] for n in sorted(documented)] != contract_layers(swapped)


def test_an_arrow_the_page_draws_wider_is_caught() -> None:
    """The page forbidding more than the contract (here: the advisor also kept from
    `shutil`) fails as well: the two must say the same."""
    wider = DOC.replace("`advisor -/-> subprocess,", "`advisor -/-> shutil, subprocess,")
    assert wider != DOC
    assert documented_arrows(wider) != contract_arrows()


def test_type_checking_imports_are_left_out_as_the_document_says() -> None:
    assert OPTIONS["exclude_type_checking_imports"] is True
    assert "exclude_type_checking_imports" in DOC


# ------------------------------------------------------------------------- import circles


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of tuneadvisor (bundled/ is data, not code)."""
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "bundled" in parts or "__pycache__" in parts:
            continue
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of the package that ``name`` imports anywhere in its file: at the top,
    under `if TYPE_CHECKING:` and inside functions alike."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x; from ..y import z
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
    return (out & known.keys()) - {name}


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def package_of(module: str) -> str:
    """`tuneadvisor.slurm.launch_line.search` -> `tuneadvisor.slurm`: the layer's folder."""
    return ".".join(module.split(".")[:2])


def test_no_package_imports_itself_round_a_circle() -> None:
    known = modules()
    graph = {
        name: {m for m in imported(name, path, known) if package_of(m) == package_of(name)}
        for name, path in known.items()
    }
    assert circles(graph) == []


def test_the_circle_walk_finds_a_circle_closed_under_type_checking(tmp_path: Path) -> None:
    """The walk above can fail: two modules, one importing the other only for a type."""
    (tmp_path / "a.py").write_text("from tuneadvisor.x.b import B\n")
    (tmp_path / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tuneadvisor.x.a import A\n"
    )
    (tmp_path / "c.py").write_text("def f() -> None:\n    from tuneadvisor.x import a\n")
    known = {f"tuneadvisor.x.{n}": tmp_path / f"{n}.py" for n in "abc"}
    graph = {name: imported(name, path, known) for name, path in known.items()}
    assert graph["tuneadvisor.x.c"] == {"tuneadvisor.x.a"}  # a function's import counts
    assert circles(graph) == [["tuneadvisor.x.a", "tuneadvisor.x.b"]]
