#!/bin/bash
# slurm-local.sh - idempotently install, configure and start a single-node Slurm
# cluster (munge + MariaDB + slurmdbd + slurmctld + slurmd) on Debian 12 without
# systemd.  Re-running it is safe: it only installs/starts what is missing and
# restarts Slurm daemons only when the generated config changed. Concurrent runs
# (two test sessions) wait for each other on a lock, $SLURM_ROOT.lock, which the daemons
# must not inherit (9>&-): they would hold it for good.
# From ../shared/reference/slurm-local.sh; changes: the lock, $R made before apt logs
# into it, job scripts kept in accounting (sacct -B) so a finished job's script can be
# read after slurmctld forgets the job.
# Edit it by replacing the file (write a copy, mv it over): a run waiting on the lock
# reads on from its offset in the file it opened.
#
# Env knobs:
#   SLURM_ROOT=/tmp/tuneadvisor-slurm   everything (config, state, logs, seff) lives here
#   NUM_GPUS=1                       fake GPUs (gres/gpu) to declare; 0 = none
#   WITH_DBD=1                       1 = slurmdbd+MariaDB (real sacct/seff); 0 = jobcomp/filetxt only
#   WAIT_SECS=60                     how long to wait for the node to become idle
#   MEM_ENFORCE=1                    kill jobs whose RSS exceeds --mem (JobAcctGatherParams=OverMemoryKill)
#   USE_CGROUP=0                     1 = proctrack/task cgroup (needs writable cgroup fs; works in a VM,
#                                    usually not in an unprivileged container); 0 = proctrack/linuxproc
#   ACCT_USERS="alice bob"           non-root users to register in accounting (account "ci")
#   TASK_AFFINITY=0                  1 = TaskPlugin=task/affinity (tasks bound to CPUs, as most sites)
#                                    with proctrack/linuxproc; 0 = task/none (ignored with USE_CGROUP=1)
#   CTLD_PORT= SLURMD_PORT=          ports of a second cluster on this host (Slurm's 6817/6818 when empty)
# After it succeeds:   source $SLURM_ROOT/env.sh    (sets SLURM_CONF and PATH for seff)
set -euo pipefail

R=${SLURM_ROOT:-/tmp/tuneadvisor-slurm}
NUM_GPUS=${NUM_GPUS:-1}
WITH_DBD=${WITH_DBD:-1}
WAIT_SECS=${WAIT_SECS:-60}
MEM_ENFORCE=${MEM_ENFORCE:-1}
USE_CGROUP=${USE_CGROUP:-0}
ACCT_USERS=${ACCT_USERS:-}
DB_PORT=${DB_PORT:-13306}
DB_PASS=${DB_PASS:-slurmpw}
TASK_AFFINITY=${TASK_AFFINITY:-0}
CTLD_PORT=${CTLD_PORT:-}
SLURMD_PORT=${SLURMD_PORT:-}
H=$(hostname -s)
ETC=$R/etc RUN=$R/run LOG=$R/log ST=$R/state
export SLURM_CONF=$ETC/slurm.conf

mkdir -p "$R"
exec 9>"$R.lock"
flock 9

