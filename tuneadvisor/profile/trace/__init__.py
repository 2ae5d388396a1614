"""PyTorch profiler traces (Chrome trace JSON from ``torch.profiler``), read as a stream."""
