//! Tiers below the top backend (`downstream`), as written: an ordered
//! chain in which every worker of one tier, while it serves an attempt,
//! calls the next tier through that tier's own retry policy.

use super::BackendSpec;
use crate::policy::PolicySpec;
use crate::time::Dur;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The most tiers `downstream` may hold: the model numbers tiers in one
/// byte (the top backend is 0).
pub const MAX_DOWNSTREAM: usize = u8::MAX as usize;

/// The word that makes a tier use the policy being compared.
pub const COMPARED: &str = "compared";

/// One entry of `downstream`: a tier, what serves it, and how its callers
/// (the workers of the tier above) retry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DownstreamSpec {
    /// The tier's name: faults and actions target it with `"tier"`, and
    /// `tiers.csv` names it.
    pub name: String,
    /// What serves the tier's attempts (the same fields as the top
    /// backend's).
    pub backend: BackendSpec,
    /// How the tier above calls this one.
    #[serde(default)]
    pub policy: PolicyRef,
    /// How long a caller waits for one attempt; absent = until answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_timeout: Option<Dur>,
    /// Calls to this tier each attempt served by the tier above makes
    /// (in parallel; the attempt succeeds when all succeed).
    #[serde(default = "one")]
    pub calls: u32,
    /// Whether a caller that stops waiting tells this tier: its pending
    /// calls stop retrying, their waiting attempts are dropped and its
    /// workers waiting on tiers further down are freed (default false).
    #[serde(default)]
    pub propagate_cancel: bool,
}

fn one() -> u32 {
    1
}

/// A downstream tier's policy as written: `"compared"` (the policy being
/// compared, or its `downstream_policy`), a preset's name, or a policy
/// object.
#[derive(Clone, Debug, Default)]
pub enum PolicyRef {
    /// The policy of the run (`"compared"`).
    #[default]
    Compared,
    /// A preset, by name.
    Preset(String),
    /// A policy written out.
    Spec(Box<PolicySpec>),
}

impl PolicyRef {
    /// The policy as a [`PolicySpec`]: `compared` when the entry says
    /// `"compared"` (its `downstream_policy` when it has one).
    pub fn spec(&self, compared: &PolicySpec) -> PolicySpec {
        self.fixed()
            .unwrap_or_else(|| match &compared.downstream_policy {
                Some(p) => (**p).clone(),
                None => compared.clone(),
            })
    }

    /// The policy when it is one whatever is compared (a preset or a
    /// policy object); `None` for `"compared"`.
    pub fn fixed(&self) -> Option<PolicySpec> {
        match self {
            PolicyRef::Compared => None,
            PolicyRef::Preset(name) => Some(PolicySpec {
                preset: Some(name.clone()),
                ..Default::default()
            }),
            PolicyRef::Spec(p) => Some((**p).clone()),
        }
    }
}

impl Serialize for PolicyRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PolicyRef::Compared => s.serialize_str(COMPARED),
            PolicyRef::Preset(name) => s.serialize_str(name),
            PolicyRef::Spec(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PolicyRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PolicyRef;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"compared\", a preset's name or a policy object")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PolicyRef, E> {
                Ok(if v == COMPARED {
                    PolicyRef::Compared
                } else {
                    PolicyRef::Preset(v.to_string())
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PolicyRef, A::Error> {
                let spec = PolicySpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(PolicyRef::Spec(Box::new(spec)))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_compared_a_preset_or_an_object() {
        let e: DownstreamSpec = serde_json::from_str(
            r#"{"name": "db", "backend": {"workers": 2,
                "service_time": {"constant": {"value": "1ms"}}}}"#,
        )
        .unwrap();
        assert!(matches!(e.policy, PolicyRef::Compared));
        assert_eq!((e.calls, e.propagate_cancel), (1, false));
        let p: PolicyRef = serde_json::from_str(r#""grpc""#).unwrap();
        assert!(matches!(p, PolicyRef::Preset(ref n) if n == "grpc"));
        let p: PolicyRef = serde_json::from_str(r#"{"max_attempts": 3}"#).unwrap();
        let compared = PolicySpec::default();
        assert_eq!(p.spec(&compared).max_attempts, Some(3));
        let bad = serde_json::from_str::<PolicyRef>(r#"{"max_atempts": 3}"#).unwrap_err();
        assert!(bad.to_string().contains("max_atempts"), "{bad}");
    }

    #[test]
    fn compared_follows_the_policys_downstream_policy() {
        let top = PolicySpec {
            name: "top-only".into(),
            max_attempts: Some(3),
            downstream_policy: Some(Box::new(PolicySpec {
                max_attempts: Some(1),
                ..Default::default()
            })),
            ..Default::default()
        };
        assert_eq!(PolicyRef::Compared.spec(&top).max_attempts, Some(1));
        let every = PolicySpec {
            downstream_policy: None,
            ..top
        };
        assert_eq!(PolicyRef::Compared.spec(&every).max_attempts, Some(3));
    }
}
