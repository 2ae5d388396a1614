"""The training-script patch is written from the scan's one parse: every edit is placed on the
text as it was read, so several settings on one DataLoader call (literals replaced, keywords
added on the call's line or on lines of their own) give a script that parses and builds the
loader with exactly the advised values."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.trainscript.patch import ScriptPatch
from tuneadvisor.trainscript.scan import scan_script
from tuneadvisor.workspace.script_settings import Target, write_settings

HEAD = '"""A training script."""\nfrom torch.utils.data import DataLoader\n\n'
SETTINGS = ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor")


def _call_keywords(text: str) -> dict[str, object]:
    """The keywords of the (one) DataLoader call, evaluated where they are literals."""
    tree = ast.parse(text)
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "DataLoader"
    ]
    assert len(calls) == 1
    out: dict[str, object] = {}
    for keyword in calls[0].keywords:
        assert keyword.arg is not None
        try:
            out[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            out[keyword.arg] = ast.unparse(keyword.value)
    return out


def _script(written: dict[str, object], own_lines: bool, trailing_comma: bool) -> str:
    args = ["dataset", "batch_size=64", *(f"{k}={v!r}" for k, v in written.items())]
    if own_lines:
        body = "".join(f"    {a},\n" for a in args)
        if not trailing_comma:
            body = body[: -len(",\n")] + "\n"
        call = f"loader = DataLoader(\n{body})\n"
    else:
        call = f"loader = DataLoader({', '.join(args)})\n"
    return HEAD + call + "for batch in loader:\n    pass\n"


def _patched(text: str, patch: str) -> str:
    """``text`` with a unified diff of one file applied (hunks in order)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0
    body = patch.splitlines(keepends=True)[2:]
    for line in body:
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0][1:]) - 1
            out += lines[cursor:start]
            cursor = start
        elif line.startswith("+"):
            out.append(line[1:])
        elif line.startswith("-"):
            cursor += 1
        else:
            out.append(lines[cursor])
            cursor += 1
    return "".join(out + lines[cursor:])


values = st.fixed_dictionaries(
    {},
    optional={
        "num_workers": st.integers(0, 64),
        "pin_memory": st.booleans(),
        "persistent_workers": st.booleans(),
        "prefetch_factor": st.integers(1, 16),
    },
)


@settings(max_examples=150, deadline=None)
@given(
    written=values,
    advised=values.filter(bool),
    own_lines=st.booleans(),
    trailing_comma=st.booleans(),
)
def test_every_advised_setting_lands_in_the_call_and_the_script_parses(
    written: dict[str, object],
    advised: dict[str, object],
    own_lines: bool,
    trailing_comma: bool,
) -> None:
    text = _script(written, own_lines, trailing_comma)
    target = Target(scan_script(text), "train.py", text, reserve_main_core=False)
    edits = write_settings(advised, target, None, None)
    assert edits.notes == ()
    patched = _patched(text, edits.patch) if edits.patch else text
    keywords = _call_keywords(patched)  # parses, one call
    workers = "int(os.environ.get('SLURM_CPUS_PER_TASK', '1'))"  # as ast.unparse writes it
    expected = {**written, **advised}
    if "num_workers" in advised:
        expected["num_workers"] = workers
        assert patched.count("import os\n") == 1  # the value reads the environment
    assert keywords == {"batch_size": 64, **expected}
    # nothing outside the call moved: the lines before and after it are there, in order
    kept = iter(patched.splitlines())
    outside = [*HEAD.splitlines(), "for batch in loader:", "    pass"]
    assert all(line in kept for line in outside)


def test_a_byte_order_mark_stays_and_the_columns_still_hold() -> None:
    text = "\ufeff" + HEAD + "loader = DataLoader(dataset, batch_size=8)\n"
    scan = scan_script(text)
    loader = scan.train_loader if scan.train_loader else scan.dataloaders[0]
    patch = ScriptPatch(text, scan.import_at)
    assert patch.add_keyword(loader.arguments_end, "pin_memory", "True")
    out = patch.render()
    assert out.startswith("\ufeff")
    assert "DataLoader(dataset, batch_size=8, pin_memory=True)\n" in out


def test_overlapping_edits_are_refused_not_garbled() -> None:
    text = HEAD + "loader = DataLoader(dataset, num_workers=2)\n"
    patch = ScriptPatch(text, 1)
    assert patch.set_literal(4, "num_workers", "4", ())
    assert not patch.set_literal(4, "num_workers", "8", ())
    assert "num_workers=4)" in patch.render()
