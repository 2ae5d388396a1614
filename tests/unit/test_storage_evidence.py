"""A miss names storage only from storage evidence (issue 31 §4): the run records what its
tree read from storage, the machine's I/O wait and the file system under the data folder
(``resources.io``); ``prediction-missed`` names storage where those show it, says storage was
quiet where they say so, and keeps "storage is not named" where nothing was recorded."""

from __future__ import annotations

import json
from collections import namedtuple
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_relaunch_prediction import BATCH, PREDICTION
from tuneadvisor.errors import InputError
from tuneadvisor.relaunch import io_meter
from tuneadvisor.relaunch.io_meter import IoMeter, data_filesystem
from tuneadvisor.relaunch.predicted import check, miss_reasons
from tuneadvisor.relaunch.records import RunRecord, read_record, write_record
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.relaunch.storage_evidence import (
    IOWAIT_SHOWN,
    NAMED,
    NETWORK_FS,
    READ_PER_SAMPLE_SHOWN,
)

SLOW = [0.04] * 12  # 40 ms a step (1,600 samples/s): twice the predicted range
FAST = [0.01] * 12  # 10 ms: faster than the range
MIB = 1024 * 1024


def _data(
    times: list[float], io: dict[str, Any] | None, sampled: dict[str, float] | None = None
) -> dict[str, Any]:
    """A local run of the plan's setting (4 cores, 3 workers) as run.json keeps it, with
    these step times and this storage evidence (None: a record from before it)."""
    resources: dict[str, Any] = {"sampled": {"cores_used": 1.2} if sampled is None else sampled}
    if io is not None:
        resources["io"] = io
    return {
        "kind": "tuneadvisor-run", "schema": 1, "id": "r", "name": "mnist_single",
        "status": "completed", "where": "local",
        "settings": Settings(cpus_per_task=4, knobs={"num_workers": 3}).to_json(),
        "allocation": {"job_id": "1", "hostname": "h", "cores": [[0, 1, 2, 3]], "env": {},
                       "notes": []},
        "steps": [
            {"event": "step", "step": i + 1, "step_time_s": t, "samples_per_s": BATCH / t}
            for i, t in enumerate(times)
        ],
        "resources": resources,
        "prediction": PREDICTION.as_json(),
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip


def _io(
    *,
    read_mib: float | None = 0.0,
    iowait_cores: float | None = 0.0,
    fs: str | None = "ext4",
    not_read: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Storage evidence over a 12 s run whose first step came at 2 s: ``read_mib`` read
    from then on (10 s), ``iowait_cores`` of the machine's 8 cores waiting on I/O."""
    out: dict[str, Any] = {"wall_s": 12.0, "first_step_s": 2.0, "data_dir": "/data/mnist",
                           "not_read": not_read or {}}  # fmt: skip
    if read_mib is not None:
        out["read_bytes_before_first_step"] = 5 * MIB  # imports: left out of the rate
        out["read_bytes"] = 5 * MIB + round(read_mib * MIB)
    if iowait_cores is not None:
        out["iowait_cores"] = iowait_cores
        out["iowait_pct"] = 100 * iowait_cores / 8
    if fs is not None:
        out["fs_type"], out["fs_mount"] = fs, "/data"
    return out


def _reasons(io: dict[str, Any] | None, times: list[float] = SLOW, **kw: Any) -> tuple[str, ...]:
    result = check(RunRecord.from_json(_data(times, io, **kw)))
    assert result is not None and result.missed
    return result.reasons


def test_the_machines_io_wait_beside_the_idle_cores_names_storage() -> None:
    # 1.2 of 4 cores in use: 2.8 idle; the machine waited on I/O with 1.0 of them
    (reason,) = _reasons(_io(iowait_cores=1.0))
    assert reason.startswith("the run left cores idle: 1.20 of 4 in use, and " + NAMED)
    assert "I/O wait 1.00 cores (12 % of its CPU time) against the 2.80 the run left idle" in reason
    assert f"assumed: {100 * IOWAIT_SHOWN:.0f} % of them shows storage" in reason


def test_storage_reads_per_sample_name_storage() -> None:
    # 80 MiB over the 10 s after the first step: 8 MiB/s at 1,600 samples/s, 5.1 KiB a sample
    (reason,) = _reasons(_io(read_mib=80.0))
    assert NAMED in reason
    assert "8.0 MiB/s read from storage from the first step on, 5.1 KiB a sample" in reason
    assert "assumed: 1.0 KiB a sample or more comes from storage" in reason


def test_reads_not_told_apart_from_start_up_name_nothing() -> None:
    """Without the first step's mark, start-up's reads (imports) are in the rate: such a
    rate over the threshold is no evidence; under it, it is still quiet."""
    io = _io(read_mib=80.0, not_read={"read_bytes_before_first_step": "no step was reported"})
    del io["read_bytes_before_first_step"]
    (reason,) = _reasons(io)
    assert NAMED not in reason and "storage reads apart from start-up (" in reason
    assert "storage is not named: quiet where measured" in reason
    assert "MiB/s read from storage start-up included" in reason

    quiet = _io(read_mib=0.0)
    del quiet["read_bytes_before_first_step"]  # 5 MiB over 12 s: 273 B a sample
    (reason,) = _reasons(quiet)
    assert "storage was quiet" in reason and "start-up included, 273 B a sample" in reason


def test_data_on_a_network_file_system_names_storage() -> None:
    (reason,) = _reasons(_io(fs="nfs4"))
    assert NAMED in reason and "the data lives on nfs4 (/data), a network file system" in reason


def test_quiet_storage_is_said_with_its_figures_never_named() -> None:
    (reason,) = _reasons(_io(read_mib=0.0, iowait_cores=0.0, fs="tmpfs"))
    assert NAMED not in reason
    assert "storage was quiet (the data is on tmpfs, in memory: iowait 0 %" in reason
    assert "0.0 MiB/s read from storage from the first step on, 0 B a sample" in reason
    assert reason.endswith("the loop waited on something other than its CPUs and storage")
    (cached,) = _reasons(_io(read_mib=0.5, iowait_cores=0.1))
    assert "the data on ext4 came from the page cache: iowait 1 % (0.10 cores)" in cached
    assert "33 B a sample" in cached and NAMED not in cached


def test_without_io_figures_storage_is_not_named() -> None:
    (reason,) = _reasons(None)
    assert reason == (
        "the run left cores idle: 1.20 of 4 in use; the loop waited on something other than "
        "its CPUs (no I/O figures were recorded, so storage is not named)"
    )


def test_io_figures_that_could_not_be_read_say_why_and_name_nothing() -> None:
    why = {"read_bytes": "the kernel keeps no per-process I/O accounting", "iowait": "none"}
    (reason,) = _reasons(_io(read_mib=None, iowait_cores=None, fs=None, not_read=why))
    assert NAMED not in reason and "could not be read, so storage is not named: " in reason
    assert "read_bytes (the kernel keeps no per-process I/O accounting), iowait (none)" in reason
    # one figure quiet, the other not read: quiet where measured, the rest named as unread
    (part,) = _reasons(_io(read_mib=None, not_read={"read_bytes": "not ours to read"}))
    assert "storage is not named: quiet where measured (the data on ext4: iowait 0 %" in part
    assert part.endswith("idle cores) (not read: read_bytes (not ours to read))")
    assert "other than its CPUs and storage" not in part


def test_a_faster_run_stays_better_than_predicted_whatever_storage_shows() -> None:
    reasons = _reasons(_io(read_mib=500.0, iowait_cores=3.0, fs="lustre"), times=FAST)
    assert reasons[0].startswith("better than predicted: 10.0 ms a step")
    assert not any(NAMED in r or "idle" in r for r in reasons)


def test_cpu_starvation_comes_before_storage() -> None:
    busy = {"cores_used": 1.2, "node_cores": 8.0, "node_busy_cores": 7.8}
    (reason,) = _reasons(_io(iowait_cores=2.0), sampled=busy)
    assert reason.startswith("CPU starvation") and NAMED not in reason


# --------------------------------------------------------------------------- the record


def test_a_record_with_io_figures_reads_back_as_written(tmp_path: Path) -> None:
    record = RunRecord.from_json(_data(SLOW, _io(read_mib=80.0, fs="nfs")))
    assert record.resources is not None and record.resources.io is not None
    io = record.resources.io
    assert io.training_read_bytes == 80 * MIB and io.read_mib_s == pytest.approx(8.0)
    written = write_record(tmp_path, record)
    assert written == record
    on_disk = json.loads((tmp_path / "run.json").read_text())["resources"]["io"]
    assert on_disk["read_mib_s"] == 8.0 and on_disk["fs_type"] == "nfs"


def test_an_older_record_without_io_figures_loads(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps(_data(SLOW, None)))
    record = read_record(tmp_path)
    assert record.resources is not None and record.resources.io is None
    assert "io" not in record.to_json()["resources"]


@pytest.mark.parametrize(
    ("io", "said"),
    [
        ({"read_bytes": "many"}, "resources.io.read_bytes is 'many'"),
        ({"not_read": {"read_bytes": 3}}, "resources.io.not_read"),
        ({"iowait_pct": None, "fs_type": 4}, "resources.io.fs_type is 4"),
        ({"read_bytes": -5}, "resources.io.read_bytes is -5, out of range"),
        ({"iowait_pct": 250.0}, "resources.io.iowait_pct is 250.0, out of range"),
    ],
)
def test_malformed_io_figures_are_one_error_naming_the_file(
    tmp_path: Path, io: dict[str, Any], said: str
) -> None:
    (tmp_path / "run.json").write_text(json.dumps(_data(SLOW, io)))
    with pytest.raises(InputError) as caught:
        read_record(tmp_path)
    assert str(tmp_path / "run.json") in str(caught.value) and said in str(caught.value)


# --------------------------------------------------------------------------- the property

quiet_fs = st.one_of(
    st.none(), st.sampled_from(["ext4", "xfs", "tmpfs", "overlay", "btrfs", "zfs", "ramfs"])
)


@st.composite
def _absent_or_quiet(draw: st.DrawFn) -> tuple[dict[str, Any] | None, float]:
    """Storage evidence that is absent or quiet for a run using ``used`` of its 4 cores,
    at 1,600 samples/s (SLOW): each figure missing or under its threshold."""
    used = draw(st.floats(0.0, 1.99))  # under half the 4 cores: the idle-cores reason
    if draw(st.booleans()):
        return None, used
    idle = 4 - used
    iowait = draw(st.one_of(st.none(), st.floats(0.0, IOWAIT_SHOWN * idle * 0.999)))
    per_sample = READ_PER_SAMPLE_SHOWN * 0.999 * 1600 * 10 / MIB  # MiB over 10 s
    read = draw(st.one_of(st.none(), st.floats(0.0, per_sample)))
    return _io(read_mib=read, iowait_cores=iowait, fs=draw(quiet_fs)), used


@given(_absent_or_quiet())
def test_storage_is_never_named_when_its_evidence_is_absent_or_quiet(
    case: tuple[dict[str, Any] | None, float],
) -> None:
    io, used = case
    record = RunRecord.from_json(_data(SLOW, io, {"cores_used": used}))
    reasons = miss_reasons(record, PREDICTION, record.sampled)
    assert reasons and not any(NAMED in r or "comes from storage" in r for r in reasons)


@given(
    used=st.floats(0.0, 1.99),
    share=st.floats(IOWAIT_SHOWN, 1.0),
    fs=st.sampled_from(sorted(NETWORK_FS | {"ext4"})),
)
def test_storage_is_named_whenever_io_wait_shows_it(used: float, share: float, fs: str) -> None:
    """The converse, so that the property above can fail: iowait at or over its share of
    the idle cores names storage, with the figure."""
    idle = 4 - used
    io = _io(iowait_cores=share * idle, fs=fs)
    record = RunRecord.from_json(_data(SLOW, io, {"cores_used": used}))
    (reason,) = miss_reasons(record, PREDICTION, record.sampled)
    assert NAMED in reason and f"I/O wait {share * idle:.2f} cores" in reason


# --------------------------------------------------------------------------- measuring

Part = namedtuple("Part", "device mountpoint fstype opts")


def test_the_data_folders_file_system_is_its_longest_mount_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [
        Part("/dev/sda1", "/", "ext4", ""),
        Part("srv:/d", "/dat", "nfs4", ""),  # a prefix of the name, not a parent folder
        Part("srv:/d", "/data", "nfs4", ""),
        Part("lfs@o2ib:/fs", "/data/lustre", "lustre", ""),
        Part("tmpfs", "/data/lustre", "tmpfs", ""),  # mounted over it: the one on top
    ]
    monkeypatch.setattr(psutil, "disk_partitions", lambda all=False: parts)
    assert data_filesystem(Path("/data/imagenet")) == ("nfs4", "/data")
    assert data_filesystem(Path("/data/lustre/x")) == ("tmpfs", "/data/lustre")
    assert data_filesystem(Path("/datasets")) == ("ext4", "/")
    monkeypatch.setattr(psutil, "disk_partitions", lambda all=False: parts[1:])
    assert data_filesystem(Path("/home/x")) == "no mount point found above /home/x"


def test_figures_not_read_are_absent_with_why_never_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(io_meter, "_ACCOUNTED", False)
    times = namedtuple("times", "user system idle")  # no iowait field (not Linux)
    monkeypatch.setattr(psutil, "cpu_times", lambda: times(1.0, 1.0, 1.0))
    meter = IoMeter(tmp_path)
    meter.first_step([1])
    io = meter.finish()
    assert io.read_bytes is None and io.iowait_pct is None and io.iowait_cores is None
    assert "read_bytes" in io.not_read and "iowait" in io.not_read
    out = io.to_json()
    assert "read_bytes" not in out and "iowait_pct" not in out and "read_mib_s" not in out
    assert "per-process" in out["not_read"]["read_bytes"]


@pytest.mark.skipif(not io_meter._ACCOUNTED, reason="no per-process I/O accounting here")
def test_a_child_that_reads_is_counted_with_its_mark(tmp_path: Path) -> None:
    """A real child: counted once reaped (ru_inblock), its live counter read at the mark."""
    import subprocess
    import sys

    meter = IoMeter(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=subprocess.PIPE
    )
    meter.first_step([child.pid])
    assert child.stdin is not None
    child.stdin.close()
    child.wait()
    io = meter.finish()
    assert io.read_bytes is not None and io.read_bytes >= 0
    assert io.read_bytes_before_first_step is not None and io.first_step_s is not None
    assert io.read_bytes_before_first_step <= io.read_bytes
    assert io.iowait_pct is not None and 0 <= io.iowait_pct <= 100
    assert io.data_dir == str(tmp_path.resolve()) and io.fs_type
