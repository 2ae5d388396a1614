"""A lossless job-script model that reads ``#SBATCH`` lines exactly as sbatch 22.05 does.

- ``model``: ``JobScript`` (parse, effective directives, problems, edits, render).
- ``syntax``: lines, ``#SBATCH`` arguments, and the records (``Line``, ``Token``,
  ``Directive``, ``Problem`` and the problem ids).
- ``getopt``: the arguments read as sbatch's getopt_long reads them.
- ``checks``: the header, and sbatch's checks of the whole script and of combinations.
- ``plugins``: options sites add to sbatch by SPANK plugins (Shifter, pyxis, CSCS), read
  as notes.
- ``editing``: values rendered back and pending line edits.
- ``misspelt``: header comments like a misspelt ``#SBATCH`` (``#SBACTH``, ``# SBATCH``).
- ``repair``: directives sbatch would refuse or ignore, fixed (a misspelt option or
  ``#SBATCH``, a value a letter off) or removed, before a tuned script is written; never
  into an option set already, one conflicting, or a resource the advice did not size.
- ``set_options``: a plan's sbatch values written into the script, never next to an option
  sbatch refuses with them (cores per GPU stay per GPU; one memory option).
- ``problem_facts``: the facts of conflicting and misspelt directives.

What sbatch does (src/sbatch/opt.c ``_opt_batch_script`` and ``_get_argument``; checked
against the sbatch 22.05.8 binary):

- Lines are split on ``\\n`` only. A line starting with ``#SBATCH`` (or the deprecated
  ``#SLURM``), exactly and in column 1, holds directives; ``##SBATCH``, ``# SBATCH`` and
  `` #SBATCH`` are comments. Reading stops at the first line whose first non-blank character
  is not ``#``: later ``#SBATCH`` lines are ignored.
- After the magic word the line is cut into arguments like a tiny shell: blanks separate,
  ``'`` and ``"`` group (and are removed), a backslash takes the next character literally,
  an unquoted ``#`` starts a comment (even inside a word), an empty argument (``""``) ends
  the line, an unmatched quote or an argument starting with ``:`` is fatal. A word
  ``hetjob``/``packjob`` ends the line; first on its line it starts the next component of
  a heterogeneous job.
- All arguments of all directive lines form one argv, read by getopt_long in order: a value
  may be attached (``--mem=8G``, ``-c4``) or be the next argument, even on the next line;
  long names may be abbreviated; the last value wins; a word that is not an option stops
  sbatch with "Invalid directive found in batch script".
- sbatch refuses scripts that are empty, lack a ``#!`` first line, contain ``\\r\\n`` or a
  NUL byte.

The model keeps every byte: ``render()`` of an unmodified script returns its input. Problems
are collected instead of stopping at the first one, and parsing goes on past them, so
``directives()`` is what sbatch would apply were the bad parts removed.
"""
