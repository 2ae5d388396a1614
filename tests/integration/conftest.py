"""Fixtures shared by the integration tests that run the bundled training."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_training_mnist import _make_data


@pytest.fixture(scope="module")
def mnist(tmp_path_factory: pytest.TempPathFactory, torch_python: str) -> Path:
    """A small synthetic MNIST (256 training and 64 test images), once per module."""
    root = tmp_path_factory.mktemp("mnist")
    _make_data(torch_python, root, 256, 64)
    return root
