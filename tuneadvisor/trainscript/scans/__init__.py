"""The steps of the training-script scan (DDP, devices, loaders, settings, syncs), their results."""
