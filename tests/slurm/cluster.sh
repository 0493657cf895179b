#!/usr/bin/env bash
# A real single-node SLURM cluster for the workflow tests: munged + slurmctld + slurmd (Debian
# packages slurmctld slurmd slurm-client munge), started as root without systemd and stopped by PID.
#   bash tests/slurm/cluster.sh up      # idempotent; prints sinfo when the node is idle
#   bash tests/slurm/cluster.sh down    # stops only the daemons this script started
#   bash tests/slurm/cluster.sh status  # exit 0 when the node answers
# SLURM_TEST_DIR (default /tmp/careval-slurm) holds state, spool, logs and PID files. The config
# goes to /etc/slurm (slurm.conf, gres.conf), where srun inside a job finds it (slurmd does not
# pass a SLURM_CONF of the submitting shell on); a slurm.conf that this script did not write is
# never overwritten: `up` stops with an error instead.
# No accounting daemon: the tests poll job states with squeue (profile key slurm-status-command),
# and MinJobAge=600 keeps finished jobs visible to squeue/scontrol long enough for that.
# The node advertises one GPU GRES backed by /dev/null so that the --gpus=N the slurm profile
# builds for LLM jobs is accepted and scheduled like on a GPU node (no device is used).
set -euo pipefail
D=${SLURM_TEST_DIR:-/tmp/careval-slurm}
CONF_DIR=/etc/slurm
MARK="# written by careval tests/slurm/cluster.sh"
export SLURM_CONF=$CONF_DIR/slurm.conf
NODE=$(hostname -s)

running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_idle() { sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)$'; }

up() {
    command -v slurmctld >/dev/null || { echo "slurmctld not installed (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 3; }
    [ "$(id -u)" = 0 ] || { echo "cluster.sh up needs root (munge and slurmd run as root here)" >&2; exit 3; }
    if running "$D/run/slurmctld.pid" && running "$D/run/slurmd.pid" && node_idle; then
        sinfo; echo "export SLURM_CONF=$SLURM_CONF"; return 0
    fi
    if [ -e "$SLURM_CONF" ] && ! grep -qxF "$MARK" "$SLURM_CONF"; then
        echo "$SLURM_CONF exists and is not the test cluster's: not overwriting it" >&2; exit 3
    fi
    mkdir -p "$D"/{state,spool,log,run} "$CONF_DIR"
    local cpus mem_mb
    cpus=$(nproc)
    mem_mb=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 - 1024 ))  # leave 1 GiB to the OS

    # munge: the key is created once; munged is started unless one already runs
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create
        chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
    fi
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        # munged writes its PID file as the munge user, so into a folder that user owns
        mkdir -p "$D/run/munge" && chown munge:munge "$D/run/munge"
        runuser -u munge -- /usr/sbin/munged --pid-file="$D/run/munge/munged.pid"
        munge -n | unmunge >/dev/null
    fi

    cat > "$CONF_DIR/gres.conf" <<GRES
$MARK
NodeName=$NODE Name=gpu File=/dev/null
GRES
    cat > "$CONF_DIR/slurm.conf" <<CONF
$MARK
ClusterName=careval-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# a job without --mem must not take the whole node
DefMemPerCPU=1000
GresTypes=gpu
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldPort=6817
SlurmdPort=6818
InactiveLimit=0
KillWait=30
# squeue (no accounting here) sees a finished job for this long; the plugin needs >= 3x its first poll delay
MinJobAge=600
SlurmctldTimeout=120
SlurmdTimeout=300
Waittime=0
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF

    # gres.conf is read from beside the -f file
    running "$D/run/slurmctld.pid" || slurmctld -f "$SLURM_CONF"
    running "$D/run/slurmd.pid" || slurmd -f "$SLURM_CONF"
    for _ in $(seq 1 120); do node_idle && break; sleep 0.5; done
    if ! node_idle; then
        echo "SLURM node did not come up; see $D/log/slurmctld.log and $D/log/slurmd.log" >&2
        tail -5 "$D/log/slurmd.log" >&2 || true
        exit 1
    fi
    sinfo
    echo "export SLURM_CONF=$SLURM_CONF"
}

down() {
    for pidfile in "$D/run/slurmd.pid" "$D/run/slurmctld.pid" "$D/run/munge/munged.pid"; do
        local name
        name=$(basename "$pidfile" .pid)
        if running "$pidfile"; then
            local pid
            pid=$(cat "$pidfile")
            kill "$pid"
            for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
            echo "stopped $name (pid $pid)"
        fi
        rm -f "$pidfile"
    done
    for conf in "$CONF_DIR/slurm.conf" "$CONF_DIR/gres.conf"; do
        if [ -e "$conf" ] && grep -qxF "$MARK" "$conf"; then rm -f "$conf"; fi
    done
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) node_idle ;;
    *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
