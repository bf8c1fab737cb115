//! The parameter grid of `retrysim sweep`: axes from `--set PATH=V1,V2,...`,
//! the cartesian product of their values in a fixed order, and the
//! `--shard I/N` slices of it.

use crate::scenario::error::shown;
use crate::scenario::set::paths_overlap;
use serde::{Deserialize, Serialize};

/// One swept parameter: a dotted scenario path and the values it takes,
/// kept as written on the command line (the CSV echoes them verbatim).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "an object with the axis `path` and its `values`")]
pub struct Axis {
    /// Dotted path into the scenario (`traffic.rate`, `policies.0.backoff.initial`).
    pub path: String,
    /// The values, in the order given.
    pub values: Vec<String>,
}

impl Axis {
    /// Parses `PATH=V1,V2,...`. Commas inside brackets, braces or quotes do
    /// not split, so JSON values (`{"constant": {"delay": "1s"}}`) work.
    pub fn parse(arg: &str) -> Result<Axis, GridError> {
        let (path, raw) = arg.split_once('=').ok_or_else(|| GridError::NoEquals {
            arg: arg.to_string(),
        })?;
        let path = path.trim();
        if path.is_empty() {
            return Err(GridError::EmptyPath {
                arg: arg.to_string(),
            });
        }
        let values = split_top_level(raw).ok_or_else(|| GridError::Unbalanced {
            arg: arg.to_string(),
            values: raw.to_string(),
        })?;
        if let Some(i) = values.iter().position(|v| v.trim().is_empty()) {
            return Err(GridError::EmptyValue {
                arg: arg.to_string(),
                index: i + 1,
            });
        }
        Ok(Axis {
            path: path.to_string(),
            values: values.into_iter().map(|v| v.trim().to_string()).collect(),
        })
    }

    /// The `PATH=VALUE` assignment for value `i`.
    pub fn assignment(&self, i: usize) -> String {
        format!("{}={}", self.path, self.values[i])
    }
}

/// Splits at commas that are not inside `[]`, `{}` or a `"..."` string;
/// `None` when brackets or quotes do not balance.
fn split_top_level(raw: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut escaped = false;
    for c in raw.chars() {
        if in_str {
            cur.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
        cur.push(c);
    }
    if in_str || depth != 0 {
        return None;
    }
    out.push(cur);
    Some(out)
}

/// The cartesian product of the axes. Point `i` takes, for each axis, the
/// value at the matching digit of `i` written in mixed radix with the
/// *first* axis most significant: the last axis varies fastest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    /// The axes, in command-line order.
    pub axes: Vec<Axis>,
}

impl Grid {
    /// Builds the grid, rejecting an axis path given twice or within
    /// another axis's (`traffic` beside `traffic.rate`), whose values
    /// would replace the other's at every point.
    pub fn new(axes: Vec<Axis>) -> Result<Grid, GridError> {
        for (i, a) in axes.iter().enumerate() {
            if axes[..i].iter().any(|b| b.path == a.path) {
                return Err(GridError::Repeated {
                    path: a.path.clone(),
                });
            }
            if let Some(b) = axes[..i].iter().find(|b| paths_overlap(&a.path, &b.path)) {
                return Err(GridError::Overlap {
                    path: a.path.clone(),
                    other: b.path.clone(),
                });
            }
        }
        if axes
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
            .is_none()
        {
            let sizes: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
            return Err(GridError::Uncountable {
                sizes: sizes.join(" × "),
            });
        }
        Ok(Grid { axes })
    }

