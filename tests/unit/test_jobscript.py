"""Reading and editing job scripts as sbatch 22.05 reads them.

Every "sbatch reads" expectation here was checked with the real sbatch 22.05.8 (``sbatch -v``
prints the options it read from the script, or refuses it); the corpus in
tests/fixtures/jobscripts/ is checked against its recorded output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.slurm import options, units
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.syntax import (
    CONFLICTING_DIRECTIVES,
    DEPRECATED_PREFIX,
    DIRECTIVE_AFTER_COMMAND,
    DOS_LINE_BREAKS,
    EMPTY_SCRIPT,
    HETJOB_COMPONENTS,
    IGNORED_DIRECTIVE,
    INVALID_DIRECTIVE,
    NOT_A_BATCH_SCRIPT,
    NULL_CHARACTER,
    SITE_PLUGIN_OPTION,
)
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.workspace.read_files import read_job

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPUS = FIXTURES / "jobscripts"
EXPECTED: dict[str, Any] = json.loads((CORPUS / "expected.json").read_text())["scripts"]
ORACLE = FIXTURES / "slurm-22.05" / "sbatch-v-jobscripts.txt"


def script(*header: str, body: str = "python train.py\n") -> JobScript:
    return JobScript.parse("#!/bin/bash\n" + "".join(f"{h}\n" for h in header) + body)


def ids(job: JobScript) -> list[str]:
    return [p.id for p in job.problems]


# ----------------------------------------------------------------------------- option forms


@pytest.mark.parametrize(
    "line",
    [
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --cpus-per-task 4",
        "#SBATCH -c4",
        "#SBATCH -c 4",
        "#SBATCH\t-c\t4",
        "#SBATCH -c '4'",
        '#SBATCH --cpus-per-task="4"',
        "#SBATCH '--cpus-per-task=4'",
        "#SBATCH --cpus-per-t=4",  # getopt takes unambiguous abbreviations
        "#SBATCH -c 4 # four cores",
        "#SBATCH -c 4#four cores",
        "#SBATCH-c4",  # sbatch only needs the prefix
        "#SBATCH -c 4   ",
    ],
)
def test_option_forms(line: str) -> None:
    job = script(line)
    assert job.directives() == {"cpus-per-task": "4"}
    assert job.problems == ()


def test_several_options_on_a_line_and_short_forms() -> None:
    job = script('#SBATCH -N1 -n 2 -J "my job" --mem 8G -t 1-12 -p gpu -A proj')
    assert job.directives() == {
        "nodes": "1",
        "ntasks": "2",
        "job-name": "my job",
        "mem": "8G",
        "time": "1-12",
        "partition": "gpu",
        "account": "proj",
    }


def test_short_option_clusters() -> None:
    assert script("#SBATCH -HJname").directives() == {"hold": "", "job-name": "name"}
    assert script("#SBATCH -QHc 5").directives() == {"quiet": "", "hold": "", "cpus-per-task": "5"}


def test_quotes_escapes_and_comments_as_get_argument_reads_them() -> None:
    assert script('#SBATCH --job-name="a"b"c d"').directives()["job-name"] == "abc d"
    assert script('#SBATCH -J "a\\"b" -c 3').directives()["job-name"] == 'a"b'
    assert script("#SBATCH -J 'it\"s'").directives()["job-name"] == 'it"s'
    assert script("#SBATCH -J a\\#b").directives()["job-name"] == "a#b"
    assert script('#SBATCH -J "a#b"').directives()["job-name"] == "a#b"
    assert script("#SBATCH -J a# b -c 2").directives() == {"job-name": "a"}
    assert script('#SBATCH --job-name=""').directives() == {"job-name": ""}
    # An empty argument ends the line, as sbatch's _get_argument returns NULL for it.
    assert script('#SBATCH "" -c 3', "#SBATCH -J y").directives() == {"job-name": "y"}


def test_a_value_can_come_from_the_next_directive_line() -> None:
    job = script("#SBATCH -J", "#SBATCH x")
    assert job.directives() == {"job-name": "x"}
    assert job.directive("job-name") is not None


def test_last_value_wins_but_mail_types_add_up() -> None:
    job = script(
        "#SBATCH --mem=4G -c 2",
        "#SBATCH --mem=6G",
        "#SBATCH --mail-type=BEGIN",
        "#SBATCH --mail-type=END",
        "#SBATCH --mail-type=NONE",  # adds nothing, clears nothing
        "#SBATCH -c 3",
    )
    assert job.directives() == {"mem": "6G", "cpus-per-task": "3", "mail-type": "BEGIN,END"}
    directive = job.directive("cpus-per-task")
    assert directive is not None and directive.line == 7 and directive.spelling == "-c"


def test_requeue_and_no_requeue_are_one_setting() -> None:
    assert script("#SBATCH --requeue", "#SBATCH --no-requeue").directives() == {"no-requeue": ""}
    assert script("#SBATCH --no-requeue", "#SBATCH --requeue").directives() == {"requeue": ""}


@pytest.mark.parametrize(
    "line", ["##SBATCH -c 9", "# SBATCH -c 9", "#!SBATCH -c 9", "# comment", "", "   "]
)
def test_lines_sbatch_skips(line: str) -> None:
    job = script(line, "#SBATCH -c 2")
    assert job.directives() == {"cpus-per-task": "2"}
    assert not job.refused


@pytest.mark.parametrize("line", [" #SBATCH -c 9", "\t#SBATCH -c 9", "#sbatch -c 9"])
def test_near_misses_are_reported_but_ignored(line: str) -> None:
    job = script(line, "#SBATCH -c 2")
    assert job.directives() == {"cpus-per-task": "2"}
    [problem] = job.problems
    assert (problem.id, problem.line, problem.fatal) == (IGNORED_DIRECTIVE, 2, False)


def test_deprecated_slurm_prefix_still_counts() -> None:
    job = script("#SLURM --qos=x", "#SLURM -c 2")
    assert job.directives() == {"qos": "x", "cpus-per-task": "2"}
    assert ids(job) == [DEPRECATED_PREFIX]  # sbatch warns once


def test_reading_stops_at_the_first_command() -> None:
    job = script(
        "#SBATCH -c 2",
        "",
        "  # indented comment",
        "module load cuda",
        "#SBATCH -c 16",
        "#SBATCH --mem=64G",
        body="python train.py\n#SBATCH -J late\n",
    )
    assert job.first_command_line == 5
    assert job.directives() == {"cpus-per-task": "2"}
    after = [(p.line, p.option, p.fatal) for p in job.problems]
    assert after == [(6, "cpus-per-task", False), (7, "mem", False), (9, "job-name", False)]
    assert set(ids(job)) == {DIRECTIVE_AFTER_COMMAND}


# ----------------------------------------------------------------------------- problems


def fatal(job: JobScript) -> list[tuple[str, int | None, str | None, str]]:
    return [(p.id, p.line, p.option, p.message) for p in job.problems if p.fatal]


@pytest.mark.parametrize(
    ("line", "option", "message"),
    [
        (
            "#SBATCH --cpus-per-task=72.",
            "cpus-per-task",
            'Invalid numeric value "72." for --cpus-per-task.',
        ),
        ("#SBATCH --mem=8X", "mem", "Invalid --mem specification"),
        ("#SBATCH --time=abc", "time", "Invalid --time specification"),
        ("#SBATCH --nodes=4-2", "nodes", "Maximum node count 2 is less than minimum node count 4"),
        ("#SBATCH --foo=2", None, "unrecognized option '--foo=2'"),
        ("#SBATCH --cpu-per-task=4", None, "unrecognized option '--cpu-per-task=4'"),
        ("#SBATCH -Z", None, "invalid option -- 'Z'"),
        ("#SBATCH --hold=3", "hold", "option '--hold' doesn't allow an argument"),
        ("#SBATCH --mem", "mem", "option '--mem' requires an argument"),
        ("#SBATCH -c", "cpus-per-task", "option '-c' requires an argument"),
        ("#SBATCH foo", None, "Invalid directive found in batch script: foo"),
        ("#SBATCH --exclusive user", None, "Invalid directive found in batch script: user"),
        ("#SBATCH -- -c 2", None, "Invalid directive found in batch script: -c"),
        ("#SBATCH -J 'abc", None, "line 2: Unmatched `'` in [ 'abc]"),
        ("#SBATCH : -c 2", None, "line 2: Unexpected `:` in [: -c 2]"),
        ("#SBATCHX", None, "Invalid directive found in batch script: X"),
        ("#SBATCH --mail-type=bogus", "mail-type", "Invalid --mail-type specification"),
    ],
)
def test_invalid_directives(line: str, option: str | None, message: str) -> None:
    job = script(line)
    assert job.refused
    assert (INVALID_DIRECTIVE, 2, option, message) in fatal(job)


def test_ambiguous_abbreviation_is_invalid() -> None:
    [(problem_id, _, _, message)] = fatal(script("#SBATCH --gpu=1"))
    assert problem_id == INVALID_DIRECTIVE
    assert message.startswith("option '--gpu=1' is ambiguous")


def test_reading_goes_on_past_a_bad_directive() -> None:
    job = script("#SBATCH --exclusive user -c 2", "#SBATCH --bogus --mem=8G")
    assert job.directives() == {"exclusive": "", "cpus-per-task": "2", "mem": "8G"}
    assert [p.line for p in job.problems] == [2, 3]


def test_dos_line_breaks() -> None:
    job = JobScript.parse("#!/bin/bash\r\n#SBATCH -c 4\r\n\r\npython x.py\r\n")
    assert job.directives() == {"cpus-per-task": "4"}
    [problem] = job.problems
    assert (problem.id, problem.line, problem.fatal) == (DOS_LINE_BREAKS, 1, True)
    assert "DOS line breaks" in problem.message


def test_a_lone_carriage_return_is_not_a_dos_line_break() -> None:
    job = JobScript.parse("#!/bin/bash\n#SBATCH -c 2\necho\r")
    assert job.problems == ()


@pytest.mark.parametrize(
    ("text", "problem_id"),
    [
        ("#SBATCH -c 2\necho\n", NOT_A_BATCH_SCRIPT),
        (" #!/bin/bash\necho\n", NOT_A_BATCH_SCRIPT),
        ("\ufeff#!/bin/bash\necho\n", NOT_A_BATCH_SCRIPT),
        ("", EMPTY_SCRIPT),
        ("   \n\n", EMPTY_SCRIPT),
        ("#!/bin/bash\necho \0 x\n", NULL_CHARACTER),
    ],
)
def test_scripts_sbatch_refuses(text: str, problem_id: str) -> None:
    job = JobScript.parse(text)
    assert job.refused
    assert problem_id in ids(job)


def test_shebang_alone_is_enough() -> None:
    assert not JobScript.parse("#!\n#SBATCH -c 2\necho\n").refused
    assert not JobScript.parse("#!/bin/bash").refused


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (
            ["#SBATCH --mem=1G --mem-per-cpu=1G"],
            "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.",
        ),
        (
            ["#SBATCH -c 2 --cpus-per-gpu=2 --gpus=1"],
            "--cpus-per-gpu is mutually exclusive with --cpus-per-task",
        ),
        (["#SBATCH -G 1 -N 2"], "Failed to validate job spec, --gpus < -N"),
        (
            ["#SBATCH -G 1 --gres=gpu:4"],
            "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket",
        ),
        (
            ["#SBATCH -G 3 --gpus-per-node=2 -N 1"],
            "Failed to validate job spec, --gpus is not multiple of --gres=gpu/--gpus-per-node",
        ),
        (
            ["#SBATCH -G 2 --gres=gpu:a100:2"],
            "Invalid GRES specification (with and without type identification)",
        ),
        (
            ["#SBATCH --gres=gpu:4 --gpus-per-task=1 --ntasks-per-node=2 -n 4"],
            "Failed to validate job spec. Based on --gres=gpu/--gpus-per-node and"
            " --gpus-per-task requested number of tasks per node differ from --ntasks-per-node.",
        ),
        (
            ["#SBATCH --gres=gpu:3 --gpus-per-task=2 -n 1"],
            "Failed to validate job spec, --gres=gpu/--gpus-per-node not multiple of"
            " --gpus-per-task.",
        ),
        (
            ["#SBATCH --gpus-per-task=1"],
            "Failed to validate job spec. --gpus-per-task used without either --gpus"
            " or -n/--ntasks is not allowed.",
        ),
    ],
)
def test_conflicting_directives(header: list[str], message: str) -> None:
    job = script(*header)
    assert [(p.id, p.message) for p in job.problems] == [(CONFLICTING_DIRECTIVES, message)]
    assert job.refused


@pytest.mark.parametrize(
    "header",
    # sbatch 22.05.8 --test-only accepts these: a task count from --ntasks-per-node or a
    # fixed --nodes (Mila's `--nodes=2 --ntasks-per-node=4 --gpus-per-task=rtx8000:1`)
    [
        "--ntasks-per-node=1 --gpus-per-task=1",
        "--nodes=1 --gpus-per-task=1",
        "-N 2 --gpus-per-task=1",
    ],
)
def test_gpus_per_task_with_a_task_count(header: str) -> None:
    assert ids(script(f"#SBATCH {header}")) == []


def test_gpus_per_task_with_a_range_of_nodes_has_no_task_count() -> None:
    job = script("#SBATCH --nodes=1-2 --gpus-per-task=1")  # sbatch 22.05.8 refuses it
    assert ids(job) == [CONFLICTING_DIRECTIVES] and job.refused


def test_heterogeneous_job_components() -> None:
    job = script("#SBATCH -c 2", "#SBATCH hetjob", "#SBATCH -c 1 --mem=4G")
    assert job.components == 2
    assert job.directives() == {"cpus-per-task": "2"}  # the first component
    assert [d.component for d in job.occurrences] == [0, 1, 1]
    assert ids(job) == [HETJOB_COMPONENTS] and not job.refused
    # Memory options carry over to the next component: sbatch refuses this one.
    mixed = script("#SBATCH --mem=1G", "#SBATCH hetjob", "#SBATCH --mem-per-cpu=2G")
    assert CONFLICTING_DIRECTIVES in ids(mixed)


def test_hetjob_word_ends_a_line_but_splits_only_first() -> None:
    job = script("#SBATCH -c 2 hetjob -J y", "#SBATCH --comment=hetjob")
    assert job.components == 1
    assert job.directives() == {"cpus-per-task": "2", "comment": "hetjob"}
    assert script("#SBATCH -J hetjob#x").directives() == {"job-name": "hetjob"}


def test_request_is_the_typed_view() -> None:
    request = script("#SBATCH -c 8 --mem=16G -t 1:00:00 --gres=gpu:2").request()
    assert (request.cpus_per_task, request.mem_mib, request.gpus_on_node) == (8, 16384, 2)


# ----------------------------------------------------------------------------- round trip


@pytest.mark.parametrize(
    "text",
    [
        "#!/bin/bash\n#SBATCH -c 4   \n\tpython x.py",
        "#!/bin/bash\r\n#SBATCH  --mem=8G\t# tabbed comment\r\necho\r\n",
        "#!/bin/sh\n#SBATCH -J 'a b'\n\n\n",
        "",
        "\n",
        "no shebang",
    ],
)
def test_render_returns_the_input(text: str) -> None:
    job = JobScript.parse(text)
    assert job.render_text() == text
    assert job.render() == text.encode()


def test_bytes_that_are_not_utf8_survive() -> None:
    data = b"#!/bin/bash\n#SBATCH -J caf\xe9\n\xff\xfe python x.py\n"
    job = JobScript.parse(data)
    assert job.render() == data
    assert job.directives()["job-name"] == "caf\udce9"


def test_read_keeps_the_path(tmp_path: Path) -> None:
    path = tmp_path / "job.sh"
    path.write_bytes(b"#!/bin/bash\n#SBATCH -c 2\n")
    job = read_job(str(path))
    assert job.path == path and job.directives() == {"cpus-per-task": "2"}


# ----------------------------------------------------------------------------- editing


def edited(text: str, name: str, value: str | None) -> str:
    return JobScript.parse(text).with_directive(name, value).render_text()


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("#SBATCH --cpus-per-task=1", "#SBATCH --cpus-per-task=8"),
        ("#SBATCH --cpus-per-task 1", "#SBATCH --cpus-per-task 8"),
        ("#SBATCH -c1", "#SBATCH -c8"),
        ("#SBATCH -c 1", "#SBATCH -c 8"),
        ("#SBATCH   -c 1    # cores per task", "#SBATCH   -c 8    # cores per task"),
        ("#SBATCH --cpus-per-task='1'", "#SBATCH --cpus-per-task='8'"),
        ('#SBATCH "--cpus-per-task=1"', '#SBATCH "--cpus-per-task=8"'),
        ('#SBATCH "--cpus-per-task="1', '#SBATCH "--cpus-per-task="8'),
        ("#SBATCH --cpus=1x", None),  # not a directive sbatch reads (ambiguous)
        ("#SBATCH -Hc1", "#SBATCH -Hc8"),
        ("#SBATCH --cpus-per-t=1", "#SBATCH --cpus-per-t=8"),
    ],
)
def test_edit_keeps_the_spelling(before: str, after: str | None) -> None:
    text = f"#!/bin/bash\n{before}\npython train.py\n"
    result = edited(text, "cpus-per-task", "8")
    if after is None:
        assert result.splitlines()[1] == before  # left alone; a new line is added
        assert result.splitlines()[2] == "#SBATCH --cpus-per-task=8"
    else:
        assert result == f"#!/bin/bash\n{after}\npython train.py\n"


def test_edit_changes_the_effective_occurrence_only() -> None:
    text = "#!/bin/bash\n#SBATCH --mem=4G\n#SBATCH -c 2 --mem 6G  # later\npython x.py\n"
    assert edited(text, "mem", "12G") == (
        "#!/bin/bash\n#SBATCH --mem=4G\n#SBATCH -c 2 --mem 12G  # later\npython x.py\n"
    )


def test_edit_keeps_crlf_and_no_final_newline() -> None:
    text = "#!/bin/bash\r\n#SBATCH --time=10\r\npython x.py"
    assert edited(text, "time", "1-00:00:00") == (
        "#!/bin/bash\r\n#SBATCH --time=1-00:00:00\r\npython x.py"
    )


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("my job", '"my job"'),
        ("a#b", '"a#b"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("plain", "plain"),
    ],
)
def test_values_are_quoted_when_needed(value: str, written: str) -> None:
    text = "#!/bin/bash\n#SBATCH --job-name=old\necho\n"
    result = JobScript.parse(edited(text, "job-name", value))
    assert result.render_text() == f"#!/bin/bash\n#SBATCH --job-name={written}\necho\n"
    assert result.directives()["job-name"] == value


def test_quote_style_is_kept() -> None:
    text = "#!/bin/bash\n#SBATCH -J 'old name'\necho\n"
    assert edited(text, "job-name", "it's new") == ("#!/bin/bash\n#SBATCH -J 'it\\'s new'\necho\n")


def test_a_quoted_token_is_requoted_as_a_whole() -> None:
    text = '#!/bin/bash\n#SBATCH "--job-name=old name"\necho\n'
    assert edited(text, "job-name", "new") == '#!/bin/bash\n#SBATCH "--job-name=new"\necho\n'


def test_empty_values_short_options_cannot_carry_become_long() -> None:
    text = "#!/bin/bash\n#SBATCH -J old -c 2\n#SBATCH -HJx\necho\n"
    result = JobScript.parse(edited(text, "job-name", ""))
    assert (
        result.render_text() == '#!/bin/bash\n#SBATCH -J old -c 2\n#SBATCH -H --job-name=""\necho\n'
    )
    assert result.directives() == {"job-name": "", "cpus-per-task": "2", "hold": ""}
    spaced = "#!/bin/bash\n#SBATCH --job-name old\necho\n"
    assert edited(spaced, "job-name", "") == '#!/bin/bash\n#SBATCH --job-name=""\necho\n'


def test_a_value_on_the_next_line_is_edited_there() -> None:
    text = "#!/bin/bash\n#SBATCH -J\n#SBATCH old\necho\n"
    assert edited(text, "job-name", "new") == "#!/bin/bash\n#SBATCH -J\n#SBATCH new\necho\n"


def test_optional_values_are_attached_and_dropped() -> None:
    text = "#!/bin/bash\n#SBATCH --exclusive  # whole node\necho\n"
    with_user = edited(text, "exclusive", "user")
    assert with_user == "#!/bin/bash\n#SBATCH --exclusive=user  # whole node\necho\n"
    assert edited(with_user, "exclusive", None) == text
    assert edited("#!/bin/bash\n#SBATCH -k\necho\n", "no-kill", "off") == (
        "#!/bin/bash\n#SBATCH -koff\necho\n"
    )
    assert edited("#!/bin/bash\n#SBATCH --hold\necho\n", "hold", None) == (
        "#!/bin/bash\n#SBATCH --hold\necho\n"
    )


def test_setting_mail_type_replaces_every_one_that_adds_up() -> None:
    text = "#!/bin/bash\n#SBATCH --mail-type=BEGIN\n#SBATCH -c 2 --mail-type=END\necho\n"
    result = JobScript.parse(edited(text, "mail-type", "FAIL"))
    assert result.directives() == {"cpus-per-task": "2", "mail-type": "FAIL"}
    assert result.render_text() == "#!/bin/bash\n#SBATCH -c 2 --mail-type=FAIL\necho\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # after the last directive, not after the comments that follow it
            "#!/bin/bash\n#SBATCH -c 2\n# notes\n\npython x.py\n",
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --mem=8G\n# notes\n\npython x.py\n",
        ),
        (  # after the shebang when there are no directives
            "#!/bin/bash\n\npython x.py\n",
            "#!/bin/bash\n#SBATCH --mem=8G\n\npython x.py\n",
        ),
        (  # the file's line breaks
            "#!/bin/bash\r\n#SBATCH -c 2\r\npython x.py\r\n",
            "#!/bin/bash\r\n#SBATCH -c 2\r\n#SBATCH --mem=8G\r\npython x.py\r\n",
        ),
        (  # no final newline stays that way
            "#!/bin/bash\n#SBATCH -c 2",
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --mem=8G",
        ),
        (  # directives after the first command are not "the last directive"
            "#!/bin/bash\n#SBATCH -c 2\necho\n#SBATCH -J late\n",
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --mem=8G\necho\n#SBATCH -J late\n",
        ),
        (  # a value-less option at the end would take the new line as its value
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH -J\necho\n",
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --mem=8G\n#SBATCH -J\necho\n",
        ),
        (  # nor between an option and the value it takes from a later line
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH -J '' -n 2\n#SBATCH name --comment\necho\n",
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --mem=8G\n"
            "#SBATCH -J '' -n 2\n#SBATCH name --comment\necho\n",
        ),
        (  # before a hetjob separator
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH hetjob\n#SBATCH -c 1\necho\n",
            "#!/bin/bash\n#SBATCH -c 2\n#SBATCH --mem=8G\n#SBATCH hetjob\n#SBATCH -c 1\necho\n",
        ),
        ("python x.py\n", "#SBATCH --mem=8G\npython x.py\n"),
    ],
)
def test_adding_a_directive(text: str, expected: str) -> None:
    assert edited(text, "mem", "8G") == expected


def test_adding_a_flag() -> None:
    assert edited("#!/bin/bash\necho\n", "hold", None) == "#!/bin/bash\n#SBATCH --hold\necho\n"
    assert edited("#!/bin/bash\necho\n", "H", "") == "#!/bin/bash\n#SBATCH --hold\necho\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#SBATCH --mem=8G  # memory\n", ""),
        ("#SBATCH -c 2 --mem=8G  # both\n", "#SBATCH -c 2  # both\n"),
        ("#SBATCH --mem 8G -c 2\n", "#SBATCH -c 2\n"),
        ("#SBATCH --mem=4G\n#SBATCH -c 2\n#SBATCH --mem=8G\n", "#SBATCH -c 2\n"),
        ("#SBATCH -Hc4\n", "#SBATCH -H\n"),
        ("#SBATCH -J\n#SBATCH name\n", ""),
    ],
)
def test_without_directive(text: str, expected: str) -> None:
    name = "job-name" if "-J" in text else "cpus-per-task" if "-Hc" in text else "mem"
    result = JobScript.parse(f"#!/bin/bash\n{text}echo\n").without_directive(name)
    assert result.render_text() == f"#!/bin/bash\n{expected}echo\n"
    assert name not in result.directives()


def test_without_a_directive_that_is_absent_changes_nothing() -> None:
    job = script("#SBATCH -c 2")
    assert job.without_directive("mem") is job


def test_without_a_flag_in_a_cluster() -> None:
    job = script("#SBATCH -HJ'my job'").without_directive("hold")
    assert job.directives() == {"job-name": "my job"}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("cpus-per-task", "72.", "Invalid numeric value"),
        ("mem", "8X", "Invalid --mem specification"),
        ("time", "abc", "Invalid --time specification"),
        ("bogus", "1", "unknown sbatch option"),
        ("hold", "yes", "doesn't allow an argument"),
        ("mem", None, "requires an argument"),
        ("job-name", "two\nlines", "line break"),
    ],
)
def test_edits_sbatch_would_refuse_are_refused(name: str, value: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        script("#SBATCH -c 2").with_directive(name, value)


# ----------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus(name: str) -> None:
    expected = EXPECTED[name]
    data = (CORPUS / name).read_bytes()
    job = JobScript.parse(data, CORPUS / name)  # the model alone: not-a-script files included
    assert job.render() == data
    assert job.directives() == expected["directives"]
    assert [[p.id, p.line] for p in job.problems] == expected["problems"]
    assert job.refused == (expected["sbatch"] == "refuses")
    launch = choose_launch(find_launches(job))
    if "launch" in expected:
        assert launch is not None
        assert launch.line == expected["launch"]["line"]
        assert [x.name for x in launch.launchers] == expected["launch"]["launchers"]
        assert launch.script == expected["launch"]["script"]
        assert list(launch.args) == expected["launch"]["args"]
        assert launch.script_path == CORPUS / "train.py"
    else:
        assert launch is None


def test_every_corpus_script_has_expectations() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.sh")) == sorted(EXPECTED)
    assert len(EXPECTED) >= 15


def oracle_records() -> dict[str, tuple[bool, dict[str, str]]]:
    """What the real sbatch printed for each corpus script: accepted?, options it read."""
    records: dict[str, tuple[bool, dict[str, str]]] = {}
    for block in ORACLE.read_text().split("### ")[1:]:
        name = block.split(" ", 1)[0]
        accepted = "Unable to contact slurm controller" in block
        read = dict(re.findall(r"^sbatch: ([a-z-]+) +: (.*)$", block, re.M))
        records[name] = (accepted, read)
    return records


def same_value(name: str, ours: str, shown: str) -> bool:
    """sbatch -v prints normalised values: compare what they mean."""
    if name in ("mem", "mem-per-cpu", "mem-per-gpu"):
        return units.parse_memory(ours) == (0 if shown == "0?" else units.parse_memory(shown))
    if name == "time":
        return units.parse_time(ours).minutes == units.parse_time(shown).minutes
    if name == "gres":
        return "gres:" + ours.replace(",", ",gres:") == shown
    if name == "exclusive":
        return options.parse_exclusive(ours) == shown
    if name == "mail-type":
        return options.parse_mail_type(ours) == options.parse_mail_type(shown)
    if name == "hold":
        return shown == "set"
    if name in ("output", "error"):
        return shown.endswith("/" + ours)  # made absolute
    return ours == shown


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_expectations_match_real_sbatch(name: str) -> None:
    accepted, read = oracle_records()[name]
    expected = EXPECTED[name]
    assert accepted == (expected["sbatch"] == "accepts")
    if not accepted:
        return
    ours = expected["directives"]
    requeue = read.pop("requeue", None)  # one setting that -v prints under both names
    if requeue is not None:
        read.pop("no-requeue")
        assert {k for k in ours if k.endswith("requeue")} == {requeue}
    assert set(read) - {"verbose"} == set(ours) - {"requeue", "no-requeue"}
    for option, shown in read.items():
        if option != "verbose":
            assert same_value(option, ours[option], shown), option


@pytest.mark.parametrize(
    ("lines", "plugin_options", "directives"),
    [
        (["#SBATCH --image=nersc/pytorch:23.07", "#SBATCH --module=gpu -N 2"], 2, {"nodes": "2"}),
        (["#SBATCH --image docker:x --ccm -c 4"], 2, {"cpus-per-task": "4"}),  # value taken
        (["#SBATCH --container-image=nvcr.io#nvidia/pytorch:24.01-py3"], 1, {}),
        (["#SBATCH --container-mounts /data:/data --no-container-mount-home"], 2, {}),
        (["#SBATCH --environment=my-edf --uenv=prgenv-gnu/24.11:v1 --view=default"], 3, {}),
    ],
)
def test_site_plugin_options_are_notes_not_refusals(
    lines: list[str], plugin_options: int, directives: dict[str, str]
) -> None:
    job = script(*lines)
    assert not job.refused
    found = [p for p in job.problems if p.id == SITE_PLUGIN_OPTION]
    assert len(found) == plugin_options
    assert all(not p.fatal and "that site's sbatch checks it" in p.message for p in found)
    assert job.directives() == directives


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("#SBATCH --imag=x", "unrecognized option '--imag=x'"),  # no prefixes of plugin names
        ("#SBATCH --container-image", "option '--container-image' requires an argument"),
        ("#SBATCH --shifter-image=x", "unrecognized option '--shifter-image=x'"),
        ("#SBATCH --ccm=1", "option '--ccm' doesn't allow an argument"),
    ],
)
def test_near_plugin_options_stay_invalid(line: str, message: str) -> None:
    job = script(line)
    assert job.refused
    assert message in [p.message for p in job.problems if p.id == INVALID_DIRECTIVE]
