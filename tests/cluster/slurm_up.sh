#!/usr/bin/env bash
# A real one-node SLURM cluster on this machine, for the `slurm` tests and for trying `--executor slurm` and
# `--jobs slurm` by hand. Idempotent: a cluster already up is left as it is; daemons that died are restarted.
# Runs as root in a container without systemd or cgroups (proctrack/linuxproc, task/none). No accounting
# database: research-crew reads the scheduler's state from squeue and the jobs' own files, never from sacct.
# With --install it first installs Debian's slurm-wlm daemons and munge. Stop it with slurm_down.sh.
set -euo pipefail

if [[ "${1:-}" == "--install" ]]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi
for tool in slurmctld slurmd munged sinfo; do
    command -v "$tool" >/dev/null || { echo "slurm_up: $tool is not installed (run: $0 --install)" >&2; exit 2; }
done

CONF=/etc/slurm/slurm.conf
MARK="# written by research-crew tests/cluster/slurm_up.sh"
NODE=$(hostname -s)
GPUS=${SLURM_UP_GPUS:-2}  # stand-ins: empty files as the GPUs' device files, so --gres=gpu:N is scheduled
# and counted like real ones (SLURM sets no CUDA_VISIBLE_DEVICES for them: they are not character devices)

if [[ -f "$CONF" ]] && ! grep -qF "$MARK" "$CONF"; then
    echo "slurm_up: $CONF exists and was not written by this script; not touching it" >&2
    exit 2
fi

# munge: one key, its daemon.
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
[[ -s /etc/munge/munge.key ]] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
if ! munge -n </dev/null >/dev/null 2>&1; then
    runuser -u munge -- munged --force 2>/dev/null || munged --force
    for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
fi

# slurm.conf: this node with its real CPUs and memory, one partition, GPUs as a generic resource.
HARDWARE=$(slurmd -C | head -1 | sed -E 's/^NodeName=[^ ]+ //')
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/slurm
NEW=$(cat <<CONFEOF
$MARK
ClusterName=crewtest
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
SchedulerParameters=sched_interval=1
MessageTimeout=30
KillWait=10
MinJobAge=600
MaxJobCount=100000
NodeName=$NODE NodeAddr=127.0.0.1 $HARDWARE Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONFEOF
)
for i in $(seq 0 $((GPUS - 1))); do touch "/run/slurm/gpu$i"; done
GRES="NodeName=$NODE Name=gpu File=/run/slurm/gpu[0-$((GPUS - 1))]"
changed=0
if [[ "$(cat "$CONF" 2>/dev/null)" != "$NEW" ]]; then echo "$NEW" >"$CONF"; changed=1; fi
if [[ "$(cat /etc/slurm/gres.conf 2>/dev/null)" != "$GRES" ]]; then echo "$GRES" >/etc/slurm/gres.conf; changed=1; fi

running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
if [[ $changed == 1 ]]; then  # a new configuration: restart what runs
    for pid in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid; do
        if running "$pid"; then kill "$(cat "$pid")"; for _ in $(seq 100); do running "$pid" || break; sleep 0.1; done; fi
    done
fi
running /run/slurm/slurmctld.pid || slurmctld
running /run/slurm/slurmd.pid || slurmd

# Ready when the node takes jobs.
for _ in $(seq 300); do
    state=$(sinfo -h -n "$NODE" -o %t 2>/dev/null || true)
    case "$state" in *"*"*) ;; idle*|mix*|alloc*) echo "slurm_up: node $NODE $state ($HARDWARE, gpu:$GPUS)"; exit 0 ;; esac
    [[ "$state" == down* || "$state" == drain* ]] && scontrol update nodename="$NODE" state=resume 2>/dev/null || true
    sleep 0.2
done
echo "slurm_up: the node did not come up; see /var/log/slurm/" >&2
sinfo >&2 || true
exit 1
