"""A large training script is parsed a group of top-level statements at a time (issue 29,
point 7: one ast.parse of the 2.2 MB bench script peaked at ~290 MiB); the tree must be
``ast.parse``'s own, node for node and position for position, whatever the file holds at the
margin (strings, brackets, backslashes, else/except clauses, decorators), and a file that
does not parse gives ``ast.parse``'s own error."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.trainscript.parsed import parse_module, parse_script

# Top-level pieces, several of which put a line at the margin that starts no statement.
PIECES = [
    "import torch\n",
    "def train(model, loader):\n    for x in loader:\n        model(x).backward()\n",
    'DOC = """\ndef not_code():\nelse:\n    pass\n"""\n',
    "x = [\n1,\n2,\n]\n",
    "y = (1 +\n2)\n",
    "z = 1 + \\\n2\n",
    "if x:\n    pass\nelse:\n    pass\n",
    "if x:\n    pass\nelif y:\n    pass\n",
    "try:\n    pass\nexcept Exception:\n    pass\nfinally:\n    pass\n",
    "for i in x:\n    pass\nelse:\n    pass\n",
    "@decorator\ndef f():\n    return 1\n",
    "@decorator(\n1)\nclass C:\n    pass\n",
    "# a comment at the margin\n",
    "\n",
    "else_value = 1\n",
    "s = 'a\\\nb'\n",
    "t = f'{x}'\r\n",
    "u = 'é' ; v = 2\r",
    "match x:\n    case 1:\n        pass\n",
    "async def g():\n    await h()\n",
    "def broken(:\n",  # a syntax error
    "\fw = 3\n",
]


def _same(text: str) -> None:
    try:
        expected = ast.dump(ast.parse(text), include_attributes=True)
    except (SyntaxError, ValueError) as exc:
        with pytest.raises(type(exc)) as got:
            parse_module(text, chunked_from=0, group_lines=1)
        assert str(got.value) == str(exc)
        return
    tree = parse_module(text, chunked_from=0, group_lines=1)
    assert ast.dump(tree, include_attributes=True) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_the_tree_is_ast_parses_own(pieces: list[str]) -> None:
    _same("".join(pieces))


@pytest.mark.parametrize("piece", PIECES)
def test_each_piece_between_statements(piece: str) -> None:
    _same("a = 1\n" + piece + "b = 2\n" + piece + "c = 3")


def test_a_large_file_is_parsed_in_groups_to_the_same_tree() -> None:
    one = "".join(PIECES[:-3])  # no syntax error
    text = one * (1 + (1 << 18) // len(one))
    assert len(text) >= 1 << 18
    parsed = parse_script(text)
    assert parsed.tree is not None
    assert ast.dump(parsed.tree, include_attributes=True) == ast.dump(
        ast.parse(text.lstrip("\ufeff")), include_attributes=True
    )


def test_a_large_file_with_an_error_says_where() -> None:
    text = "x = 1\n" * 60000 + "def broken(:\n"
    parsed = parse_script(text)
    assert parsed.tree is None
    assert parsed.error is not None and parsed.error.startswith("line 60001:")


def test_plain_statements_are_parsed_in_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = ast.parse

    def counted(source: str) -> ast.Module:
        calls.append(len(source.strip("\n").splitlines()))  # its own lines, not the padding
        return real(source)

    monkeypatch.setattr(ast, "parse", counted)
    text = "def f():\n    return 1\n" * 50
    parse_module(text, chunked_from=0, group_lines=10)
    # groups of about 10 lines, none of them the whole text again
    assert calls == [10] * 10
