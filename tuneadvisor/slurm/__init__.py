"""Slurm inputs: job scripts, the sbatch option table, and what Slurm's commands print.

- ``options``: the sbatch 22.05 option table (long and short spellings, whether a value is
  taken), validation of the values the advisor reads, typed values (MiB, seconds, GPU counts)
  and rendering back to sbatch's spelling.
- ``jobscript``: a lossless job-script model that reads ``#SBATCH`` lines exactly as sbatch
  does: parse, effective directives, problems, edit one directive, render (untouched bytes
  stay identical).
- ``launch_line``: the training command (script, arguments, launchers) in the job script's
  body: found, and edited on the job-script model.
- parsers of the text and JSON that Slurm's commands print (``sacct``, ``seff``, ...).
"""
