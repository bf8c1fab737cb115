//! Which shard this process is, read from the batch system that started
//! it, so one command line serves every task of a Kubernetes Indexed Job
//! or a Slurm job array: `--shards N` without an index.
//!
//! - Kubernetes (`completionMode: Indexed`) sets `JOB_COMPLETION_INDEX`,
//!   0-based: index 0 is shard 1/N.
//! - Slurm sets `SLURM_ARRAY_TASK_ID` to the task's number in the
//!   `--array` range and `SLURM_ARRAY_TASK_MIN` to the range's first
//!   number; the shard is `TASK_ID − TASK_MIN` (0-based), so `--array=0-9`
//!   and `--array=1-10` both mean shards 1/10 … 10/10. Without
//!   `SLURM_ARRAY_TASK_MIN` the id is taken as 0-based. When
//!   `SLURM_ARRAY_TASK_COUNT` is set it must equal N, and an array with a
//!   step (`SLURM_ARRAY_TASK_STEP` other than 1, `--array=0-6:2`) is
//!   refused: in both cases the ids are not the shards 1 to N (a partial
//!   rerun, `sbatch --array=2`, has one task whose id is its own first), so
//!   such a task must be given `--shard I/N` (`deploy/slurm-array.sh`
//!   computes it from the task id and a shard count the script fixes).
//!
//! `JOB_COMPLETION_INDEX` wins when both are set. The shard itself is the
//! 1-based [`Shard`] of `--shard I/N`.

use super::grid::Shard;

/// Kubernetes' 0-based completion index of an Indexed Job's pod.
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
/// Slurm's task id within a job array.
pub const SLURM_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";
/// Slurm's first task id of the array.
pub const SLURM_TASK_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// Slurm's number of tasks in the array.
pub const SLURM_TASK_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
/// Slurm's step between task ids (`--array=0-6:2` gives 2).
pub const SLURM_TASK_STEP: &str = "SLURM_ARRAY_TASK_STEP";

/// The shard (1-based) named by the environment `var`, for `count` shards,
/// and the variable it came from. `var` looks a variable up (the process
/// environment in the command, a map in tests).
pub fn shard_from_env(
    count: usize,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(Shard, &'static str), ShardEnvError> {
    if count == 0 {
        return Err(ShardEnvError::Zero(count));
    }
    let number = |name: &'static str| -> Result<Option<i64>, ShardEnvError> {
        match var(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| ShardEnvError::NotANumber {
                    var: name,
                    value: v,
                }),
        }
    };
    let (index, source, from) = if let Some(i) = number(K8S_INDEX)? {
        (i128::from(i), K8S_INDEX, format!("{K8S_INDEX}={i}"))
    } else if let Some(id) = number(SLURM_TASK_ID)? {
        if let Some(step) = var(SLURM_TASK_STEP).filter(|s| s.trim() != "1") {
            return Err(ShardEnvError::Step { step, count });
        }
        if let Some(tasks) = number(SLURM_TASK_COUNT)? {
            if tasks != count as i64 {
                return Err(ShardEnvError::CountMismatch {
                    tasks: tasks.max(0) as usize,
                    count,
                });
            }
        }
        let from = match number(SLURM_TASK_MIN)? {
            Some(min) => (
                i128::from(id) - i128::from(min),
                format!("{SLURM_TASK_ID}={id} minus {SLURM_TASK_MIN}={min}"),
            ),
            None => (i128::from(id), format!("{SLURM_TASK_ID}={id}")),
        };
        (from.0, SLURM_TASK_ID, from.1)
    } else {
        return Err(ShardEnvError::Missing { count });
    };
    if index < 0 {
        return Err(ShardEnvError::Negative { from, index, count });
    }
    if index >= count as i128 {
        return Err(ShardEnvError::OutOfRange {
            var: source,
            index,
            count,
        });
    }
    Ok((
        Shard {
            index: index as usize + 1,
            count,
        },
        source,
    ))
}

/// [`shard_from_env`] on the process environment.
pub fn shard_from_process_env(count: usize) -> Result<(Shard, &'static str), ShardEnvError> {
    shard_from_env(count, &|name| std::env::var(name).ok())
}

