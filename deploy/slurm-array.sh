#!/usr/bin/env bash
# A 1,000-cell recovery map of the HotOS '21 toy (40 loads × 25 stall
# lengths, 5 replications near the boundary) as a Slurm job array of 10
# tasks, then one merge job.
#
#   jid=$(sbatch --parsable deploy/slurm-array.sh)
#   sbatch --dependency=afterok:$jid --wrap "retrysim merge results/map -o results/map-merged"
#
# The array is 0-based here (--array=0-9). retrysim reads the task's shard
# as SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN, so --array=1-10 works the
# same; SLURM_ARRAY_TASK_COUNT must equal --shards. Each task writes its
# block of cells into results/map/shard-<I>-of-10/ (I from 1); `retrysim
# merge results/map` joins them byte for byte into what one unsharded run
# writes. Run from the repository root (or put scenarios/ next to the
# working directory), with retrysim on the PATH.
#SBATCH --job-name=retrysim-map
#SBATCH --array=0-9
#SBATCH --cpus-per-task=2
#SBATCH --mem=1G
#SBATCH --time=01:00:00
#SBATCH --output=slurm-%A_%a.out
set -euo pipefail

export RAYON_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"
retrysim map scenarios/hotos21-toy.json \
  --x traffic.rate=100..330:40 \
  --y faults.0.duration=1s..25s:25 \
  --replications 5 \
  --shards "${SLURM_ARRAY_TASK_COUNT:-10}" \
  -o results/map --quiet
