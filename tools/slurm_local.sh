#!/usr/bin/env bash
# A throwaway single-node Slurm cluster for lionrun's tests, started and stopped by the project itself.
#
#   tools/slurm_local.sh up DIR     install Debian's slurm-wlm and munge when missing, write a
#                                   single-node slurm.conf (cluster `lionrun`, node `localhost`)
#                                   and a munge key under DIR, start munged, slurmctld and slurmd
#                                   on free loopback ports, wait until the node is idle, write
#                                   DIR/env (`export SLURM_CONF=...`) and print `SLURM_CONF=DIR/slurm.conf`
#   tools/slurm_local.sh down DIR   stop the three daemons (also half-started ones) and remove DIR
#
# Runs as root (slurmd must be root to start jobs; CI is root). Idempotent: `up` on a healthy DIR
# prints the same line and starts nothing; `up` on a broken DIR stops what is left and starts anew.
# No systemd is involved: each daemon is started directly with its files under DIR. The settings
# and why they are chosen are in docs/cluster.md.
#
# Environment: SLURM_LOCAL_PROCTRACK=cgroup|linuxproc overrides the process tracking detected here;
# SLURM_LOCAL_WAIT (seconds, default 30) bounds the wait for the idle node.
set -euo pipefail

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$2
wait_limit=${SLURM_LOCAL_WAIT:-30}
daemons="slurmd slurmctld munged"
export PATH="${PATH}:/usr/sbin:/sbin"

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "$0: must run as root (slurmd starts jobs as their users; CI runs as root)" >&2
        exit 1
    fi
}

install_cluster() {
    local missing=""
    if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null; then
        missing=" slurm-wlm"
    fi
    command -v munged >/dev/null || missing="${missing} munge"
    [ -n "${missing}" ] || return 0
    echo "$0: installing Debian's${missing}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq </dev/null >/dev/null || { echo "$0: apt-get update failed" >&2; exit 1; }
    # Debian's packages would start their own daemons (ours are separate and read nothing from
    # /etc/slurm or /etc/munge): a policy-rc.d that refuses every start keeps them stopped.
    local policy=/usr/sbin/policy-rc.d made_policy=""
    if [ ! -e "${policy}" ]; then
        printf '#!/bin/sh\nexit 101\n' >"${policy}" && chmod 0755 "${policy}" && made_policy=1
    fi
    local status=0
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends ${missing} </dev/null >/dev/null || status=$?
    [ -z "${made_policy}" ] || rm -f "${policy}"
    [ "${status}" -eq 0 ] || { echo "$0: apt-get install${missing} failed (exit ${status})" >&2; exit 1; }
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        || { echo "$0: Debian's slurm-wlm and munge installed, but their daemons are not on PATH" >&2; exit 1; }
}

free_ports() {
    python3 - <<'PY'
import socket
socks = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# Process tracking: proctrack/cgroup catches every process of a job, also one that left its process
# group or was reparented; it needs a writable cgroup v1 freezer hierarchy (Slurm 22.05's cgroup/v2
# plugin wants systemd to delegate a cgroup, which this machine lacks). Otherwise proctrack/linuxproc.
detect_proctrack() {
    if [ -n "${SLURM_LOCAL_PROCTRACK:-}" ]; then
        echo "${SLURM_LOCAL_PROCTRACK}"
        return 0
    fi
    local probe=/sys/fs/cgroup/freezer/lionrun-probe.$$
    if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = "tmpfs" ] \
        && [ -d /sys/fs/cgroup/freezer ] && mkdir "${probe}" 2>/dev/null; then
        rmdir "${probe}"
        echo cgroup
    else
        echo linuxproc
    fi
}

# Whether a process runs (a zombie does not: PID 1 here may take a while to reap one).
alive() {
    local state
    state=$(sed -n 's/^.*) \(.\).*$/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "${state}" ] && [ "${state}" != "Z" ] && [ "${state}" != "X" ]
}

# The pid a daemon recorded in DIR/run/NAME.pid, when that process is still this daemon and runs.
daemon_pid() {
    local name=$1 pid
    pid=$(cat "${dir}/run/${name}.pid" 2>/dev/null) || return 1
    [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/${pid}/comm" 2>/dev/null)" = "${name}" ] || return 1
    alive "${pid}" || return 1
    echo "${pid}"
}

healthy() {
    local name
    [ -f "${dir}/env" ] && [ -f "${dir}/slurm.conf" ] || return 1
    for name in ${daemons}; do
        daemon_pid "${name}" >/dev/null || return 1
    done
    [ "$(node_state)" = "idle" ]
}

node_state() {
    SLURM_CONF="${dir}/slurm.conf" timeout 5 sinfo -h -N -n localhost -o %T 2>/dev/null | head -n 1 || true
}

stop_daemons() {
    local name pid pids="" deadline
    for name in ${daemons}; do
        if pid=$(daemon_pid "${name}"); then
            kill -TERM "${pid}" 2>/dev/null || true
            pids="${pids} ${pid}"
        fi
    done
    deadline=$((SECONDS + 10))
    for pid in ${pids}; do
        while alive "${pid}" && [ "${SECONDS}" -lt "${deadline}" ]; do sleep 0.1; done
        kill -KILL "${pid}" 2>/dev/null || true
    done
    # Jobs left running by a killed slurmd (their slurmstepd) are ended by the cgroups slurmd made.
    local cg
    for cg in /sys/fs/cgroup/*/slurm_localhost; do
        [ -d "${cg}" ] || continue
        find "${cg}" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
        find "${cg}" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
}

fail() {
    echo "$0: $1" >&2
    local log
    for log in "${dir}/log/munged.log" "${dir}/log/slurmctld.log" "${dir}/log/slurmd.log"; do
        [ -f "${log}" ] || continue
        echo "--- tail of ${log}" >&2
        tail -n 15 "${log}" >&2
    done
    stop_daemons
    exit 1
}

write_conf() {
    local proctrack=$1 ctld_port=$2 slurmd_port=$3 node
    # The node as this machine's slurmd sees it (CPUs, sockets, cores, threads, RealMemory), renamed.
    node=$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]*/NodeName=localhost NodeAddr=127.0.0.1/')
    case "${node}" in
        NodeName=localhost*CPUs=*) ;;
        *) fail "slurmd -C did not describe this machine: ${node}" ;;
    esac
    cat >"${dir}/slurm.conf" <<CONF
