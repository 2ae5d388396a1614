"""node.*: the node shape of the job's partition: the site file, else the cluster asked
live, else (for a job script) the stated default ceiling."""

from __future__ import annotations

from tuneadvisor.workspace.readers.base import Gathering, Reader
from tuneadvisor.workspace.site_file import load_site, site_path


def _read(state: Gathering) -> None:
    site = site_path(state.inputs, state.env)
    partition = state.facts.get("job.partition")
    node = None
    if site is not None:
        node = load_site(site).node_for(partition)  # type: ignore[arg-type]
    elif state.client is not None:
        from tuneadvisor.workspace.live_job import cluster_node

        node = cluster_node(
            state.client, partition if isinstance(partition, str) else None, state.notes
        )
    if node is None and "job.nodes" in state.facts:
        # the size unknown: a stated ceiling, so that no request of the script grows unbounded
        from tuneadvisor.advisor.site import assumed_node

        node = assumed_node(state.facts)
    if node is not None:
        state.facts.update(node.facts())


READER = Reader("site file", _read)
