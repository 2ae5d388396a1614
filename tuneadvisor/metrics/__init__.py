"""Sampled metrics: one sample model (``model``) for every source, and parsers of recorded logs.

Sources: the live NVML sampler, the psutil host sampler, recordings written by ``watch``, and
``nvidia-smi --query-gpu ... --format=csv`` logs (``nvidia_smi_csv``). Each yields a
``MetricsSeries`` whose ``facts()`` feed the advisor.
"""
