"""Options that sites add to sbatch through SPANK plugins (containers, user environments).

sbatch reads them like its own only where the plugin is installed; elsewhere it stops at
them ("unrecognized option"). A script written for such a site is not wrong, so they are
read as a note naming the plugin, never as an invalid directive: that site's sbatch checks
them, not this one. Only the exact names are known here (getopt would also take a unique
prefix where the plugin is loaded; such a spelling stays an unknown option).

Sources, each plugin's own option table:

- Shifter (NERSC): ``wlm_integration/slurm/wrapper.c`` of github.com/NERSC/shifter
  registers ``--image``, ``--volume`` (values) and ``--ccm``; NERSC's Perlmutter build adds
  ``--module`` (``#SBATCH --module=gpu,nccl-2.18`` in NERSC's SC23 tutorial).
- pyxis/enroot (NVIDIA): ``args.c`` of github.com/NVIDIA/pyxis.
- CSCS Alps: the Container Engine's ``--environment`` (an EDF file or name) and uenv's
  ``--uenv`` and ``--view`` (docs.cscs.ch, "Container Engine" and "Using uenvs").
"""

from __future__ import annotations

from dataclasses import dataclass

from tuneadvisor.slurm.options import Arg

__all__ = ["VALUE_OPTIONS", "PluginOption", "plugin_option"]


@dataclass(frozen=True)
class PluginOption:
    name: str  # long name without the dashes
    arg: Arg  # REQUIRED or NONE, as the plugin registers it (has_arg 1 or 0)
    plugin: str  # for the note: whose option it is


_SHIFTER = "NERSC's Shifter plugin"
_PYXIS = "the pyxis container plugin (NVIDIA enroot)"
_CSCS_CE = "CSCS's Container Engine"
_CSCS_UENV = "CSCS's uenv plugin"

_TABLE = (
    PluginOption("image", Arg.REQUIRED, _SHIFTER),
    PluginOption("volume", Arg.REQUIRED, _SHIFTER),
    PluginOption("module", Arg.REQUIRED, _SHIFTER),
    PluginOption("ccm", Arg.NONE, _SHIFTER),
    *(
        PluginOption(f"container-{name}", Arg.REQUIRED, _PYXIS)
        for name in ("image", "mounts", "workdir", "name", "save", "env")
    ),
    *(
        PluginOption(name, Arg.NONE, _PYXIS)
        for name in (
            *("container-mount-home", "no-container-mount-home", "container-remap-root"),
            *("no-container-remap-root", "container-entrypoint", "no-container-entrypoint"),
            *("container-entrypoint-log", "container-writable", "container-readonly"),
        )
    ),
    PluginOption("environment", Arg.REQUIRED, _CSCS_CE),
    PluginOption("uenv", Arg.REQUIRED, _CSCS_UENV),
    PluginOption("view", Arg.REQUIRED, _CSCS_UENV),
)
_BY_NAME = {option.name: option for option in _TABLE}

# The plugin options that take a value, as srun reads them too (``srun --uenv X cmd``).
VALUE_OPTIONS = frozenset(f"--{o.name}" for o in _TABLE if o.arg is Arg.REQUIRED)


def plugin_option(name: str) -> PluginOption | None:
    """The site plugin option of this exact long name (without dashes), if it is one."""
    return _BY_NAME.get(name)
