"""tuneadvisor: a terminal profiler and tuning advisor for PyTorch training on Slurm."""

__version__ = "0.1.0"
