"""job.* as the job ran: scontrol's view while slurmctld still has one, else accounting's.
Options given to sbatch on its command line win over the script's #SBATCH lines."""

from __future__ import annotations

import math

from tuneadvisor.slurm.accounting.sacct.records import SacctJob
from tuneadvisor.slurm.client.scontrol import JobInfo


def as_run_facts(shown: JobInfo | None, acct: SacctJob | None) -> dict[str, object]:
    """job.* as the job ran: scontrol's view when it still has one, else accounting's."""
    facts: dict[str, object] = {}
    if acct is not None:
        if acct.timelimit_s:
            facts["job.time_s"] = acct.timelimit_s
        if acct.partition:
            facts["job.partition"] = acct.partition
        if acct.req_mem_mib:
            facts["job.mem_mib"] = acct.req_mem_mib / (acct.alloc_nodes or 1)
        if acct.alloc_nodes:  # `sbatch --nodes=3 job.sbatch` over a script's --nodes=1
            facts["job.nodes"] = acct.alloc_nodes
    if shown is not None:
        facts.update(_shape(shown))
        if shown.time_limit_s:
            facts["job.time_s"] = shown.time_limit_s
        if shown.partition:
            facts["job.partition"] = shown.partition
        if shown.cpus_per_gpu and shown.num_cpus:
            # --cpus-per-gpu: slurmctld's CPUs/Task stays 1; the job's cores are NumCPUs
            facts["job.cpus_per_task"] = max(1, shown.num_cpus // (shown.num_tasks or 1))
        elif shown.cpus_per_task:
            facts["job.cpus_per_task"] = shown.cpus_per_task
        if shown.mem_per_node_mib:
            facts["job.mem_mib"] = shown.mem_per_node_mib
        elif shown.mem_per_cpu_mib:
            facts["job.mem_per_cpu_mib"] = shown.mem_per_cpu_mib
            facts["job.mem_mib"] = shown.mem_per_cpu_mib * _node_cpus(shown)
    return facts


def _shape(shown: JobInfo) -> dict[str, object]:
    """Nodes and tasks as slurmctld placed them: sbatch's --nodes and --ntasks-per-node on the
    command line win over the script's, and a multi-node job's facts must say so."""
    facts: dict[str, object] = {}
    if shown.num_nodes:
        facts["job.nodes"] = shown.num_nodes
    if shown.num_tasks:
        facts["job.tasks_total"] = facts["job.ntasks"] = shown.num_tasks
        # each node's share; a job whose tasks do not split evenly keeps its script's value
        if shown.num_nodes and shown.num_tasks % shown.num_nodes == 0:
            facts["job.tasks_per_node"] = shown.num_tasks // shown.num_nodes
    return facts


def _node_cpus(shown: JobInfo) -> int:
    """CPUs on each node (slurmctld's NumCPUs over its nodes): --mem-per-cpu counts every
    task's CPUs there, not one task's."""
    if shown.num_cpus:
        return max(1, math.ceil(shown.num_cpus / (shown.num_nodes or 1)))
    return shown.cpus_per_task or 1