/// Why the environment names no shard for `--shards N`
/// (`sweep::shard_env`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardEnvError {
    /// `--shards 0`.
    #[error("--shards {0}: the number of shards must be at least 1")]
    Zero(usize),
    /// Neither variable is set.
    #[error("--shards {count} without --shard I/N needs JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID (Slurm array) in the environment")]
    Missing {
        /// N.
        count: usize,
    },
    /// A variable is not a whole number.
    #[error("{var}={value:?} is not a whole number")]
    NotANumber {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The index is past the last shard.
    #[error("{var}: shard index {index} (0-based) is not below --shards {count}")]
    OutOfRange {
        /// The variable it came from.
        var: &'static str,
        /// The 0-based index.
        index: i128,
        /// N.
        count: usize,
    },
    /// The index is below the first shard.
    #[error("{from}: shard index {index} (0-based) is negative; with --shards {count} it must be 0 to {last}", last = .count - 1)]
    Negative {
        /// The variables it came from, with their values
        /// (`SLURM_ARRAY_TASK_ID=3 minus SLURM_ARRAY_TASK_MIN=5`).
        from: String,
        /// The 0-based index.
        index: i128,
        /// N.
        count: usize,
    },
    /// A Slurm array with a step (`--array=0-6:2`): its task ids are not
    /// consecutive shard numbers.
    #[error("SLURM_ARRAY_TASK_STEP={step}: with a step the array's task ids are not consecutive shards; use a step of 1 with --shards {count}, or pass each task its shard with --shard I/{count}")]
    Step {
        /// The step.
        step: String,
        /// N.
        count: usize,
    },
    /// Slurm's array size differs from `--shards`.
    #[error("SLURM_ARRAY_TASK_COUNT={tasks} but --shards {count}: size the array to the shards (e.g. --array=0-{last}); to rerun some shards only (sbatch --array=2), pass each its shard with --shard I/{count}, as deploy/slurm-array.sh does", last = .count - 1)]
    CountMismatch {
        /// The array's size.
        tasks: usize,
        /// N.
        count: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)], count: usize) -> Result<(Shard, &'static str), ShardEnvError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        shard_from_env(count, &|name| map.get(name).cloned())
    }

    #[test]
    fn kubernetes_index_is_zero_based() {
        let (s, from) = with(&[(K8S_INDEX, "0")], 3).unwrap();
        assert_eq!((s.index, s.count, from), (1, 3, K8S_INDEX));
        assert_eq!(with(&[(K8S_INDEX, "2")], 3).unwrap().0.index, 3);
        assert!(matches!(
            with(&[(K8S_INDEX, "3")], 3),
            Err(ShardEnvError::OutOfRange { .. })
        ));
        assert_eq!(
            with(&[(K8S_INDEX, "-1")], 3).unwrap_err().to_string(),
            "JOB_COMPLETION_INDEX=-1: shard index -1 (0-based) is negative; \
             with --shards 3 it must be 0 to 2"
        );
        assert!(matches!(
            with(&[(K8S_INDEX, "x")], 3),
            Err(ShardEnvError::NotANumber { .. })
        ));
    }

    #[test]
    fn slurm_counts_from_the_arrays_first_id() {
        // --array=1-4: ids 1..4 are shards 1..4.
        let one_based = [(SLURM_TASK_ID, "4"), (SLURM_TASK_MIN, "1")];
        assert_eq!(with(&one_based, 4).unwrap().0.index, 4);
        // --array=0-3.
        let zero_based = [(SLURM_TASK_ID, "0"), (SLURM_TASK_MIN, "0")];
        assert_eq!(with(&zero_based, 4).unwrap().0.index, 1);
        // No TASK_MIN: the id is 0-based.
        assert_eq!(with(&[(SLURM_TASK_ID, "1")], 4).unwrap().0.index, 2);
        // An id below the array's first: negative, naming both variables.
        let below = [(SLURM_TASK_ID, "3"), (SLURM_TASK_MIN, "5")];
        assert_eq!(
            with(&below, 2).unwrap_err().to_string(),
            "SLURM_ARRAY_TASK_ID=3 minus SLURM_ARRAY_TASK_MIN=5: shard index -2 (0-based) \
             is negative; with --shards 2 it must be 0 to 1"
        );
        assert!(matches!(
            with(&[(SLURM_TASK_ID, "-1")], 2),
            Err(ShardEnvError::Negative { index: -1, .. })
        ));
        // Extreme values do not overflow.
        let far = [
            (SLURM_TASK_ID, "9223372036854775807"),
            (SLURM_TASK_MIN, "-9223372036854775808"),
        ];
        assert!(matches!(
            with(&far, 2),
            Err(ShardEnvError::OutOfRange { .. })
        ));
        let wrong_size = [(SLURM_TASK_ID, "0"), (SLURM_TASK_COUNT, "5")];
        assert!(with(&wrong_size, 4)
            .unwrap_err()
            .to_string()
            .contains("--array=0-3"));
    }

    #[test]
    fn a_slurm_array_with_a_step_or_a_partial_rerun_is_refused() {
        // --array=0-6:2: ids 0, 2, 4, 6 are not shards 1 to 4.
        let stepped = [
            (SLURM_TASK_ID, "2"),
            (SLURM_TASK_MIN, "0"),
            (SLURM_TASK_COUNT, "4"),
            (SLURM_TASK_STEP, "2"),
        ];
        let e = with(&stepped, 4).unwrap_err();
        assert!(
            matches!(&e, ShardEnvError::Step { step, count: 4 } if step == "2"),
            "{e}"
        );
        assert!(e.to_string().contains("--shard I/4"), "{e}");
        // A step of 1 is an ordinary array.
        let plain = [(SLURM_TASK_ID, "2"), (SLURM_TASK_STEP, "1")];
        assert_eq!(with(&plain, 4).unwrap().0.index, 3);
        // sbatch --array=2 rerunning one task of ten: its id is its own
        // first, so it is refused rather than run as shard 1.
        let rerun = [
            (SLURM_TASK_ID, "2"),
            (SLURM_TASK_MIN, "2"),
            (SLURM_TASK_COUNT, "1"),
        ];
        let e = with(&rerun, 10).unwrap_err().to_string();
        assert!(e.contains("--shard I/10"), "{e}");
    }

    #[test]
    fn kubernetes_wins_and_nothing_is_an_error() {
        let both = [(K8S_INDEX, "1"), (SLURM_TASK_ID, "0")];
        assert_eq!(
            with(&both, 2).unwrap(),
            (Shard { index: 2, count: 2 }, K8S_INDEX)
        );
        assert_eq!(with(&[], 2), Err(ShardEnvError::Missing { count: 2 }));
        assert_eq!(with(&[(K8S_INDEX, "0")], 0), Err(ShardEnvError::Zero(0)));
    }
}
