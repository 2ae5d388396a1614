"""The sbatch option table and value parsing.

Expected values come from the real sbatch 22.05.8 (``sbatch -v --opt=value``, which prints
the value it will send or its error), so these tests pin sbatch's behaviour, not ours.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.slurm.options import (
    OPTIONS,
    Arg,
    JobRequest,
    NodeRange,
    find_option,
    match_long,
    parse_count,
    parse_exclusive,
    parse_mail_type,
    parse_no_kill,
    parse_nodes,
    short_option,
    validate,
)
from tuneadvisor.slurm.units import (
    GresItem,
    gpu_count,
    parse_gpus,
    parse_gres,
    parse_memory,
    parse_memory_mib,
    parse_time,
    render_memory,
    render_time,
)

# ----------------------------------------------------------------------------- the table

# sbatch 22.05.8: short letter -> long name (each checked with `sbatch -v -X value`).
SHORTS = {
    "a": "array",
    "b": "begin",
    "c": "cpus-per-task",
    "d": "dependency",
    "e": "error",
    "h": "help",
    "i": "input",
    "k": "no-kill",
    "m": "distribution",
    "n": "ntasks",
    "o": "output",
    "p": "partition",
    "q": "qos",
    "s": "oversubscribe",
    "t": "time",
    "v": "verbose",
    "w": "nodelist",
    "x": "exclude",
    "A": "account",
    "B": "extra-node-info",
    "C": "constraint",
    "D": "chdir",
    "F": "nodefile",
    "G": "gpus",
    "H": "hold",
    "J": "job-name",
    "L": "licenses",
    "M": "clusters",
    "N": "nodes",
    "O": "overcommit",
    "Q": "quiet",
    "S": "core-spec",
    "V": "version",
    "W": "wait",
}


def test_short_letters_are_sbatchs() -> None:
    assert {o.short: o.name for o in OPTIONS if o.short} == SHORTS
    assert short_option("c") is find_option("cpus-per-task")
    assert short_option("Z") is None


@pytest.mark.parametrize(
    ("name", "arg"),
    [
        ("cpus-per-task", Arg.REQUIRED),
        ("mem", Arg.REQUIRED),
        ("hold", Arg.NONE),
        ("contiguous", Arg.NONE),
        ("exclusive", Arg.OPTIONAL),
        ("no-kill", Arg.OPTIONAL),
        ("wrap", Arg.REQUIRED),
        ("export", Arg.REQUIRED),
    ],
)
def test_whether_a_value_is_taken(name: str, arg: Arg) -> None:
    option = find_option(name)
    assert option is not None and option.arg is arg


def test_names_are_unique_and_lowercase() -> None:
    names = [n for o in OPTIONS for n in (o.name, *o.aliases)]
    assert len(names) == len(set(names))
    assert all(n == n.lower() and not n.startswith("-") for n in names)


@pytest.mark.parametrize(
    ("spelled", "expected"),
    [
        ("--mem", "mem"),
        ("-c", "cpus-per-task"),
        ("c", "cpus-per-task"),
        ("cluster", "clusters"),
        ("tasks-per-node", "ntasks-per-node"),
        ("workdir", None),  # gone since 17.11
        ("tres-per-task", None),  # not in 22.05's sbatch
        ("cpus", None),  # find_option takes no abbreviations
    ],
)
def test_find_option(spelled: str, expected: str | None) -> None:
    option = find_option(spelled)
    assert (option.name if option else None) == expected


@pytest.mark.parametrize(
    ("spelled", "expected"),
    [
        ("mem", "mem"),  # exact wins over the longer mem-bind, mem-per-cpu, ...
        ("part", "partition"),
        ("cpus-per-t", "cpus-per-task"),
        ("tasks", "ntasks-per-node"),
        ("cluster", "clusters"),
    ],
)
def test_long_abbreviations_resolve_like_getopt(spelled: str, expected: str) -> None:
    match = match_long(spelled)
    assert match.option is not None and match.option.name == expected


def test_ambiguous_and_unknown_long_options() -> None:
    ambiguous = match_long("cpus")
    assert ambiguous.option is None
    assert ambiguous.error == (
        "option '--cpus' is ambiguous; possibilities: '--cpus-per-gpu' '--cpus-per-task'"
    )
    assert match_long("clus").option is None  # cluster-constraint, cluster, clusters
    assert match_long("foo").error == "unrecognized option '--foo'"


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize(("value", "count"), [("4", 4), ("+4", 4), ("04", 4), (" 4", 4)])
def test_counts(value: str, count: int) -> None:
    assert parse_count(value) == count


@pytest.mark.parametrize("value", ["72.", "0", "-1", "4 ", "0x10", "4k", "", "abc", "1e3"])
def test_invalid_counts(value: str) -> None:
    with pytest.raises(ValueError, match="Invalid numeric value"):
        parse_count(value, "cpus-per-task")


def test_count_message_is_sbatchs() -> None:
    assert validate("cpus-per-task", "72.") == 'Invalid numeric value "72." for --cpus-per-task.'
    assert validate("ntasks", "0") == 'Invalid numeric value "0" for --ntasks.'


@pytest.mark.parametrize(
    ("value", "mib"),
    [
        ("8G", 8192),
        ("8g", 8192),
        ("8GB", 8192),
        ("8gb", 8192),
        ("8Gb", 8192),
        ("1024", 1024),  # MB by default
        ("1024M", 1024),
        ("8MB", 8),
        ("8T", 8 * 1024 * 1024),
        ("8K", 1),  # KiB round up
        ("1048577K", 1025),
        ("2047K", 2),
        ("0", 0),  # all of the node's memory
        ("0G", 0),
        ("+8G", 8192),
        (" 8G", 8192),
    ],
)
def test_memory(value: str, mib: int) -> None:
    assert parse_memory(value) == mib


@pytest.mark.parametrize(
    "value", ["8X", "8.5G", "8P", "-1", "8 G", "8B", "8GiB", "8Gx", "1e3", "1.5", ".5G", ""]
)
def test_invalid_memory(value: str) -> None:
    with pytest.raises(ValueError, match=r"Invalid --mem specification"):
        parse_memory(value)


def test_memory_or_none() -> None:
    assert parse_memory_mib("8G") == 8192
    assert parse_memory_mib("8X") is None


@pytest.mark.parametrize(
    ("mib", "text"), [(8192, "8G"), (1536, "1536M"), (0, "0"), (1024 * 1024, "1T"), (1, "1M")]
)
def test_render_memory(mib: int, text: str) -> None:
    assert render_memory(mib) == text


@given(st.integers(min_value=0, max_value=2**40))
def test_rendered_memory_reads_back(mib: int) -> None:
    assert parse_memory(render_memory(mib)) == mib


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("60", 3600),  # minutes
        ("60:30", 3630),  # minutes:seconds
        ("1:00:00", 3600),  # hours:minutes:seconds
        ("1-0", 86400),  # days-hours
        ("1-12", 129600),
        ("1-12:30", 131400),  # days-hours:minutes
        ("1-12:30:15", 131415),  # days-hours:minutes:seconds
        ("1-", 86400),
        ("90:00:00", 324000),
        ("1:60", 120),
        ("0:30", 30),
        ("00:00:01", 1),
    ],
)
def test_time_formats(value: str, seconds: int) -> None:
    assert parse_time(value).seconds == seconds


@pytest.mark.parametrize(
    "value", ["UNLIMITED", "unlimited", "INFINITE", "infinite", "-1", "0", "00:00:00", "0-0"]
)
def test_unlimited_time(value: str) -> None:
    limit = parse_time(value)
    assert limit.unlimited and limit.seconds is None and limit.render() == "UNLIMITED"


@pytest.mark.parametrize(
    "value",
    ["abc", "1:2:3:4", "1.5", " 60", "60 ", "12:", "1-12:", ":30", "1-:5", "1::5", "1-2-3", ""],
)
def test_invalid_time(value: str) -> None:
    with pytest.raises(ValueError, match=r"Invalid --time specification"):
        parse_time(value)


def test_time_limits_slurm_keeps_are_whole_minutes() -> None:
    assert parse_time("0:30").minutes == 1  # sbatch shows 00:01:00
    assert parse_time("1-12:30:15").minutes == 2191  # 1-12:31:00
    assert parse_time("UNLIMITED").minutes is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(3600, "01:00:00"), (129600, "1-12:00:00"), (59, "00:00:59"), (None, "UNLIMITED")],
)
def test_render_time(seconds: int | None, text: str) -> None:
    assert render_time(seconds) == text


@given(st.integers(min_value=1, max_value=2**31 - 1))
def test_rendered_time_reads_back(seconds: int) -> None:
    assert parse_time(render_time(seconds)).seconds == seconds


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", NodeRange(2, 2)),
        ("1-4", NodeRange(1, 4)),
        ("0", NodeRange(0, 0)),
        ("1k", NodeRange(1024, 1024)),
        ("2k-3k", NodeRange(2048, 3072)),
        (" 2", NodeRange(2, 2)),
        ("2 ", NodeRange(2, 2)),
        ("-3", NodeRange(1, 3)),
        ("2-0", NodeRange(2, None)),
    ],
)
def test_nodes(value: str, expected: NodeRange) -> None:
    assert parse_nodes(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", '"abc" is not a valid node count'),
        ("2,4", '"2,4" is not a valid node count'),
        ("1-4x", '"4x" is not a valid node count'),
        ("4-2", "Maximum node count 2 is less than minimum node count 4"),
        ("1-", "Maximum node count -1 is less than minimum node count 1"),
        ("35Km", '"35Km" is not a valid node count'),  # overflows C's int
    ],
)
def test_invalid_nodes(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        parse_nodes(value)


@pytest.mark.parametrize(
    ("value", "items"),
    [
        ("gpu:2", (GresItem("gpu", None, 2),)),
        ("gpu:a100:2", (GresItem("gpu", "a100", 2),)),
        ("gpu", (GresItem("gpu", None, 1),)),
        ("gpu:a100", (GresItem("gpu", "a100", 1),)),
        ("gpu:0", (GresItem("gpu", None, 0),)),
        ("gpu:2k", (GresItem("gpu", None, 2048),)),
        ("gpu:2,mps:10", (GresItem("gpu", None, 2), GresItem("mps", None, 10))),
        (
            "gpu:a100:2,gpu:v100:1",
            (GresItem("gpu", "a100", 2), GresItem("gpu", "v100", 1)),
        ),
        ("none", ()),
    ],
)
def test_gres(value: str, items: tuple[GresItem, ...]) -> None:
    assert parse_gres(value) == items


@pytest.mark.parametrize("value", ["gpu:x:y:z", "gpu=2", "gres/gpu:2", "gpu:1.5", "gpu:-1", ""])
def test_invalid_gres(value: str) -> None:
    with pytest.raises(ValueError, match="Invalid generic resource"):
        parse_gres(value)


@pytest.mark.parametrize(
    ("value", "count", "types"),
    [("2", 2, {None}), ("a100:2", 2, {"a100"}), ("a100:2,v100:1", 3, {"a100", "v100"})],
)
def test_gpus(value: str, count: int, types: set[str | None]) -> None:
    items = parse_gpus(value)
    assert gpu_count(items) == count
    assert {item.type for item in items} == types


@pytest.mark.parametrize("value", ["abc", "a100", "2,a100:1", "a100:x", "-1", ""])
def test_invalid_gpus(value: str) -> None:
    with pytest.raises(ValueError, match=r"(?i)invalid"):
        parse_gpus(value)


def test_mail_type_as_sbatch_reads_it() -> None:
    assert parse_mail_type("END,FAIL") == {"END", "FAIL"}
    assert parse_mail_type("begin") == {"BEGIN"}
    assert parse_mail_type("ALL") == {
        "INVALID_DEPEND",
        "BEGIN",
        "END",
        "FAIL",
        "REQUEUE",
        "STAGE_OUT",
    }
    assert parse_mail_type("none") == frozenset()
    assert parse_mail_type("END,abc") == {"END"}  # unknown words are skipped
    for bad in ("abc", ""):
        with pytest.raises(ValueError, match="Invalid --mail-type specification"):
            parse_mail_type(bad)


def test_exclusive_and_no_kill() -> None:
    assert parse_exclusive(None) == parse_exclusive("") == "exclusive"
    assert parse_exclusive("USER") == "user"
    assert parse_exclusive("mcs") == "mcs"
    with pytest.raises(ValueError, match="Invalid --exclusive specification"):
        parse_exclusive("topo")  # not in 22.05
    assert parse_no_kill(None) and parse_no_kill("SET")
    assert not parse_no_kill("off") and not parse_no_kill("no")
    with pytest.raises(ValueError, match="Invalid --no-kill specification"):
        parse_no_kill("yes")


def test_validate_checks_presence_of_values() -> None:
    assert validate("hold", None) is None
    assert validate("hold", "3") == "option '--hold' doesn't allow an argument"
    assert validate("mem", None) == "option '--mem' requires an argument"
    assert validate("exclusive", None) is None
    assert validate("job-name", "") is None  # sbatch accepts an empty name
    assert validate("comment", "abc") is None  # passed on as written
    assert validate("bogus", "1") == "unrecognized option '--bogus'"


def test_job_request_types_the_directives() -> None:
    request = JobRequest.from_directives(
        {
            "cpus-per-task": "8",
            "mem": "16G",
            "time": "1-12",
            "nodes": "1",
            "gres": "gpu:a100:2",
            "ntasks": "oops",  # invalid: absent here
            "partition": "gpu",
            "exclusive": "",
        }
    )
    assert request.cpus_per_task == 8
    assert request.mem_mib == 16384
    assert request.time_limit is not None and request.time_limit.seconds == 129600
    assert request.nodes == NodeRange(1, 1)
    assert request.gpus_on_node == 2
    assert request.ntasks is None
    assert request.partition == "gpu"
    assert request.exclusive == "exclusive"
    assert JobRequest.from_directives({"gpus-per-node": "4"}).gpus_on_node == 4
    assert JobRequest.from_directives({}).gpus_on_node is None