T_START=$(date +%s.%N)
ts() { printf '[%6.2fs] %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$T_START" 'BEGIN{print a-b}')" "$*"; }
die() { ts "ERROR: $*"; exit 1; }
# alive PIDFILE COMM : pid file points at a live (non-zombie) process named COMM.
# (PID 1 in some sandboxes does not reap orphans, so `kill -0` alone is not enough.)
alive() {
  local p s c
  p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || return 1
  s=$(ps -o stat= -p "$p" 2>/dev/null) || return 1
  c=$(ps -o comm= -p "$p" 2>/dev/null)
  [[ $s != Z* && $c == "$2"* ]]
}
stop_pid() { # PIDFILE COMM
  alive "$1" "$2" || return 0
  kill "$(cat "$1")"
  for _ in $(seq 100); do alive "$1" "$2" || return 0; sleep 0.1; done
  kill -9 "$(cat "$1")" 2>/dev/null || true
}
wait_for() { # SECONDS CMD...
  local n=$(( $1 * 5 )); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done; return 1
}

# ---------------------------------------------------------------- 1. packages
PKGS="munge slurmctld slurmd slurm-client"
[ "$WITH_DBD" = 1 ] && PKGS="$PKGS slurmdbd mariadb-server libslurm-perl libslurmdb-perl"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  ts "installing:$missing"
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then   # keep postinst scripts from starting daemons
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends $missing >"$R/apt.log" 2>&1 ||
    { apt-get update -q >>"$R/apt.log" 2>&1 && apt-get install -y -q --no-install-recommends $missing >>"$R/apt.log" 2>&1; } ||
    { [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d; die "apt-get failed, see $R/apt.log"; }
  [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  ts "packages installed"
fi
mkdir -p "$ETC" "$RUN" "$LOG" "$ST/ctld" "$ST/d" "$R/bin" "$R/dev"

# ---------------------------------------------------------------- 2. seff (not packaged by Debian)
if [ "$WITH_DBD" = 1 ] && [ ! -x "$R/bin/seff" ]; then
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

# ---------------------------------------------------------------- 3. config
read -r CPUS SOCK CORES THREADS MEM < <(slurmd -C | head -1 | tr ' ' '\n' | awk -F= '
  /^CPUs=/{c=$2} /^SocketsPerBoard=/{s=$2} /^CoresPerSocket=/{k=$2} /^ThreadsPerCore=/{t=$2} /^RealMemory=/{m=$2}
  END{print c, s, k, t, int(m*0.95)}')
[ -n "${MEM:-}" ] || die "slurmd -C gave no node info"

GRES_NODE="" GRES_CONF="AutoDetect=off"
if [ "$NUM_GPUS" -gt 0 ]; then
  GRES_NODE=" Gres=gpu:$NUM_GPUS"
  if [ "$NUM_GPUS" = 1 ]; then
    GRES_CONF="$GRES_CONF
NodeName=$H Name=gpu File=/dev/null"
  else
    # gres/gpu needs File= to be a character device; fake ones are clones of /dev/null (1,3)
    for i in $(seq 0 $((NUM_GPUS - 1))); do
      [ -c "$R/dev/fakegpu$i" ] || mknod "$R/dev/fakegpu$i" c 1 3 || die "mknod failed (need CAP_MKNOD for NUM_GPUS>1)"
    done
    GRES_CONF="$GRES_CONF
NodeName=$H Name=gpu File=$R/dev/fakegpu[0-$((NUM_GPUS - 1))]"
  fi
fi

if [ "$WITH_DBD" = 1 ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_script"
else
  ACCT="AccountingStorageType=accounting_storage/none"
fi

cat > "$ETC/slurm.conf.new" <<EOF
# generated by slurm-local.sh
ClusterName=ci
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
$( if [ "$USE_CGROUP" = 1 ]; then echo ProctrackType=proctrack/cgroup; echo TaskPlugin=task/cgroup,task/affinity
   elif [ "$TASK_AFFINITY" = 1 ]; then echo ProctrackType=proctrack/linuxproc; echo TaskPlugin=task/affinity
   else echo ProctrackType=proctrack/linuxproc; echo TaskPlugin=task/none; fi
   # no line at all when unset: the default config stays byte for byte what it was
   if [ -n "$CTLD_PORT" ]; then echo "SlurmctldPort=$CTLD_PORT"; fi
   if [ -n "$SLURMD_PORT" ]; then echo "SlurmdPort=$SLURMD_PORT"; fi )
ReturnToService=2
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
StateSaveLocation=$ST/ctld
SlurmdSpoolDir=$ST/d
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# As most sites: a job without --mem gets memory per CPU, not the whole node's (which made it
# wait behind every other job, and the backfill reservation held later jobs behind it).
DefMemPerCPU=4096
EnforcePartLimits=ALL
InactiveLimit=0
KillWait=5
MinJobAge=600
Waittime=0
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
$( [ "$MEM_ENFORCE" = 1 ] && [ "$USE_CGROUP" != 1 ] && echo JobAcctGatherParams=OverMemoryKill )
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.txt
$ACCT
GresTypes=gpu
NodeName=$H NodeAddr=127.0.0.1 CPUs=$CPUS Sockets=$SOCK CoresPerSocket=$CORES ThreadsPerCore=$THREADS RealMemory=$MEM$GRES_NODE State=UNKNOWN
PartitionName=debug Nodes=$H Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$H MaxTime=INFINITE State=UP
EOF
printf '%s\n' "$GRES_CONF" > "$ETC/gres.conf.new"
printf 'CgroupPlugin=autodetect\nConstrainCores=yes\nConstrainRAMSpace=%s\nConstrainDevices=no\n' \
  "$( [ "$MEM_ENFORCE" = 1 ] && echo yes || echo no )" > "$ETC/cgroup.conf.new"
cat > "$ETC/slurmdbd.conf.new" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
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
for f in slurm.conf gres.conf cgroup.conf slurmdbd.conf; do
  if cmp -s "$ETC/$f.new" "$ETC/$f"; then rm -f "$ETC/$f.new"; else
    mv "$ETC/$f.new" "$ETC/$f"; CHANGED=1; [ $f = slurmdbd.conf ] && DBD_CHANGED=1
  fi
done
[ $CHANGED = 1 ] && ts "config written to $ETC (node $H: CPUs=$CPUS RealMemory=$MEM gpus=$NUM_GPUS)"
cat > "$R/env.sh" <<EOF
export SLURM_CONF=$ETC/slurm.conf
case ":\$PATH:" in *":$R/bin:"*) ;; *) export PATH=$R/bin:\$PATH ;; esac
EOF

# ---------------------------------------------------------------- 4. munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || { mungekey --create --force 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged --force 9>&-
  wait_for 10 sh -c 'munge -n | unmunge' || die "munged did not start"
  ts "munged started (pid $(cat /run/munge/munged.pid))"
fi

# ---------------------------------------------------------------- 5. MariaDB + slurmdbd
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
  if ! alive "$RUN/mysql/mysqld.pid" mariadbd; then
    if [ ! -d "$ST/mysql/mysql" ]; then
      mariadb-install-db --defaults-file="$ETC/my.cnf" --user=mysql --auth-root-authentication-method=socket \
        >"$LOG/mysql-install.log" 2>&1 || die "mariadb-install-db failed, see $LOG/mysql-install.log"
      ts "MariaDB datadir initialised"
    fi
    setsid /usr/sbin/mariadbd --defaults-file="$ETC/my.cnf" </dev/null >/dev/null 2>&1 9>&- &
    wait_for 30 "${MY[@]}" -e 'select 1' || die "mariadbd did not start, see $LOG/mysql/mysqld.log"
    ts "mariadbd started (port $DB_PORT)"
  fi
  "${MY[@]}" -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
                 CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
                 GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
                 GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
  [ $DBD_CHANGED = 1 ] && stop_pid "$RUN/slurmdbd.pid" slurmdbd
  if ! alive "$RUN/slurmdbd.pid" slurmdbd; then
    slurmdbd 9>&- || die "slurmdbd failed, see $LOG/slurmdbd.log"
    wait_for 30 sacctmgr -n show cluster || die "slurmdbd not answering, see $LOG/slurmdbd.log"
    ts "slurmdbd started"
  fi

  # non-root users need an association, else sacct/seff show wrong user names
  for u in $ACCT_USERS; do
    sacctmgr -n -P show assoc account=ci user="$u" format=user | grep -qx "$u" && continue
    sacctmgr -i add account ci Description=ci Organization=ci >/dev/null 2>&1 || true
    sacctmgr -i add user "$u" Account=ci >/dev/null && ts "accounting user $u added"
  done
fi

# ---------------------------------------------------------------- 6. slurmctld + slurmd
if [ $CHANGED = 1 ]; then stop_pid "$RUN/slurmd.pid" slurmd; stop_pid "$RUN/slurmctld.pid" slurmctld; fi
if ! alive "$RUN/slurmctld.pid" slurmctld; then
  slurmctld -i 9>&- || die "slurmctld failed, see $LOG/slurmctld.log"
  wait_for 30 scontrol ping || die "slurmctld not answering, see $LOG/slurmctld.log"
  ts "slurmctld started"
fi
SLURMD_T0=0
if ! alive "$RUN/slurmd.pid" slurmd; then
  SLURMD_T0=$(date +%s)
  slurmd 9>&- || die "slurmd failed, see $LOG/slurmd.log"
  ts "slurmd started"
fi

# ---------------------------------------------------------------- 7. wait for the node
resumed=0
for i in $(seq $((WAIT_SECS * 5))); do
  st=$(sinfo -h -n "$H" -o %T 2>/dev/null | head -1)
  if [ "$SLURMD_T0" != 0 ]; then   # a freshly started slurmd must have registered first
    reg=$(scontrol show node "$H" 2>/dev/null | grep -oP 'SlurmdStartTime=\K\S+' || true)
    { [ -n "$reg" ] && [ "$reg" != None ] && [ "$(date -d "$reg" +%s)" -ge $((SLURMD_T0 - 1)) ]; } || st="unregistered"
  fi
  case "$st" in
    idle|mixed|allocated|completing) break ;;
    drain*|down*|inval*|fail*)          # left over from an earlier bad config/run
      if [ $resumed = 0 ] && [ "$i" -gt 10 ]; then
        scontrol update NodeName="$H" State=RESUME 2>/dev/null || true; resumed=1
      fi ;;
  esac
  sleep 0.2
done
case "$st" in idle|mixed|allocated|completing) ;; *) sinfo -N -l; die "node $H is '$st', see $LOG/slurmd.log" ;; esac
sinfo
ts "cluster ready: node $H is $st.   Use:  source $R/env.sh"
