#!/usr/bin/env bash
# Stops what slurm_up.sh started (slurmd, slurmctld, munged); the configuration and spool stay for the next start.
set -uo pipefail
for pid in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid /run/munge/munged.pid; do
    [[ -f "$pid" ]] && kill "$(cat "$pid")" 2>/dev/null
done
exit 0
