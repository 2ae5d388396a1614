"""A tune folder given to `compare` (compare/tune_folders.py): whatever its tune.json holds,
the runs read are folders directly under its trials/ with a run.json, never a path elsewhere,
and a broken summary falls back to the trials folder instead of failing."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.compare.tune_folders import _run_ids, expand_tune_folders, is_tune_folder

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
RUN_IDS = st.lists(
    st.sampled_from(["a", "b", "..", ".", "", "../x", "/etc", "a/b", "c"]), max_size=6
)


@settings(max_examples=200, deadline=None)
@given(trials=st.lists(st.fixed_dictionaries({"runs": RUN_IDS}) | JSON, max_size=4))
def test_the_ids_read_from_tune_json_are_plain_names(trials: list[object]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "tune.json"
        summary.write_text(json.dumps({"trials": trials}))
        for run_id in _run_ids(summary):
            assert run_id not in ("", ".", "..") and "/" not in run_id


@settings(max_examples=100, deadline=None)
@given(data=JSON)
def test_any_json_in_tune_json_is_read_without_error(data: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "tune.json"
        summary.write_text(json.dumps(data))
        assert isinstance(_run_ids(summary), list)


def test_a_run_folder_is_not_a_tune_folder_and_other_paths_pass(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "trials").mkdir(parents=True)
    (run / "run.json").write_text("{}")
    assert not is_tune_folder(run)
    assert expand_tune_folders([str(run), "x.lprof"]) == [str(run), "x.lprof"]
    tune = tmp_path / "tune"
    tune.mkdir()
    (tune / "tune.json").write_text("not json")
    assert is_tune_folder(tune)
