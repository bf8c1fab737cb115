#!/usr/bin/env bash
# A 1,000-cell recovery map of the HotOS '21 toy (40 loads × 25 stall
# lengths, 5 replications near the boundary) as a Slurm job array of 10
# tasks, then one merge job.
#
#   jid=$(sbatch --parsable deploy/slurm-array.sh)
#   sbatch --dependency=afterok:$jid --wrap "retrysim merge results/map -o results/map-merged"
#
# Rerun one failed shard (task 2 here, which is shard 3/10) with the same
# script; the other shards' folders stay as they are, then merge again:
#
#   sbatch --array=2 deploy/slurm-array.sh
#
# The shard count is SHARDS below, fixed with the job, never taken from
# SLURM_ARRAY_TASK_COUNT (a partial rerun such as --array=2 has one task),
# and each task's shard is its task id less FIRST_TASK, plus 1: task ids
# FIRST_TASK .. FIRST_TASK + SHARDS - 1 are shards 1/SHARDS .. SHARDS/SHARDS.
# A step (--array=0-8:2) runs the shards of the ids it lists (1, 3, 5, 7,
# 9); the merge then names the shards still missing. An id outside that
# range is refused before anything runs. Task I writes its block of cells
# into results/map/shard-<I>-of-10/, I from 1 and zero-padded to the width
# of SHARDS (shard-01-of-10 ... shard-10-of-10), the folders `--shards`
# writes; `retrysim merge results/map` joins them byte for byte into what
# one unsharded run writes. Run from the repository root (or from any
# folder holding a copy of scenarios/), with retrysim on the PATH.
#SBATCH --job-name=retrysim-map
#SBATCH --array=0-9
#SBATCH --cpus-per-task=2
#SBATCH --mem=1G
#SBATCH --time=01:00:00
#SBATCH --output=slurm-%A_%a.out
set -euo pipefail

# The number of shards, and the first task id of --array above: change
# them together with --array.
SHARDS=10
FIRST_TASK=0

id="${SLURM_ARRAY_TASK_ID:?not set: submit this script with sbatch as a job array (see above)}"
if ! [[ "$id" =~ ^[0-9]+$ ]]; then
  echo "slurm-array.sh: SLURM_ARRAY_TASK_ID=$id is not a task number" >&2
  exit 2
fi
shard=$((10#$id - FIRST_TASK + 1))
if ((shard < 1 || shard > SHARDS)); then
  echo "slurm-array.sh: task id $id is outside $FIRST_TASK-$((FIRST_TASK + SHARDS - 1)), the $SHARDS shards of this map" >&2
  exit 2
fi
printf -v dir 'results/map/shard-%0*d-of-%d' "${#SHARDS}" "$shard" "$SHARDS"

export RAYON_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"
retrysim map scenarios/hotos21-toy.json \
  --x traffic.rate=100..330:40 \
  --y faults.0.duration=1s..25s:25 \
  --replications 5 \
  --shard "$shard/$SHARDS" \
  -o "$dir" --quiet
