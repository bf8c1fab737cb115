//! Scenario files: reading them (JSON or TOML), applying `--set`
//! overrides, validating every value, and resolving policies, so the model
//! only ever sees a [`Scenario`] that makes sense.

pub mod spec;

use crate::policy::{self, Policy};
use spec::ScenarioSpec;

/// A validated scenario with its policies resolved.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub spec: ScenarioSpec,
    pub policies: Vec<Policy>,
}

impl Scenario {
    /// Resolves the policies of an already-validated spec.
    pub fn from_spec(spec: ScenarioSpec) -> Result<Scenario, String> {
        let policies = spec
            .policies
            .iter()
            .map(policy::resolve)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scenario { spec, policies })
    }

    /// Parses JSON text (no validation yet; the loader adds it).
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let spec: ScenarioSpec = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Scenario::from_spec(spec)
    }
}

use crate::error::invalid;
use std::path::Path;

/// Reads, overrides (`--set PATH=VALUE`), validates and resolves a scenario
/// file. Errors are `InvalidInput` naming the file and the field.
/// (First version: JSON only, no validation.)
pub fn load(path: &Path, sets: &[String]) -> anyhow::Result<Scenario> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(format!("{}: cannot read: {e}", path.display())))?;
    load_str(&text, &path.display().to_string(), sets)
}

/// Like [`load`], for text already in memory; `origin` names it in errors
/// and its extension (`.json`/`.toml`) picks the format.
pub fn load_str(text: &str, origin: &str, _sets: &[String]) -> anyhow::Result<Scenario> {
    Scenario::from_json(text).map_err(|e| invalid(format!("{origin}: {e}")))
}
