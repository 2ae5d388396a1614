"""A job's output log read for why the job died: CUDA or host out of memory, NCCL watchdog
timeouts, DataLoader workers out of shared memory, the time limit, arguments the script
refused, missing modules, a CUDA build without kernels for the GPU (``scan.scan_log``)."""
