#!/bin/bash
# slurm-multinode.sh - idempotently start a real multi-node Slurm 22.05 cluster on ONE
# Debian 12 machine, without systemd, each Slurm "host" in its own Linux network namespace
# (own IP address, own ports, own lo) and its own UTS namespace (own hostname):
#
#     netns tamn-sw     bridge br0 (the "switch"; no address)
#     netns tamn-ctl    ctl    10.99.0.10   slurmctld, slurmdbd, MariaDB (127.0.0.1:3306 there)
#     netns tamn-login  login  10.99.0.5    where users run sbatch/srun/squeue/sacct/seff
#     netns tamn-nodeN  nodeN  10.99.0.1N   slurmd -N nodeN  (N = 1..NODES)
#
# Each namespace has a veth "eth0" whose peer sits on br0 in tamn-sw. The root (default)
# namespace gets no address on 10.99.0.0/24 and no route to it: nothing here is reachable
# from outside the namespaces. Name resolution without DNS and without touching /etc/hosts:
# every process started "on" a node runs in its own mount namespace (unshare --mount) where
# $R/etc/hosts is bind-mounted over /etc/hosts (so `nodeN`,
# `ctl`, `login` resolve, as torch's MASTER_ADDR=$(scontrol show hostnames ...) needs), and
# `unshare --uts` + `hostname NODE` gives it the node's hostname. Jobs inherit all that
# from their slurmd. One munged (own key, own socket under $R, AuthInfo=socket=...) serves
# every node through the shared file system; PIDs, files and cgroups are shared by all nodes.
#
# Re-running it is safe and fast (< 1 s when everything is up): it only creates/starts what
# is missing and restarts Slurm daemons only when the generated config changed (NODES=3
# after NODES=2 adds node3; NODES=2 after 3 removes it). Concurrent runs wait for each other
# on a lock, $SLURM_ROOT.lock, which the daemons must not inherit (9>&-).
# Derived from the project's scripts/slurm-local.sh (the verified one-node recipe): same
# packages, seff fetch, alive/stop_pid helpers, lock and config style.
# Stop with slurm-multinode-stop.sh (kills every process in these namespaces, deletes them).
#
# From ../shared/reference/multinode/slurm-multinode.sh (verified there, README beside it);
# changes: NODES defaults to 3 (the course's 3-node x 2-task job), the project's own tests
# start it from scripts/test and run on its login node (tests/integration/multinode_cluster.py).
# Edit it by replacing the file (write a copy, mv it over): a run waiting on the lock
# reads on from its offset in the file it opened.
#
# Env knobs:
#   SLURM_ROOT=/tmp/ta-multinode   everything (config, state, logs, seff, wrappers) lives here
#   NODES=3                        compute nodes (1..9), named node1..nodeN
#   GPUS_PER_NODE=2                fake GPUs (gres/gpu) per node; 0 = none
#   WITH_DBD=1                     1 = slurmdbd+MariaDB on ctl (real sacct/seff); 0 = no accounting
#   CPUS_PER_NODE=                 empty = the real machine's shape (slurmd -C); e.g. 4 = declare
#                                  4 CPUs per node (SlurmdParameters=config_overrides accepts it)
#   MEM_PER_NODE=6000              RealMemory (MB) declared per node
#   MEM_ENFORCE=1                  kill jobs whose RSS exceeds --mem (JobAcctGatherParams=OverMemoryKill)
#   WAIT_SECS=60                   how long to wait for the nodes to become idle
#   NS_PREFIX=tamn  SUBNET=10.99.0 namespace names and the /24 used inside them
#   ACCT_USERS="alice bob"         non-root users to register in accounting (account "ci")
#   SEFF_FROM=/tmp/tuneadvisor-slurm/bin/seff   copy seff from there if present (else fetched)
#
# Which packages a start would install (asks dpkg, changes nothing):
#   slurm-multinode.sh packages                          prints "missing: PKG ..." or "missing: none"
# Run commands on a node (root only: it enters namespaces):
#   slurm-multinode.sh exec login -- sbatch job.sh      (or  $SLURM_ROOT/bin/ta-login sbatch job.sh)
#   slurm-multinode.sh exec node2 -- scontrol listpids  (or  $SLURM_ROOT/bin/ta-on node2 scontrol listpids)
# SLURM_CONF and PATH (seff) are set there; bin/ta-on and bin/ta-login do the same without
# this script. Slurm commands run in the root namespace cannot reach the cluster: 10.99.0.10
# is not routed there (in this sandbox the default gateway answers any TCP connection, so
# sinfo there says "Insane message length" instead of "Connection refused").
set -euo pipefail

