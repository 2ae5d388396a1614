"""The fact registry: every name a rule may read, with its type and unit.

Facts are a flat mapping. An input that is missing leaves its facts absent, and a rule that
needs an absent fact does not fire. Producers (profile, job script, script scan, seff,
sacct, metrics, site) must only emit names listed here; a test holds them to it.
"""

from __future__ import annotations

from collections.abc import Mapping

from tuneadvisor.records import record
from tuneadvisor.trainscript.fact_rows import FACT_ROWS as SCRIPT_FACT_ROWS

Facts = Mapping[str, object]


@record
class FactSpec:
    """One registered fact: its name, type, unit and meaning."""

    name: str
    type: str  # "int", "float", "bool" or "str"
    unit: str
    description: str


def _specs(*rows: tuple[str, str, str, str]) -> dict[str, FactSpec]:
    return {name: FactSpec(name, type_, unit, desc) for name, type_, unit, desc in rows}


FACTS: Mapping[str, FactSpec] = _specs(
    # profile: shares of the training function's time by line kind (0..1)
    ("profile.function", "str", "", "the training function the shares describe"),
    ("profile.total_s", "float", "s", "time of the training function"),
    ("profile.loader_share", "float", "fraction", "DataLoader lines' share of the function"),
    ("profile.transfer_share", "float", "fraction", "host-to-device transfer share"),
    ("profile.forward_share", "float", "fraction", "forward pass share"),
    ("profile.loss_share", "float", "fraction", "loss computation share"),
    ("profile.backward_share", "float", "fraction", "backward pass share"),
    ("profile.optimizer_share", "float", "fraction", "optimizer share"),
    ("profile.sync_share", "float", "fraction", "host-sync lines' share"),
    ("profile.compute_share", "float", "fraction", "forward+loss+backward+optimizer share"),
    ("profile.steps", "int", "", "training steps the profile timed (hits of the step's lines)"),
    ("profile.step_s", "float", "s", "time of the training function per step"),
    ("profile.epochs", "int", "epochs", "whole epochs the profile timed (the loop line's hits)"),
    ("profile.epoch_steps", "int", "steps", "steps an epoch, from those whole epochs"),
    ("profile.loader_line", "int", "", "line number of the heaviest DataLoader line"),
    ("profile.ranks", "int", "", "profile files merged (one per rank)"),
    ("profile.skew.measure", "str", "", "DataLoader or step: where the slowest rank is slowest"),
    ("profile.skew.rank", "str", "", "the slowest rank's profile file"),
    ("profile.skew.slowest_s", "float", "s", "the slowest rank's time in that measure"),
    ("profile.skew.others_median_s", "float", "s", "the other ranks' median in that measure"),
    ("profile.skew.ratio", "float", "x", "slowest / the other ranks' median"),
    ("profile.skew.excess_share", "float", "fraction", "the excess over the median / its total"),
    ("profile.files", "str", "", "the source files of the profiled functions (their names)"),
    (
        "profile.other_program",
        "bool",
        "",
        "no profiled file is the training script or a local module it imports",
    ),
    # job script, as sbatch applies it
    ("job.cpus_per_task", "int", "cores", "--cpus-per-task (1 when not given)"),
    (
        "job.exclusive_cores_unknown",
        "bool",
        "",
        "--exclusive without --cpus-per-task: the node's cores, their number not in the script",
    ),
    ("job.mem_mib", "float", "MiB", "--mem per node"),
    ("job.mem_per_cpu_mib", "float", "MiB", "--mem-per-cpu"),
    ("job.time_s", "int", "s", "--time limit"),
    ("job.nodes", "int", "", "--nodes (minimum)"),
    ("job.ntasks", "int", "", "--ntasks (1 when not given)"),
    ("job.ntasks_per_node", "int", "", "--ntasks-per-node"),
    ("job.gpus", "int", "GPUs", "GPUs per node from --gres/--gpus/--gpus-per-node"),
    ("job.gpus_per_task", "int", "GPUs", "--gpus-per-task"),
    ("job.partition", "str", "", "--partition"),
    ("job.tasks_total", "int", "", "tasks over all nodes (the DDP world size under srun)"),
    ("job.tasks_per_node", "int", "", "tasks on each node"),
    ("job.invalid_directive.first", "str", "", "the first invalid directive, with its line"),
    ("job.dos_line_breaks", "bool", "", "the script has CRLF line ends"),
    ("job.invalid_directives", "int", "", "directives sbatch would refuse"),
    ("job.ignored_directives", "int", "", "#SBATCH lines after the first command"),
    ("job.ignored_directive.lines", "str", "", "those lines, with their numbers"),
    ("job.conflicting_directives", "int", "", "directives sbatch refuses together"),
    ("job.conflicting_directive.first", "str", "", "the first such conflict, with its line"),
    ("job.misspelt_directives", "int", "", "header lines like a misspelt #SBATCH (ignored)"),
    ("job.misspelt_directive.lines", "str", "", "those lines, with their numbers"),
    ("job.launcher", "str", "", "python, kernprof, srun, torchrun, ..."),
    ("job.task_launcher", "bool", "", "srun or mpirun starts the job's tasks"),
    ("job.ranks_per_task", "int", "", "training processes each task starts (torchrun's N)"),
    ("job.background_launches", "int", "", "launches started with & that nothing waits for"),
    ("job.background_launch.lines", "str", "", "those launches, with their line numbers"),
    ("job.array.max_task_id", "int", "", "the largest task id of --array"),
    ("job.array.list_size", "int", "", "elements of the literal bash array the tasks index"),
    ("job.array.list_offset", "int", "", "the index is the task id + this"),
    ("job.array.list", "str", "", "that array's name, line and size"),
    ("job.ntasks_per_gpu", "int", "", "--ntasks-per-gpu (0 when not given)"),
    (
        "job.srun_tasks_per_node",
        "int",
        "",
        "tasks per node srun's (or mpirun's) line asks (0: none, or no such launcher)",
    ),
    # the `# tuneadvisor: tuned from ...` line of a script `apply` wrote (tuned_from.py)
    ("job.tuned_from.digest", "str", "", "sha256 of the evidence the script was tuned from"),
    ("job.tuned_from.cpus_per_task", "int", "cores", "cores per task that evidence had"),
    ("job.tuned_from.mem_mib", "float", "MiB", "memory per node that evidence had"),
    ("job.tuned_from.workers", "int", "workers", "DataLoader workers that evidence had"),
    # CPU binding of the launch (slurm/jobscript/cpu_binding.py) and the Slurm that runs it
    (
        "job.srun_cpus_unset",
        "bool",
        "",
        "--cpus-per-task given, srun without -c or SRUN_CPUS_PER_TASK",
    ),
    ("job.omp_threads_set", "bool", "", "OMP_NUM_THREADS is set for the launch"),
    (
        "job.omp_threads_follow_cores",
        "bool",
        "",
        "OMP_NUM_THREADS is set from SLURM_CPUS_PER_TASK (intra-op threads follow the cores)",
    ),
    ("slurm.version", "str", "", "the Slurm that runs the job (srun --version), when asked"),
    (
        "slurm.srun_drops_cpus",
        "bool",
        "",
        "srun there ignores SLURM_CPUS_PER_TASK (22.05-23.02, or not known)",
    ),
    ("slurm.version_note", "str", "", "that version, or why it is not known"),
    ("slurm.version_known", "bool", "", "srun --version answered (a cluster, or srun on PATH)"),
    # the allocation the evidence was measured under (advisor/measured_allocation.py):
    # suggestions are computed from it; job.* stays what the script asks for now
    ("alloc.cpus_per_task", "int", "cores", "cores per task of the measured run"),
    ("alloc.mem_mib", "float", "MiB", "memory per node of the measured run"),
    ("alloc.workers", "int", "workers", "DataLoader workers of the measured run"),
    # the step-time model's sizing (advisor/sizing.py), derived from the facts above
    ("model.workers", "int", "workers", "DataLoader workers per rank the model sizes"),
    ("model.cores_per_task", "int", "cores", "cores per task for them: ranks x (workers + 1)"),
    ("model.storage_bound", "bool", "", "the loop waits while its workers idle: storage"),
    # seff
    ("seff.state", "str", "", "job state"),
    ("seff.cores", "int", "cores", "allocated cores"),
    ("seff.cpu_efficiency_pct", "float", "%", "CPU efficiency"),
    ("seff.mem_used_mib", "float", "MiB", "memory utilized (peak)"),
    ("seff.mem_requested_mib", "float", "MiB", "memory requested"),
    ("seff.mem_efficiency_pct", "float", "%", "memory efficiency"),
    ("seff.wall_s", "float", "s", "wall-clock time"),
    ("seff.final", "bool", "", "the job has ended (statistics are final)"),
    ("seff.exit_code", "int", "", "exit code"),
    ("seff.nodes", "int", "", "nodes"),
    ("seff.cores_per_node", "int", "cores", "cores per node"),
    ("seff.cpu_used_s", "float", "s", "CPU time used"),
    ("seff.core_walltime_s", "float", "s", "cores x wall-clock time"),
    ("seff.mem_used_estimated", "bool", "", "memory is seff's estimated maximum"),
    ("seff.mem_used_node_mib", "float", "MiB", "the busiest node's share of the peak"),
    ("seff.mem_requested_per", "str", "", "node or core"),
    # sacct
    ("sacct.state", "str", "", "job state"),
    ("sacct.exit_code", "int", "", "exit code"),
    ("sacct.elapsed_s", "float", "s", "elapsed wall time"),
    ("sacct.timelimit_s", "float", "s", "time limit"),
    ("sacct.alloc_cpus", "int", "cores", "allocated CPUs"),
    ("sacct.alloc_gpus", "int", "GPUs", "allocated GPUs"),
    ("sacct.req_mem_mib", "float", "MiB", "requested memory"),
    ("sacct.mem_peak_mib", "float", "MiB", "peak memory (as seff computes it)"),
    ("sacct.cpu_efficiency_pct", "float", "%", "CPU efficiency (as seff computes it)"),
    ("sacct.complete", "bool", "", "accounting is filled in (it lags the job end)"),
    ("sacct.exit_signal", "int", "", "signal that ended the job"),
    ("sacct.cpu_used_s", "float", "s", "CPU time used, summed over steps"),
    ("sacct.core_walltime_s", "float", "s", "cores x elapsed"),
    ("sacct.mem_peak_estimated", "bool", "", "peak is per-task RSS x tasks"),
    ("sacct.mem_peak_node_mib", "float", "MiB", "MaxRSS x the tasks on the busiest node"),
    ("sacct.mem_efficiency_pct", "float", "%", "memory efficiency"),
    ("sacct.alloc_nodes", "int", "", "allocated nodes"),
    ("sacct.alloc_mem_mib", "float", "MiB", "allocated memory"),
    ("sacct.req_cpus", "int", "cores", "requested CPUs"),
    ("sacct.max_tasks", "int", "", "most tasks in one step"),
    # usage: seff or sacct, whichever was given (sacct wins: it is per step)
    ("usage.state", "str", "", "COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, CANCELLED, ..."),
    ("usage.cores", "int", "cores", "allocated cores"),
    ("usage.cpu_efficiency_pct", "float", "%", "CPU time over core-walltime"),
    ("usage.mem_peak_mib", "float", "MiB", "peak memory of the job"),
    ("usage.elapsed_s", "float", "s", "wall-clock time"),
    ("usage.mem_efficiency_pct", "float", "%", "peak memory over requested memory"),
    ("usage.killed_for_memory", "bool", "", "OUT_OF_MEMORY, or ended FAILED/CANCELLED over --mem"),
    ("usage.mem_requested_mib", "float", "MiB", "memory the measured job had, all nodes"),
    ("usage.nodes", "int", "", "nodes the measured job ran on"),
    ("usage.mem_peak_node_mib", "float", "MiB", "the busiest node's peak, as accounting tells it"),
    # Princeton jobstats' summary in AdminComment, all nodes together
    ("jobstats.cores", "int", "cores", "cores of the job's cgroups"),
    ("jobstats.cpu_efficiency_pct", "float", "%", "CPU time over run time x cores"),
    ("jobstats.mem_peak_mib", "float", "MiB", "the nodes' memory peaks (RSS + shmem) summed"),
    ("jobstats.mem_peak_node_mib", "float", "MiB", "the largest node's memory peak"),
    ("jobstats.mem_efficiency_pct", "float", "%", "that peak over the job's memory"),
    # GPU: metrics (nvidia-smi logs, watch recordings), else accounting (jobstats, Slurm TRES)
    (
        "gpu.source",
        "str",
        "",
        "nvidia-smi, recording, dcgmi-dmon, dcgm-exporter, jobstats or slurm-tres",
    ),
    ("gpu.count", "int", "GPUs", "GPUs sampled"),
    ("gpu.samples", "int", "", "samples per GPU (jobstats: run time over its 30 s period)"),
    ("gpu.duration_s", "float", "s", "time the samples span"),
    ("gpu.util.mean", "float", "%", "mean GPU utilization"),
    ("gpu.util.p95", "float", "%", "95th percentile GPU utilization"),
    ("gpu.idle_share", "float", "fraction", "share of samples under 5 % utilization"),
    ("gpu.mem_used.max_mib", "float", "MiB", "peak GPU memory used"),
    ("gpu.mem_total_mib", "float", "MiB", "GPU memory"),
    ("gpu.interval_s", "float", "s", "median sampling interval"),
    ("gpu.util.p50", "float", "%", "median GPU utilization"),
    ("gpu.util.max", "float", "%", "highest GPU utilization"),
    ("gpu.util.min_gpu_mean", "float", "%", "mean utilization of the least busy GPU"),
    ("gpu.util.busy_mean", "float", "%", "mean utilization of the GPUs that are not idle"),
    ("gpu.idle_count", "int", "GPUs", "GPUs whose mean utilization is under 5 %"),
    ("gpu.mem_util.mean", "float", "%", "mean memory-controller utilization"),
    ("gpu.mem_used.mean_mib", "float", "MiB", "mean GPU memory used"),
    ("gpu.mem_used.max_pct", "float", "%", "peak GPU memory used of total"),
    ("gpu.power.mean_w", "float", "W", "mean power draw"),
    ("gpu.power.max_w", "float", "W", "peak power draw"),
    ("gpu.power_limit_w", "float", "W", "power limit"),
    ("gpu.temp.max_c", "float", "°C", "peak temperature"),
    ("gpu.sm_clock.mean_mhz", "float", "MHz", "mean SM clock"),
    # GPU activity (issue 25): what the SMs did, from NVML's GPM (watch) or DCGM's profiling
    # fields (dcgmi dmon, dcgm-exporter), beside utilization = share of time any kernel ran.
    # Means are of the GPUs that are not idle (metrics/model.py: activity_facts).
    ("gpu.activity.samples", "int", "", "samples per GPU with SM, tensor or DRAM activity"),
    ("gpu.sm_active.mean", "float", "%", "mean SM activity (share of SMs with a warp)"),
    ("gpu.sm_active.p95", "float", "%", "95th percentile SM activity"),
    ("gpu.sm_occupancy.mean", "float", "%", "mean SM occupancy (resident warps of the maximum)"),
    ("gpu.tensor_active.mean", "float", "%", "mean tensor-pipe activity"),
    ("gpu.tensor_active.max", "float", "%", "highest tensor-pipe activity"),
    ("gpu.dram_active.mean", "float", "%", "mean device-memory bandwidth used of its peak"),
    ("gpu.dram_active.p95", "float", "%", "95th percentile of that"),
    ("gpu.pcie.mean_mib_s", "float", "MiB/s", "mean PCIe traffic, both directions"),
    ("gpu.nvlink.mean_mib_s", "float", "MiB/s", "mean NVLink traffic, both directions"),
    ("gpu.tensor_cores", "bool", "", "every GPU sampled has tensor cores (by its name)"),
    # host metrics (watch recordings)
    ("host.samples", "int", "", "host samples"),
    ("host.duration_s", "float", "s", "time the host samples span"),
    ("host.cpu.count", "int", "cores", "cores seen"),
    ("host.cpu.busy_cores.mean", "float", "cores", "mean busy cores"),
    ("host.cpu.busy_cores.p95", "float", "cores", "95th percentile busy cores"),
    ("host.mem_used.max_mib", "float", "MiB", "peak host memory used"),
    ("host.proc.cpu_cores.mean", "float", "cores", "mean cores used by the job's processes"),
    ("host.proc.cpu_cores.p95", "float", "cores", "95th percentile of that"),
    ("host.proc.rss.max_mib", "float", "MiB", "peak RSS of the job's processes"),
    ("host.proc.count.max", "int", "", "most processes in the job's tree"),
    ("host.proc.main_cpu_pct.mean", "float", "%", "mean CPU of the main process (100 = 1 core)"),
    ("host.proc.workers.max", "int", "", "most DataLoader workers seen in the job's tree"),
    # /proc/PID/io read_bytes summed over the tree; absent where a process's was unreadable
    ("host.proc.storage_read.mean_mib_s", "float", "MiB/s", "mean storage reads of the tree"),
    ("host.proc.storage_read.max_mib_s", "float", "MiB/s", "peak storage reads of the tree"),
    # the workers' states, their CPU and the CPUs the tree may use (metrics/loader_waits.py)
    ("host.proc.workers.rounds", "int", "", "rounds that saw a DataLoader worker's state"),
    ("host.proc.workers.running_share", "float", "fraction", "workers' rounds seen running"),
    ("host.proc.workers.cores.mean", "float", "cores", "mean cores the DataLoader workers used"),
    ("host.proc.workers.cores_each.mean", "float", "cores", "mean cores one worker got"),
    (
        "host.proc.cpus_allowed.others_cores.mean",
        "float",
        "cores",
        "mean cores of the CPUs the job's processes may run on that other processes used",
    ),
    ("host.proc.cpus_allowed", "int", "cores", "CPUs the job's processes may run on"),
    # CPU affinity of the ranks, newest round (metrics/affinity.py; watch, recordings)
    ("host.proc.affinity.ranks", "int", "", "ranks whose CPU affinity was read"),
    ("host.proc.affinity.short_ranks", "int", "", "ranks bound to fewer CPUs than their share"),
    ("host.proc.affinity.min_cpus", "int", "", "fewest CPUs a rank may run on"),
    ("host.proc.affinity.share", "float", "", "that rank's share: node CPUs / ranks"),
    ("host.proc.affinity.short", "str", "", "the short ranks with their CPUs"),
    # node shape: site file or sinfo/scontrol
    ("node.cores", "int", "cores", "cores per node"),
    ("node.mem_mib", "float", "MiB", "memory per node"),
    ("node.gpus", "int", "GPUs", "GPUs per node"),
    ("node.max_cores_per_gpu", "int", "cores", "site limit of cores per GPU"),
    ("node.max_time_s", "int", "s", "the partition's time limit (MaxTime)"),
    # the job's output log (--log, or the StdOut/StdErr of --jobid): why it died. Each cause
    # is the first line of its kind quoted as "FILE:LINE: text" (slurm/joblog/)
    ("log.lines", "int", "", "lines of the job's logs read"),
    ("log.causes", "int", "", "kinds of causes of death found in the logs"),
    ("log.cuda_oom", "str", "", "CUDA out of memory: the line"),
    ("log.cuda_oom.tried_mib", "float", "MiB", "what the failed allocation asked for"),
    ("log.cuda_oom.gpu_total_mib", "float", "MiB", "the GPU's total capacity"),
    ("log.cuda_oom.free_mib", "float", "MiB", "GPU memory free at the failure"),
    ("log.cuda_oom.reserved_unused_mib", "float", "MiB", "reserved by PyTorch, unallocated"),
    ("log.cuda_oom.gpu", "int", "", "the GPU that ran out"),
    ("log.host_oom", "str", "", "the OOM killer (oom_kill event, Out Of Memory, Killed)"),
    ("log.nccl_timeout", "str", "", "an NCCL watchdog timeout: the line"),
    ("log.nccl_timeout.rank", "int", "", "the rank whose collective timed out"),
    ("log.nccl_timeout.op", "str", "", "the collective (ALLREDUCE, BROADCAST, ...)"),
    ("log.nccl_timeout.seq", "int", "", "its sequence number"),
    ("log.nccl_timeout.timeout_s", "float", "s", "the process group's timeout"),
    ("log.shm", "str", "", "DataLoader workers out of shared memory (Bus error, /dev/shm)"),
    ("log.time_limit", "str", "", "slurmstepd's DUE TO TIME LIMIT line"),
    ("log.bad_arguments", "str", "", "argparse's unrecognized arguments: the line"),
    ("log.bad_arguments.args", "str", "", "the arguments refused"),
    ("log.missing_module", "str", "", "ModuleNotFoundError: the line"),
    ("log.missing_module.name", "str", "", "the module not found"),
    ("log.port_in_use", "str", "", "Address already in use (a fixed MASTER_PORT): the line"),
    ("log.port_in_use.port", "int", "", "the port another process held"),
    ("log.missing_file", "str", "", "bash's or Python's No such file or directory: the line"),
    ("log.missing_file.path", "str", "", "the file not found"),
    ("log.command_not_found", "str", "", "bash's command not found: the line"),
    ("log.command_not_found.name", "str", "", "the command bash did not find"),
    ("log.module_unavailable", "str", "", "module load of a module not there: the line"),
    ("log.module_unavailable.name", "str", "", "the module"),
    ("log.no_kernel_image", "str", "", "no kernel image for the GPU: the line"),
    ("log.no_kernel_image.capability", "str", "", "the GPU's compute capability (sm_XX)"),
    ("log.no_kernel_image.supported", "str", "", "the capabilities the PyTorch build has"),
    ("node.assumed", "bool", "", "node.cores/mem_mib are the default ceiling (size unknown)"),
    # torch.profiler traces (PROFILE *.json[.gz], folders: profile/trace/facts.py), the
    # TensorBoard plugin's breakdown: shares of all steps of all ranks, by time
    ("trace.ranks", "int", "", "trace files read (one per rank)"),
    ("trace.steps", "int", "", "ProfilerStep#N steps per rank (the fewest of any rank)"),
    ("trace.step_s", "float", "s", "mean step, to its last device activity"),
    ("trace.step_spread", "float", "fraction", "half the range of the steps over the mean"),
    ("trace.kernel_share", "float", "fraction", "steps' time in compute kernels"),
    ("trace.memcpy_share", "float", "fraction", "in copies, no kernel running"),
    ("trace.memset_share", "float", "fraction", "in memsets, no kernel or copy running"),
    ("trace.communication_share", "float", "fraction", "in NCCL kernels or gloo, nothing above"),
    ("trace.runtime_share", "float", "fraction", "in CUDA runtime calls, the device idle"),
    ("trace.dataloader_share", "float", "fraction", "in the DataLoader, the device idle"),
    ("trace.cpu_op_share", "float", "fraction", "in host operators, the device idle"),
    ("trace.other_share", "float", "fraction", "in other host annotations, the device idle"),
    ("trace.idle_share", "float", "fraction", "neither device nor host busy"),
    ("trace.dataloader_call_ms", "float", "ms", "time per DataLoader __next__ call"),
    ("trace.host_syncs_per_step", "float", "", "cuda*Synchronize calls per step"),
    ("trace.has_device", "bool", "", "the traces hold device (kernel, copy) events"),
    ("trace.gpu_busy_share", "float", "fraction", "steps' time some kernel, copy or set ran"),
    ("trace.communication_exposed_share", "float", "fraction", "communication no compute hides"),
    ("trace.kernels", "int", "", "kernels launched in the traces"),
    ("trace.tensor_core_kernels", "int", "", "kernels whose names show tensor-core math"),
    ("trace.tiny_kernel_share", "float", "fraction", "kernels shorter than 10 µs, by count"),
    ("trace.htod_pageable_copies", "int", "", "host-to-device copies from pageable memory"),
    ("trace.htod_pinned_copies", "int", "", "host-to-device copies from pinned memory"),
    ("trace.htod_pageable_byte_share", "float", "fraction", "HtoD bytes from pageable memory"),
    ("trace.compute_major", "int", "", "the traced GPU's compute capability (7+: tensor cores)"),
    ("trace.device_memory_peak_share", "float", "fraction", "[memory] peak / the GPU's memory"),
    ("trace.skew.rank", "str", "", "the rank with the most step time not waiting on others"),
    ("trace.skew.ratio", "float", "x", "its working time / the other ranks' median"),
    ("trace.skew.excess_share", "float", "fraction", "its excess over the median / the step"),
    # the bundled scripts' probe (--probe FILE: runrecord/probe.py), medians of its windows
    ("probe.ceiling_step_s", "float", "s", "step time with one batch already on the device"),
    ("probe.loop_step_s", "float", "s", "step time of the real loop at the measured setting"),
    ("probe.loop_step_spread", "float", "fraction", "the loop's (max - min) / median step"),
    ("probe.pipeline_batches_per_s.max", "float", "batches/s", "the input pipeline's best"),
    (
        "probe.workers_for_95pct",
        "int",
        "workers",
        "fewest workers whose pipeline reaches 95 % of the ceiling's rate (absent: none)",
    ),
    ("probe.stall_share", "float", "fraction", "the loop's time waiting for the next batch"),
    ("probe.batch_size", "int", "samples", "the probed batch size (per rank)"),
    ("probe.workers", "int", "workers", "the probed loop's DataLoader workers"),
    # the run record beside a profile (`tuneadvisor run` wrote both): the profiled run
    (
        "run.profile_workers_traced",
        "bool",
        "",
        "the line profile's DataLoader workers ran under line_profiler's tracer (false: "
        "the bundled scripts turn it off in forked children)",
    ),
    ("run.batch_size", "int", "", "the profiled run's batch size (its run record)"),
    ("run.samples_per_s", "float", "samples/s", "the profiled run's steady samples/s"),
    ("run.spread", "float", "fraction", "half the range of its steady window's block rates"),
    ("run.others_cores", "float", "cores", "other processes' mean load on the CPUs it could use"),
    ("run.allowed_cpus", "int", "CPUs", "the CPUs it could use (its pool: affinity, cgroup)"),
    ("probe.cores", "int", "cores", "cores the probe could use (its affinity)"),
    ("probe.test_mode", "bool", "", "the step was the device-time stand-in (--device-time-ms)"),
    # training script, from its AST: the scanner declares what it emits
    *SCRIPT_FACT_ROWS,
)

_SAMPLES: Mapping[str, object] = {"int": 2, "float": 0.5, "bool": True, "str": "x"}


def sample_value(name: str) -> object:
    """A value of the fact's declared type, for type-checking expressions at load time."""
    return _SAMPLES[FACTS[name].type]


def type_matches(name: str, value: object) -> bool:
    kind = FACTS[name].type
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)
