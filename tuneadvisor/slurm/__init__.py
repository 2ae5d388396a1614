"""Slurm inputs: job scripts, the sbatch option table, and what Slurm's commands print.

- ``options``: the sbatch 22.05 option table (long and short spellings, whether a value is
  taken), validation of the values the advisor reads, and the typed view of a request.
- ``units``: durations, sizes (MiB) and GPU counts, as sbatch reads them and as Slurm's
  commands print them (one reader each).
- ``states``: job state names and their groups (active, unfinished, ended).
- ``jobscript``: a lossless job-script model that reads ``#SBATCH`` lines exactly as sbatch
  does: parse, effective directives, problems, edit one directive, render (untouched bytes
  stay identical).
- ``launch_line``: the training command (script, arguments, launchers) in the job script's
  body: found, and edited on the job-script model.
- parsers of the text and JSON that Slurm's commands print (``sacct``, ``seff``,
  ``scontrol``, ``squeue``, ``sinfo``, ``listpids``), and ``client`` that runs them.
"""