R=${SLURM_ROOT:-/tmp/ta-multinode}
P=${NS_PREFIX:-tamn}
NET=${SUBNET:-10.99.0}
ETC=$R/etc RUN=$R/run LOG=$R/log ST=$R/state
MS=$RUN/munge/munge.socket            # our munged's socket (AuthInfo=socket=$MS)
export SLURM_CONF=$ETC/slurm.conf

# in_node NODE CMD... : run CMD "on" NODE: in its network namespace (nsenter), in a fresh
# UTS namespace with hostname NODE and a fresh mount namespace (slave: mounts made in the
# root namespace still show up; ours never leak out) where $R/etc/hosts is bind-mounted over
# /etc/hosts; it goes away with the last process in it. Not `ip netns exec`: that remounts
# /sys, and the fresh sysfs lacks /sys/fs/cgroup, without which slurmd 22.05 does not start
# ("No filesystem mounted on /sys/fs/cgroup"). Everything is exec'ed, so CMD keeps the
# caller's PID, stdin, signals and exit status.
in_node() {
  local n=$1; shift
  nsenter --net="/run/netns/$P-$n" unshare --uts --mount --propagation slave -- sh -c \
    'hostname "$1" && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"' sh "$n" "$R/etc/hosts" "$@"
}

# ---------------------------------------------------------------- exec: a command on a node
# No lock and no checks beyond the namespace's existence: this is the fast path for tests.
if [ "${1:-}" = exec ]; then
  [ $# -ge 2 ] || { echo "usage: $0 exec NODE [--] [CMD...]   (NODE: login, ctl, node1...)" >&2; exit 2; }
  node=$2; shift 2; [ "${1:-}" = -- ] && shift
  [ -e "/run/netns/$P-$node" ] || { echo "$0: no node '$node' (namespace $P-$node): is the cluster up?" >&2; exit 3; }
  case ":$PATH:" in *":$R/bin:"*) ;; *) export PATH=$R/bin:$PATH ;; esac
  [ $# -gt 0 ] || set -- bash
  in_node "$node" "$@"
  exit $?   # not reached: in_node execs
fi

NODES=${NODES:-3}
GPUS_PER_NODE=${GPUS_PER_NODE:-2}
WITH_DBD=${WITH_DBD:-1}
CPUS_PER_NODE=${CPUS_PER_NODE:-}
MEM_PER_NODE=${MEM_PER_NODE:-6000}
MEM_ENFORCE=${MEM_ENFORCE:-1}
WAIT_SECS=${WAIT_SECS:-60}
ACCT_USERS=${ACCT_USERS:-}
SEFF_FROM=${SEFF_FROM:-/tmp/tuneadvisor-slurm/bin/seff}
DB_PORT=3306                          # inside tamn-ctl only: its own lo, no clash with any other MariaDB
DB_PASS=${DB_PASS:-slurmpw}
[[ $NODES =~ ^[1-9]$ ]] || { echo "NODES must be 1..9" >&2; exit 2; }
PKGS="munge slurmctld slurmd slurm-client iproute2 util-linux"
[ "$WITH_DBD" = 1 ] && PKGS="$PKGS slurmdbd mariadb-server libslurm-perl libslurmdb-perl"
# missing_packages PKG... : those dpkg has not installed, each asked on its own, as
# slurm-local.sh does: `dpkg-query -W` exits 1 for any package it does not know, and asked
# for all at once inside an assignment, pipefail ended this script there, silently.
missing_packages() {
  local p status out=""
  for p in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=""
    [[ $status == *"ok installed"* ]] || out="$out $p"
  done
  printf '%s' "$out"
}
# `slurm-multinode.sh packages`: which packages a start would install (nothing changes)
if [ "${1:-}" = packages ]; then
  # shellcheck disable=SC2086
  m=$(missing_packages $PKGS); echo "missing:${m:- none}"; exit 0
fi
CTL_IP=$NET.10 LOGIN_IP=$NET.5
node_ip() { echo "$NET.$((10 + $1))"; }
NODELIST="node[1-$NODES]"; [ "$NODES" = 1 ] && NODELIST=node1

mkdir -p "$R"
exec 9>"$R.lock"
flock 9

T_START=$(date +%s.%N)
ts() { printf '[%6.2fs] %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$T_START" 'BEGIN{print a-b}')" "$*"; }
die() { ts "ERROR: $*"; exit 1; }
# netns_id NS : the inode of network namespace NS ("" if it does not exist)
netns_id() { stat -L -c %i "/run/netns/$1" 2>/dev/null || true; }
# alive PIDFILE COMM [NETNS] : the pid file points at a live (non-zombie) process named COMM
# (PID 1 in some sandboxes does not reap orphans, so `kill -0` alone is not enough), and, if
# NETNS is given, that process lives in that network namespace: all nodes share one PID
# namespace, and a stale pid file must never make us signal someone else's daemon.
alive() {
  local p s c
  p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || return 1
  s=$(ps -o stat= -p "$p" 2>/dev/null) || return 1
  c=$(ps -o comm= -p "$p" 2>/dev/null)
  [[ $s != Z* && $c == "$2"* ]] || return 1
  [ -z "${3:-}" ] || [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "net:[$(netns_id "$3")]" ]
}
stop_pid() { # PIDFILE COMM [NETNS]
  alive "$@" || return 0
  kill "$(cat "$1")"
  for _ in $(seq 100); do alive "$@" || return 0; sleep 0.1; done
  kill -9 "$(cat "$1")" 2>/dev/null || true
}
wait_for() { # SECONDS CMD...
  local n=$(( $1 * 5 )); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done; return 1
}
# kill_ns NS : end every process left in network namespace NS (job steps, stray sruns)
kill_ns() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null | tr '\n' ' ') || true
  [ -n "${pids// }" ] || return 0
  kill $pids 2>/dev/null || true
  for _ in $(seq 50); do [ -z "$(ip netns pids "$1" 2>/dev/null)" ] && return 0; sleep 0.1; done
  pids=$(ip netns pids "$1" 2>/dev/null | tr '\n' ' ') || true
  [ -n "${pids// }" ] && kill -9 $pids 2>/dev/null || true
}

