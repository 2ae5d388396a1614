"""The cluster's shape: the site file given (--site), else $TUNEADVISOR_SITE, else
~/.config/tuneadvisor/site.toml when there is one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.files import MAX_CONFIG_INPUT, path_exists, read_text_input
from tuneadvisor.workspace.inputs import Inputs

if TYPE_CHECKING:
    from tuneadvisor.advisor.site import Site


SITE_ENV = "TUNEADVISOR_SITE"


def site_path(inputs: Inputs, env: Mapping[str, str]) -> str | None:
    if inputs.site:
        return inputs.site
    if env.get(SITE_ENV):
        return env[SITE_ENV]
    config = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    default = config / "tuneadvisor" / "site.toml"
    return str(default) if path_exists(default, "site file") and default.is_file() else None


def load_site(path: str) -> Site:
    from tuneadvisor.advisor.site import parse_site

    return parse_site(read_text_input(path, "site file", MAX_CONFIG_INPUT), path)
