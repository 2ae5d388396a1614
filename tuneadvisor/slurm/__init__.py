"""Slurm: job scripts, the sbatch option table, a client for the real commands and parsers of their output."""