# ---------------------------------------------------------------- 1. packages
# shellcheck disable=SC2086
missing=$(missing_packages $PKGS)
if [ -n "$missing" ]; then
  ts "installing:$missing"
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then   # keep postinst scripts from starting daemons
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing >"$R/apt.log" 2>&1 ||
    { apt-get update -q >>"$R/apt.log" 2>&1 && apt-get install -y -q --no-install-recommends $missing >>"$R/apt.log" 2>&1; } ||
    { [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d; die "apt-get failed, see $R/apt.log"; }
  [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  ts "packages installed"
fi
mkdir -p "$ETC" "$RUN" "$LOG" "$ST/ctld" "$R/bin" "$R/dev"

# ---------------------------------------------------------------- 2. seff (not packaged by Debian)
if [ "$WITH_DBD" = 1 ] && [ ! -x "$R/bin/seff" ]; then
  if [ -x "$SEFF_FROM" ] && [ "$(readlink -f "$SEFF_FROM")" != "$(readlink -f "$R/bin/seff")" ]; then
    cp "$SEFF_FROM" "$R/bin/seff.tmp" && mv "$R/bin/seff.tmp" "$R/bin/seff"
    ts "seff copied from $SEFF_FROM"
  else
    ts "fetching seff from the Debian slurm-wlm source package"
    A=$R/cache/aptsrc; mkdir -p "$A/lists/partial" "$A/archives/partial"
    # deb-src twins of the machine's own Debian sources (deb822 or one-line style), nothing in /etc/apt changes
    { for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && sed -n 's/^Types: *deb$/Types: deb-src/; /^#/d; p' "$f" && echo; done
    } > "$A/src.sources"
    : > "$A/sources.list"
    [ -f /etc/apt/sources.list ] && sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list > "$A/sources.list"
    mkdir -p "$A/parts" && cp "$A/src.sources" "$A/parts/src.sources"
    O=(-o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts="$A/parts"
       -o Dir::State::Lists="$A/lists" -o Dir::Cache::Archives="$A/archives" -o Debug::NoLocking=1)
    ver=$(dpkg-query -W -f='${source:Version}' slurm-client)
    if ( cd "$A" && { ls slurm-wlm_*.orig.tar.* >/dev/null 2>&1 ||
          { apt-get "${O[@]}" update -q && { apt-get "${O[@]}" source --download-only "slurm-wlm=$ver" ||
                                             apt-get "${O[@]}" source --download-only slurm-wlm; }; }; } ) >"$LOG/seff-fetch.log" 2>&1
    then
      tar xf "$(ls "$A"/slurm-wlm_*.orig.tar.* | head -1)" --wildcards '*/contribs/seff/seff' -O |
        sed '/^use lib "\${FindBin::Bin}/d' > "$R/bin/seff.tmp" && chmod 755 "$R/bin/seff.tmp" && mv "$R/bin/seff.tmp" "$R/bin/seff"
      ts "seff installed in $R/bin"
    else
      ts "WARNING: could not fetch seff (see $LOG/seff-fetch.log); sacct still works"
    fi
  fi
fi

# ---------------------------------------------------------------- 3. network: switch + one namespace per host
# hosts file shared by all nodes (bind-mounted over /etc/hosts inside each namespace only)
{ printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n'
  printf '%s\tctl\n%s\tlogin\n' "$CTL_IP" "$LOGIN_IP"
  for i in $(seq "$NODES"); do printf '%s\tnode%s\n' "$(node_ip "$i")" "$i"; done
} > "$ETC/hosts.new"
if cmp -s "$ETC/hosts.new" "$ETC/hosts"; then rm -f "$ETC/hosts.new"; else mv "$ETC/hosts.new" "$ETC/hosts"; fi

have_ns=" $(ip netns list 2>/dev/null | awk '{printf "%s ", $1}')"
if [[ $have_ns != *" $P-sw "* ]]; then
  # iproute2 bind-mounts /run/netns onto itself the first time; remember if that was us, so
  # the stop script can undo it (only when no namespace at all is left there)
  grep -q ' /run/netns /run/netns ' /proc/self/mountinfo || [ -e "$RUN/netns-mount-ours" ] ||
    { ls /run/netns 2>/dev/null | grep -q . || touch "$RUN/netns-mount-ours"; }
  ip netns add "$P-sw"
  ip -n "$P-sw" link set lo up
  ip -n "$P-sw" link add br0 type bridge
  ip -n "$P-sw" link set br0 up
  ts "switch namespace $P-sw with bridge br0 created"
fi
# host_ns NAME ADDR : namespace $P-NAME with lo up and eth0=ADDR/24 plugged into br0
host_ns() {
  local ns=$P-$1
  if [[ $have_ns == *" $ns "* ]]; then
    ip -n "$ns" -br addr show dev eth0 2>/dev/null | grep -q " $2/24" && return 0
    kill_ns "$ns"; ip netns del "$ns"      # half-made by an interrupted run: start over
  fi
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" link add eth0 type veth peer name "v-$1" netns "$P-sw"
  ip -n "$P-sw" link set "v-$1" master br0 up
  ip -n "$ns" addr add "$2/24" dev eth0
  ip -n "$ns" link set eth0 up
  ts "namespace $ns: $1 = $2"
}
host_ns ctl "$CTL_IP"
host_ns login "$LOGIN_IP"
for i in $(seq "$NODES"); do host_ns "node$i" "$(node_ip "$i")"; done
# nodes beyond NODES (an earlier run with more): stop their slurmd and remove them
for ns in $have_ns; do
  [[ $ns =~ ^$P-node([0-9]+)$ ]] || continue
  i=${BASH_REMATCH[1]}; [ "$i" -gt "$NODES" ] || continue
  stop_pid "$RUN/slurmd-node$i.pid" slurmd "$ns"; kill_ns "$ns"; ip netns del "$ns"
  ts "node$i removed (NODES=$NODES)"
done

# ---------------------------------------------------------------- 4. config
if [ -n "$CPUS_PER_NODE" ]; then
  SHAPE="CPUs=$CPUS_PER_NODE Sockets=1 CoresPerSocket=$CPUS_PER_NODE ThreadsPerCore=1"
else   # the real machine's shape; every node "has" the same 2 cores
  SHAPE=$(slurmd -C | head -1 | tr ' ' '\n' | awk -F= '
    /^CPUs=/{c=$2} /^SocketsPerBoard=/{s=$2} /^CoresPerSocket=/{k=$2} /^ThreadsPerCore=/{t=$2}
    END{printf "CPUs=%s Sockets=%s CoresPerSocket=%s ThreadsPerCore=%s", c, s, k, t}')
fi
[[ $SHAPE == CPUs=[0-9]* ]] || die "slurmd -C gave no node info"

GRES_NODE="" GRES_CONF="AutoDetect=off"
if [ "$GPUS_PER_NODE" -gt 0 ]; then
  GRES_NODE=" Gres=gpu:$GPUS_PER_NODE"
  # gres/gpu needs File= to be a character device; fake ones are clones of /dev/null (1,3),
  # the same files for every node (slurmd only stats them and sets CUDA_VISIBLE_DEVICES)
  for i in $(seq 0 $((GPUS_PER_NODE - 1))); do
    [ -c "$R/dev/fakegpu$i" ] || mknod "$R/dev/fakegpu$i" c 1 3 || die "mknod failed (need CAP_MKNOD)"
  done
  F=$R/dev/fakegpu0; [ "$GPUS_PER_NODE" -gt 1 ] && F="$R/dev/fakegpu[0-$((GPUS_PER_NODE - 1))]"
  GRES_CONF="$GRES_CONF
NodeName=$NODELIST Name=gpu File=$F"
fi

if [ "$WITH_DBD" = 1 ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$CTL_IP
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_script"
else
  ACCT="AccountingStorageType=accounting_storage/none"
fi

cat > "$ETC/slurm.conf.new" <<EOF
# generated by slurm-multinode.sh
ClusterName=mn
SlurmctldHost=ctl($CTL_IP)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$MS
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
# no cgroups: all "nodes" share the machine's cgroup tree; processes are tracked by parentage
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmctldLogFile=$LOG/slurmctld.log
StateSaveLocation=$ST/ctld
# per-node files: %n is the slurmd's NodeName (all nodes share this file system)
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmdLogFile=$LOG/slurmd-%n.log
SlurmdSpoolDir=$ST/d/%n
# report the node shape declared here, not the probed one (all nodes probe the same 2 cores)
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
EnforcePartLimits=ALL
InactiveLimit=0
KillWait=5
MinJobAge=600
Waittime=0
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
$( [ "$MEM_ENFORCE" = 1 ] && echo JobAcctGatherParams=OverMemoryKill )
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.txt
$ACCT
# the munge socket for messages to and from slurmdbd (sacct, sacctmgr, slurmctld<->slurmdbd) is
# AccountingStoragePass, not AuthInfo: without it they use the system munged, whose key differs
# ("Munge decode failed: Invalid credential" in slurmdbd.log). Set even without slurmdbd.
AccountingStoragePass=$MS
GresTypes=gpu
$(for i in $(seq "$NODES"); do
  echo "NodeName=node$i NodeAddr=$(node_ip "$i") NodeHostname=node$i $SHAPE RealMemory=$MEM_PER_NODE$GRES_NODE State=UNKNOWN"
done)
PartitionName=debug Nodes=$NODELIST Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$NODELIST MaxTime=INFINITE State=UP
EOF
printf '%s\n' "$GRES_CONF" > "$ETC/gres.conf.new"
cat > "$ETC/slurmdbd.conf.new" <<EOF
# generated by slurm-multinode.sh
AuthType=auth/munge
AuthInfo=socket=$MS
DbdHost=ctl
DbdAddr=$CTL_IP
SlurmUser=root
LogFile=$LOG/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
chmod 600 "$ETC/slurmdbd.conf.new"   # slurmdbd refuses a world-readable config
CHANGED=0 DBD_CHANGED=0
for f in slurm.conf gres.conf slurmdbd.conf; do
  if cmp -s "$ETC/$f.new" "$ETC/$f"; then rm -f "$ETC/$f.new"; else
    mv "$ETC/$f.new" "$ETC/$f"; CHANGED=1; [ $f = slurmdbd.conf ] && DBD_CHANGED=1
  fi
done
[ $CHANGED = 1 ] && ts "config written to $ETC ($NODELIST: $SHAPE RealMemory=$MEM_PER_NODE gpus=$GPUS_PER_NODE)"
for i in $(seq "$NODES"); do mkdir -p "$ST/d/node$i"; done
cat > "$R/env.sh" <<EOF
# only for commands run inside a node's namespace (see bin/ta-login): the root namespace has no route to $NET.0/24
export SLURM_CONF=$ETC/slurm.conf
case ":\$PATH:" in *":$R/bin:"*) ;; *) export PATH=$R/bin:\$PATH ;; esac
EOF
# wrappers for tests, self-contained (no lock, no checks: a few ms):
#   bin/ta-on NODE [CMD...]  (default CMD: bash)    bin/ta-login [CMD...]
cat > "$R/bin/ta-on.new" <<EOF
#!/bin/sh
# ta-on NODE [CMD...]: run CMD (default: bash) on NODE (login, ctl, node1...) of the Slurm
# cluster in $R (made by slurm-multinode.sh). Root only: it enters namespaces.
n=\$1; shift
[ -e "/run/netns/$P-\$n" ] || { echo "ta-on: no node '\$n' (namespace $P-\$n): is the cluster up?" >&2; exit 3; }
SLURM_CONF=$ETC/slurm.conf; export SLURM_CONF
case ":\$PATH:" in *":$R/bin:"*) ;; *) PATH=$R/bin:\$PATH; export PATH ;; esac
[ \$# -gt 0 ] || set -- bash
exec nsenter --net="/run/netns/$P-\$n" unshare --uts --mount --propagation slave -- sh -c \\
  'hostname "\$1" && mount --bind "\$2" /etc/hosts && shift 2 && exec "\$@"' sh "\$n" "$R/etc/hosts" "\$@"
EOF
printf '#!/bin/sh\n# ta-login [CMD...]: run CMD on the login node of the cluster in %s\nexec %s/bin/ta-on login "$@"\n' \
  "$R" "$R" > "$R/bin/ta-login.new"
for f in ta-on ta-login; do
  chmod 755 "$R/bin/$f.new"
  if cmp -s "$R/bin/$f.new" "$R/bin/$f"; then rm -f "$R/bin/$f.new"; else mv "$R/bin/$f.new" "$R/bin/$f"; fi
done

# ---------------------------------------------------------------- 5. munge (our own daemon, key and socket)
# ours: the pid file names a live munged started with our socket (it runs in the root
# namespace, like the one-node recipe's munged: a stale pid file must not point us at that one)
munged_ours() {
  alive "$RUN/munge/munged.pid" munged && grep -qF "$MS" "/proc/$(cat "$RUN/munge/munged.pid")/cmdline" 2>/dev/null
}
if ! { munged_ours && munge -S "$MS" -n </dev/null 2>/dev/null | unmunge -S "$MS" >/dev/null 2>&1; }; then
  if munged_ours; then stop_pid "$RUN/munge/munged.pid" munged; fi   # alive but not answering
  install -d -o munge -g munge -m 0700 "$ETC/munge" "$LOG/munge" "$ST/munge"
  install -d -o munge -g munge -m 0755 "$RUN/munge"
  [ -s "$ETC/munge/munge.key" ] || dd if=/dev/urandom of="$ETC/munge/munge.key" bs=1024 count=1 2>/dev/null
  chown munge:munge "$ETC/munge/munge.key"; chmod 400 "$ETC/munge/munge.key"
  runuser -u munge -- /usr/sbin/munged --force --socket="$MS" --key-file="$ETC/munge/munge.key" \
    --pid-file="$RUN/munge/munged.pid" --log-file="$LOG/munge/munged.log" --seed-file="$ST/munge/munged.seed" 9>&-
  wait_for 10 sh -c "munge -S '$MS' -n | unmunge -S '$MS'" || die "munged did not start, see $LOG/munge/munged.log"
  ts "munged started (pid $(cat "$RUN/munge/munged.pid"), socket $MS)"
fi

# ---------------------------------------------------------------- 6. MariaDB + slurmdbd on ctl
if [ "$WITH_DBD" = 1 ]; then
  install -d -o mysql -g mysql "$ST/mysql" "$RUN/mysql" "$LOG/mysql"
  cat > "$ETC/my.cnf" <<EOF
[mysqld]
user=mysql
datadir=$ST/mysql
socket=$RUN/mysql/mysqld.sock
pid-file=$RUN/mysql/mysqld.pid
log-error=$LOG/mysql/mysqld.log
bind-address=127.0.0.1
port=$DB_PORT
innodb_buffer_pool_size=64M
innodb_log_file_size=48M
innodb_lock_wait_timeout=900
performance_schema=OFF
skip-name-resolve
EOF
  MY=(mariadb --defaults-file=/dev/null --socket="$RUN/mysql/mysqld.sock" -uroot)
  if ! alive "$RUN/mysql/mysqld.pid" mariadbd "$P-ctl"; then
    if [ ! -d "$ST/mysql/mysql" ]; then
      mariadb-install-db --defaults-file="$ETC/my.cnf" --user=mysql --auth-root-authentication-method=socket \
        >"$LOG/mysql-install.log" 2>&1 || die "mariadb-install-db failed, see $LOG/mysql-install.log"
      ts "MariaDB datadir initialised"
    fi
    # setsid --fork: mariadbd does not daemonize itself; this leaves no waiting shell behind
    in_node ctl setsid --fork /usr/sbin/mariadbd --defaults-file="$ETC/my.cnf" </dev/null >/dev/null 2>&1 9>&-
    wait_for 30 "${MY[@]}" -e 'select 1' || die "mariadbd did not start, see $LOG/mysql/mysqld.log"
    ts "mariadbd started on ctl (127.0.0.1:$DB_PORT inside $P-ctl, socket $RUN/mysql/mysqld.sock)"
  fi
  [ $DBD_CHANGED = 1 ] && stop_pid "$RUN/slurmdbd.pid" slurmdbd "$P-ctl"
  if ! alive "$RUN/slurmdbd.pid" slurmdbd "$P-ctl"; then
    # through the unix socket (shared file system): MariaDB listens on 127.0.0.1 of ctl only
    "${MY[@]}" -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
                   CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
                   GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
                   GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
    in_node ctl slurmdbd 9>&- || die "slurmdbd failed, see $LOG/slurmdbd.log"
    wait_for 30 in_node login sacctmgr -n show cluster || die "slurmdbd not answering, see $LOG/slurmdbd.log"
    ts "slurmdbd started on ctl"
  fi
  # non-root users need an association, else sacct/seff show wrong user names
  for u in $ACCT_USERS; do
    in_node login sacctmgr -n -P show assoc account=ci user="$u" format=user | grep -qx "$u" && continue
    in_node login sacctmgr -i add account ci Description=ci Organization=ci >/dev/null 2>&1 || true
    in_node login sacctmgr -i add user "$u" Account=ci >/dev/null && ts "accounting user $u added"
  done
else   # WITH_DBD=0 after a run with 1: accounting daemons are not wanted any more
  stop_pid "$RUN/slurmdbd.pid" slurmdbd "$P-ctl"; stop_pid "$RUN/mysql/mysqld.pid" mariadbd "$P-ctl"
fi

# ---------------------------------------------------------------- 7. slurmctld on ctl, slurmd on each node
if [ $CHANGED = 1 ]; then
  for i in $(seq "$NODES"); do stop_pid "$RUN/slurmd-node$i.pid" slurmd "$P-node$i"; done
  stop_pid "$RUN/slurmctld.pid" slurmctld "$P-ctl"
fi
if ! alive "$RUN/slurmctld.pid" slurmctld "$P-ctl"; then
  in_node ctl slurmctld -i -f "$SLURM_CONF" 9>&- || die "slurmctld failed, see $LOG/slurmctld.log"
  wait_for 30 in_node login scontrol ping || die "slurmctld not answering, see $LOG/slurmctld.log"
  ts "slurmctld started on ctl"
fi
declare -A SLURMD_T0=()
for i in $(seq "$NODES"); do
  if ! alive "$RUN/slurmd-node$i.pid" slurmd "$P-node$i"; then
    SLURMD_T0[node$i]=$(date +%s)
    in_node "node$i" slurmd -N "node$i" -f "$SLURM_CONF" 9>&- || die "slurmd on node$i failed, see $LOG/slurmd-node$i.log"
    ts "slurmd started on node$i"
  fi
done

# ---------------------------------------------------------------- 8. wait for the nodes
resumed=""
for n in $(seq $((WAIT_SECS * 5))); do
  pending=""
  while read -r name st reg; do
    [ -n "$name" ] || continue
    if [ -n "${SLURMD_T0[$name]:-}" ]; then   # a freshly started slurmd must have registered first
      { [ -n "$reg" ] && [ "$reg" != None ] && [ "$(date -d "$reg" +%s)" -ge $(( ${SLURMD_T0[$name]} - 1 )) ]; } || st=unregistered
    fi
    case "$st" in   # scontrol -o: IDLE, MIXED, IDLE+DRAIN, DOWN+NOT_RESPONDING, ...
      *DRAIN*|DOWN*|*FAIL*|INVAL*)        # left over from an earlier bad config/run (or a test)
        if [ "$n" -gt 10 ] && [[ " $resumed " != *" $name "* ]]; then
          in_node login scontrol update NodeName="$name" State=RESUME 2>/dev/null || true; resumed="$resumed $name"
        fi; pending="$pending $name=$st" ;;
      IDLE*|MIXED*|ALLOCATED*|COMPLETING*) ;;
      *) pending="$pending $name=$st" ;;
    esac
  done < <(in_node login scontrol -o show node 2>/dev/null |
           sed -n 's/^NodeName=\([^ ]*\) .* State=\([^ ]*\) .* SlurmdStartTime=\([^ ]*\) .*/\1 \2 \3/p')
  [ -z "$pending" ] && [ "$(in_node login sinfo -h -N -o %N 2>/dev/null | sort -u | wc -l)" -ge "$NODES" ] && break
  sleep 0.2
done
[ -z "$pending" ] || { in_node login sinfo -N -l; die "nodes not ready:$pending (see $LOG/slurmd-*.log)"; }
in_node login sinfo -N
ts "cluster ready: $NODELIST idle.   Run commands on the login node:  $R/bin/ta-login CMD..."
