#!/bin/bash
# slurm-multinode-stop.sh - stop everything slurm-multinode.sh started and remove its
# network namespaces: the daemons by their pid files (checked to live in our namespaces),
# then every process still inside one of our namespaces (job steps, tasks, a stray srun
# or ta-login shell), then the namespaces themselves (the veths and the bridge go with
# them), then iproute2's /run/netns mount if our start made it and nothing else uses it.
# It waits for a start in progress (the lock). Safe to run when nothing is up.
#   --purge : also delete state (job history, accounting DB), logs, config and wrappers
# From ../shared/reference/multinode/slurm-multinode-stop.sh, unchanged but for this line.
# Env: SLURM_ROOT=/tmp/ta-multinode NS_PREFIX=tamn (as given to slurm-multinode.sh)
R=${SLURM_ROOT:-/tmp/ta-multinode}
P=${NS_PREFIX:-tamn}
RUN=$R/run
[ -d "$R" ] || { echo "nothing under $R"; exit 0; }
exec 9>"$R.lock"
flock 9
netns_id() { stat -L -c %i "/run/netns/$1" 2>/dev/null || true; }
alive() { # PIDFILE COMM [NETNS]  (as in slurm-multinode.sh)
  local p s c
  p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || return 1
  s=$(ps -o stat= -p "$p" 2>/dev/null) || return 1
  c=$(ps -o comm= -p "$p" 2>/dev/null)
  [[ $s != Z* && $c == "$2"* ]] || return 1
  [ -z "${3:-}" ] || [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "net:[$(netns_id "$3")]" ]
}
stop_pid() { # PIDFILE COMM [NETNS]
  alive "$@" || return 0
  echo "stopping $2 (pid $(cat "$1")${3:+ in $3})"
  kill "$(cat "$1")"
  for _ in $(seq 150); do alive "$@" || return 0; sleep 0.1; done
  echo "  $2 still alive, SIGKILL"; kill -9 "$(cat "$1")" 2>/dev/null || true
}
ns_pids() { for ns in "$@"; do ip netns pids "$ns" 2>/dev/null; done | tr '\n' ' '; }
# kill_ns NS... : every process left in these network namespaces (job steps, tasks, a stray
# srun or ta-login shell): TERM, 3 s of grace for all of them together, then KILL
# (slurmstepd ignores TERM: without slurmd to tell it, only KILL ends it)
kill_ns() {
  local pids
  pids=$(ns_pids "$@")
  [ -n "${pids// }" ] || return 0
  echo "ending processes left in the namespaces: $pids"
  kill $pids 2>/dev/null
  for _ in $(seq 30); do [ -z "$(ns_pids "$@" | tr -d ' ')" ] && return 0; sleep 0.1; done
  pids=$(ns_pids "$@")
  [ -n "${pids// }" ] && { echo "  SIGKILL $pids"; kill -9 $pids 2>/dev/null; }
  for _ in $(seq 20); do [ -z "$(ns_pids "$@" | tr -d ' ')" ] && return 0; sleep 0.1; done
}
mine=$(ip netns list 2>/dev/null | awk -v p="$P" '$1 ~ "^" p "-(sw|ctl|login|node[0-9]+)$" {print $1}')

# cancel every job first, while slurmctld and the slurmds can still do it properly: accounting
# records them CANCELLED, and a restart does not recover (and requeue) jobs whose processes
# were killed under it. Up to ~10 s (KillWait=5) when tasks ignore SIGTERM.
if alive "$RUN/slurmctld.pid" slurmctld "$P-ctl" && [ -e "/run/netns/$P-login" ]; then
  on_login() { SLURM_CONF=$R/etc/slurm.conf nsenter --net="/run/netns/$P-login" "$@"; }
  jobs=$(on_login squeue -h -o %i 2>/dev/null | tr '\n' ' ')
  if [ -n "${jobs// }" ]; then
    echo "cancelling jobs: $jobs"
    on_login scancel $jobs 2>/dev/null
    for _ in $(seq 100); do [ -z "$(on_login squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
  fi
fi
for ns in $mine; do   # slurmd first: the controller then sees no node come back
  [[ $ns =~ ^$P-(node[0-9]+)$ ]] && stop_pid "$RUN/slurmd-${BASH_REMATCH[1]}.pid" slurmd "$ns"
done
stop_pid "$RUN/slurmctld.pid" slurmctld "$P-ctl"
stop_pid "$RUN/slurmdbd.pid" slurmdbd "$P-ctl"
stop_pid "$RUN/mysql/mysqld.pid" mariadbd "$P-ctl"
# our munged runs in the root namespace: its pid file is ours, and its command line names our socket
if alive "$RUN/munge/munged.pid" munged && grep -qF "$RUN/munge/munge.socket" "/proc/$(cat "$RUN/munge/munged.pid")/cmdline" 2>/dev/null; then
  stop_pid "$RUN/munge/munged.pid" munged
fi
kill_ns $mine
for ns in $mine; do ip netns del "$ns" && echo "namespace $ns deleted"; done
# iproute2 bind-mounted /run/netns onto itself for our first namespace: undo it when we made it and it is empty
if [ -e "$RUN/netns-mount-ours" ] && ! ls /run/netns 2>/dev/null | grep -q .; then
  grep -q ' /run/netns /run/netns ' /proc/self/mountinfo && umount /run/netns
  rmdir /run/netns 2>/dev/null
  rm -f "$RUN/netns-mount-ours"
fi
if [[ " $* " == *" --purge "* ]]; then
  echo "purging state, logs, config and wrappers under $R"
  rm -rf "$R/state" "$R/log" "$R/run" "$R/etc" "$R/env.sh" "$R/dev" "$R/bin/ta-on" "$R/bin/ta-login"
fi
exit 0