# Written by tools/slurm_local.sh: a single-node test cluster (see docs/cluster.md).
ClusterName=lionrun
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${dir}/munge/munge.socket
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool
SlurmctldPidFile=${dir}/run/slurmctld.pid
SlurmdPidFile=${dir}/run/slurmd.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# A job never runs twice: no requeue after a node failure or a slurmd restart.
JobRequeue=0
# Ended jobs stay visible to squeue/scontrol for an hour (there is no slurmdbd, so no sacct).
MinJobAge=3600
# A silent slurmd is noticed quickly; a node that comes back returns to service by itself.
SlurmdTimeout=10
ReturnToService=2
KillWait=5
ProctrackType=proctrack/${proctrack}
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
${node}
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
    if [ "${proctrack}" = "cgroup" ]; then
        cat >"${dir}/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
CONF
    fi
    # Slurm reads plugstack.conf beside slurm.conf; an empty one keeps Debian's out.
    : >"${dir}/plugstack.conf"
    chmod 0644 "${dir}/slurm.conf" "${dir}/plugstack.conf"
    [ ! -f "${dir}/cgroup.conf" ] || chmod 0644 "${dir}/cgroup.conf"
}

up() {
    need_root
    install_cluster
    mkdir -p "${dir}"
    dir=$(cd "${dir}" && pwd)
    if healthy; then
        echo "SLURM_CONF=${dir}/slurm.conf"
        return 0
    fi
    stop_daemons
    # One test cluster per machine: two slurmds named localhost would share the job cgroups (and
    # their job ids both start at 1), and one's `down` would end the other's jobs.
    local pid other=""
    for pid in $(pgrep -x slurmd || true); do
        alive "${pid}" && other="${other} ${pid}"
    done
    if [ -n "${other}" ]; then
        echo "$0: another slurmd already runs on this machine (pid${other}); stop it first" >&2
        exit 1
    fi
    rm -rf "${dir:?}"/{munge,state,spool,run,log,env,slurm.conf,cgroup.conf,plugstack.conf}
    # munged insists that every folder above its socket is searchable by user, group and others.
    chmod 0755 "${dir}"
    local above
    above=$(dirname "${dir}")
    while [ "${above}" != "/" ]; do
        chmod a+x "${above}"
        above=$(dirname "${above}")
    done
    mkdir -p "${dir}/munge" "${dir}/state" "${dir}/spool" "${dir}/run" "${dir}/log"
    chmod 0755 "${dir}/munge"
    chmod 0700 "${dir}/state" "${dir}/spool" "${dir}/run" "${dir}/log"
    local proctrack ports
    proctrack=$(detect_proctrack)
    ports=$(free_ports)
    # shellcheck disable=SC2086
    write_conf "${proctrack}" ${ports}

    mungekey --create --keyfile="${dir}/munge/munge.key" >/dev/null 2>&1 \
        || fail "mungekey could not create ${dir}/munge/munge.key"
    chmod 0600 "${dir}/munge/munge.key"
    munged --socket="${dir}/munge/munge.socket" --key-file="${dir}/munge/munge.key" \
        --log-file="${dir}/log/munged.log" --pid-file="${dir}/run/munged.pid" \
        --seed-file="${dir}/munge/munged.seed" </dev/null >/dev/null 2>&1 \
        || fail "munged did not start"
    export SLURM_CONF="${dir}/slurm.conf"
    # A fresh state folder; both daemons daemonize and write their pid files.
    slurmctld -f "${SLURM_CONF}" </dev/null >/dev/null 2>&1 || fail "slurmctld did not start"
    slurmd -f "${SLURM_CONF}" -N localhost </dev/null >/dev/null 2>&1 || fail "slurmd did not start"

    local deadline=$((SECONDS + wait_limit)) state=""
    while :; do
        state=$(node_state)
        [ "${state}" = "idle" ] && break
        [ "${SECONDS}" -lt "${deadline}" ] || fail "node localhost is not idle after ${wait_limit} s (state: '${state:-no answer}')"
        local name
        for name in ${daemons}; do
            daemon_pid "${name}" >/dev/null || [ ! -f "${dir}/run/${name}.pid" ] \
                || fail "${name} exited while the cluster started"
        done
        sleep 0.2
    done
    echo "export SLURM_CONF=${dir}/slurm.conf" >"${dir}/env"
    chmod 0644 "${dir}/env"
    echo "SLURM_CONF=${dir}/slurm.conf"
}

down() {
    [ -d "${dir}" ] || return 0
    dir=$(cd "${dir}" && pwd)
    stop_daemons
    rm -rf "${dir}"
}

case "${action}" in
    up) up ;;
    down) down ;;
    *) usage ;;
esac
