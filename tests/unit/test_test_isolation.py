"""tests/conftest.py's one autouse fixture (issue 29, point 5): a test file with no fixture of
its own runs without the developer's rules, site file, runs folder or rule cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import USER_SETTINGS


def test_a_test_sees_no_user_config(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.getbasetemp()
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        assert Path(os.environ[name]).is_relative_to(base), name
    config = Path(os.environ["XDG_CONFIG_HOME"])
    assert not (config / "tuneadvisor").exists()  # no rules, no site.toml
    for name in USER_SETTINGS:
        assert name not in os.environ, name


def test_a_hanging_test_has_a_time_limit(request: pytest.FixtureRequest) -> None:
    """pytest-timeout is loaded and pyproject gives every test a limit (issue 29, point 5)."""
    assert request.config.pluginmanager.hasplugin("timeout")
    assert 0 < float(request.config.getini("timeout")) <= 600