    /// Refuses `--seed` (`seed`, when given) beside an axis that varies the
    /// seed.
    pub fn check_seed(&self, seed: Option<u64>) -> Result<(), GridError> {
        let Some(seed) = seed else {
            return Ok(());
        };
        match self.axes.iter().find(|a| paths_overlap(&a.path, "seed")) {
            Some(a) => Err(GridError::SeedAxis {
                seed,
                path: a.path.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Number of points (1 for no axes; `usize::MAX` when larger).
    pub fn len(&self) -> usize {
        Grid::points_of(&self.axes)
    }

    /// Number of points `axes` span, without building a grid of them.
    pub fn points_of(axes: &[Axis]) -> usize {
        axes.iter()
            .fold(1usize, |n, a| n.saturating_mul(a.values.len()))
    }

    /// Whether the grid has no points (an axis without values).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value index on each axis of point `i`.
    pub fn coords(&self, mut i: usize) -> Vec<usize> {
        let mut c = vec![0; self.axes.len()];
        for (k, a) in self.axes.iter().enumerate().rev() {
            let n = a.values.len();
            c[k] = i % n;
            i /= n;
        }
        c
    }

    /// The `PATH=VALUE` assignments of point `i`, in axis order.
    pub fn assignments(&self, i: usize) -> Vec<String> {
        self.coords(i)
            .iter()
            .zip(&self.axes)
            .map(|(&v, a)| a.assignment(v))
            .collect()
    }

    /// The axes that take more than one value.
    pub fn varying(&self) -> Vec<usize> {
        (0..self.axes.len())
            .filter(|&k| self.axes[k].values.len() > 1)
            .collect()
    }
}

/// One of N interleaved slices of the points: shard `index` (1-based) of
/// `count` runs the points whose index `i` has `i % count == index - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "an object with the shard `index` and `count`")]
pub struct Shard {
    /// Which slice, from 1.
    pub index: usize,
    /// How many slices.
    pub count: usize,
}

impl Shard {
    /// The whole grid.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parses `I/N` with 1 ≤ I ≤ N.
    pub fn parse(text: &str) -> Result<Shard, GridError> {
        let bad = || GridError::Shard(text.to_string());
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// What is wrong with a shard read back from a manifest, which
    /// [`Shard::parse`] did not check: the field (`index` or `count`), its
    /// value and why; `None` when it is `I/N` with 1 <= I <= N and N no
    /// more than the `items` (points or cells, named by `noun`) of the grid.
    pub fn problem(&self, items: usize, noun: &str) -> Option<(&'static str, usize, String)> {
        let Shard { index, count } = *self;
        if count == 0 {
            Some(("count", 0, "must be at least 1".into()))
        } else if index == 0 {
            Some(("index", 0, "is below 1 (the first shard is 1)".into()))
        } else if index > count {
            Some(("index", index, format!("is above shard.count {count}")))
        } else if self.too_many(items) {
            Some((
                "count",
                count,
                format!("is above the {items} {noun} of the grid (a shard holds at least one)"),
            ))
        } else {
            None
        }
    }

    /// Whether there are more shards than `items` to share: some shard
    /// would run nothing, and merging would wait for it.
    fn too_many(&self, items: usize) -> bool {
        self.count > items.max(1)
    }

    /// Refuses more shards than the grid has `items` (points or cells,
    /// named by `noun`), before anything runs.
    pub fn fits(&self, items: usize, noun: &'static str) -> Result<(), GridError> {
        if self.too_many(items) {
            return Err(GridError::TooManyShards {
                count: self.count,
                items,
                noun,
            });
        }
        Ok(())
    }

    /// Whether point `i` belongs to this shard.
    pub fn includes(&self, i: usize) -> bool {
        i % self.count == self.index - 1
    }

    /// The points of `0..len` that belong to this shard, in order.
    pub fn points(&self, len: usize) -> impl Iterator<Item = usize> {
        (self.index - 1..len).step_by(self.count.max(1))
    }

    /// How many of points `0..len` belong to this shard.
    pub fn count_of(&self, len: usize) -> usize {
        len.saturating_sub(self.index - 1).div_ceil(self.count)
    }
}

/// A `sweep --set` axis or a `--shard` that cannot be used; the message
/// quotes the flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// No `=` in the axis.
    #[error("--set {}: expected PATH=V1,V2,... (e.g. traffic.rate=100,200)", shown(.arg))]
    NoEquals {
        /// The flag's value.
        arg: String,
    },
    /// Nothing before the `=`.
    #[error("--set {}: empty PATH before `=`", shown(.arg))]
    EmptyPath {
        /// The flag's value.
        arg: String,
    },
    /// Brackets, braces or quotes that do not close.
    #[error("--set {}: unbalanced quotes or brackets in `{}`", shown(.arg), shown(.values))]
    Unbalanced {
        /// The flag's value.
        arg: String,
        /// The part after `=`.
        values: String,
    },
    /// An empty value between commas.
    #[error("--set {}: value {index} is empty", shown(.arg))]
    EmptyValue {
        /// The flag's value.
        arg: String,
        /// 1-based position of the empty value.
        index: usize,
    },
    /// The same path swept by two `--set` flags.
    #[error("--set {}: the path is given twice; list all its values in one --set", shown(.path))]
    Repeated {
        /// The path.
        path: String,
    },
    /// Two `--set` flags where one sets a field within the other's: the
    /// later would silently replace the earlier's values at every point.
    #[error(
        "--set {}: overlaps --set {} (one sets a field within the other): \
         set each field in one place",
        shown(.path),
        shown(.other)
    )]
    Overlap {
        /// The later path.
        path: String,
        /// The earlier path it overlaps.
        other: String,
    },
    /// `--seed` beside an axis that varies the seed: every point would run
    /// with `--seed`'s value while the output labels it with the axis's.
    #[error("--seed {seed}: {path} is an axis of the grid: drop --seed or that axis")]
    SeedAxis {
        /// The value given to `--seed`.
        seed: u64,
        /// The axis's path.
        path: String,
    },
    /// A grid of more points than a count can hold: its points could not
    /// even be numbered, let alone sharded.
    #[error("the grid has more than 10^19 points ({sizes}): use fewer values per axis")]
    Uncountable {
        /// The axes' sizes, `10000 × 10000 × ...`.
        sizes: String,
    },
    /// A `--shard` that is not `I/N` with 1 <= I <= N.
    #[error("--shard {}: expected I/N with 1 <= I <= N (e.g. 2/4)", shown(.0))]
    Shard(String),
    /// More shards than the grid has points or cells.
    #[error("{count} shards for {items} {noun}: use at most {items} (a shard with nothing to run would hold up the merge)")]
    TooManyShards {
        /// N.
        count: usize,
        /// Points or cells in the grid.
        items: usize,
        /// `points` or `cells`.
        noun: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_axes_with_json_values() {
        let a = Axis::parse("traffic.rate=100, 200,300").unwrap();
        assert_eq!(a.values, ["100", "200", "300"]);
        let a = Axis::parse(r#"policies.0.backoff={"constant":{"delay":"1s"}},{"linear":{"initial":"1s","step":"1s"}}"#)
            .unwrap();
        assert_eq!(a.values.len(), 2);
        let a = Axis::parse(r#"name="a,b",c"#).unwrap();
        assert_eq!(a.values, [r#""a,b""#, "c"]);
        for bad in ["novalue", "=1,2", "x=1,,2", "x=", "x={1,2", "x=]"] {
            assert!(Axis::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Axis::parse("x={1,2").unwrap_err().to_string(),
            "--set x={1,2: unbalanced quotes or brackets in `{1,2`"
        );
    }

    #[test]
    fn an_axis_within_another_or_beside_seed_is_refused() {
        let grid =
            |paths: &[&str]| Grid::new(paths.iter().map(|p| Axis::parse(p).unwrap()).collect());
        let e = grid(&["traffic.rate=1,2", r#"traffic={"rate":5}"#]).unwrap_err();
        assert!(
            matches!(&e, GridError::Overlap { path, other } if path == "traffic" && other == "traffic.rate"),
            "{e}"
        );
        assert!(grid(&["faults[0]={}", "faults.0.duration=1s,2s"]).is_err());
        // Siblings and paths that merely share a prefix of letters are fine.
        let g = grid(&["traffic.rate=1,2", "traffic.rate_limit=3", "seeds=1"]).unwrap();
        assert!(g.check_seed(Some(5)).is_ok());
        assert!(g.check_seed(None).is_ok());
        let g = grid(&["seed=1,2"]).unwrap();
        assert!(matches!(
            g.check_seed(Some(5)),
            Err(GridError::SeedAxis { seed: 5, .. })
        ));
        assert!(g.check_seed(None).is_ok());
    }

    #[test]
    fn the_last_axis_varies_fastest() {
        let g = Grid::new(vec![
            Axis::parse("a=1,2").unwrap(),
            Axis::parse("b=x,y,z").unwrap(),
        ])
        .unwrap();
        assert_eq!(g.len(), 6);
        assert_eq!(g.assignments(0), ["a=1", "b=x"]);
        assert_eq!(g.assignments(2), ["a=1", "b=z"]);
        assert_eq!(g.assignments(3), ["a=2", "b=x"]);
        assert_eq!(g.varying(), [0, 1]);
        assert!(Grid::new(vec![
            Axis::parse("a=1").unwrap(),
            Axis::parse("a=2").unwrap()
        ])
        .is_err());
    }

    #[test]
    fn a_grid_too_large_to_count_is_refused() {
        let axis = |path: &str| Axis {
            path: path.into(),
            values: vec!["1".to_string(); 10_000],
        };
        let axes = |n: usize| (0..n).map(|i| axis(&format!("a{i}"))).collect::<Vec<_>>();
        assert_eq!(Grid::new(axes(4)).unwrap().len(), 10_000usize.pow(4));
        assert_eq!(
            Grid::new(axes(5)).unwrap_err().to_string(),
            "the grid has more than 10^19 points (10000 × 10000 × 10000 × 10000 × 10000): use \
             fewer values per axis"
        );
    }

    #[test]
    fn a_shard_counts_the_points_it_includes() {
        for count in 1..5 {
            for index in 1..=count {
                let shard = Shard { index, count };
                for len in 0..12 {
                    let n = (0..len).filter(|&i| shard.includes(i)).count();
                    assert!(shard
                        .points(len)
                        .eq((0..len).filter(|&i| shard.includes(i))));
                    assert_eq!(shard.count_of(len), n, "{index}/{count} of {len}");
                }
            }
        }
    }

    #[test]
    fn shards_partition_the_points() {
        assert!(Shard::parse("0/3").is_err());
        assert!(Shard::parse("4/3").is_err());
        assert!(Shard::parse("x").is_err());
        let shards: Vec<Shard> = (1..=3)
            .map(|i| Shard::parse(&format!("{i}/3")).unwrap())
            .collect();
        for p in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.includes(p)).count(), 1);
        }
        assert!(shards[1].includes(1) && shards[1].includes(4));
    }
}
