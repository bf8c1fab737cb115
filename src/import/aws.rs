//! The AWS shared config file (`~/.aws/config`, INI) → one policy per
//! profile with retry settings: `retry_mode` picks the preset
//! (`legacy` → `aws-legacy`, `standard` → `aws-standard`, `adaptive` →
//! `aws-adaptive`; absent: `legacy`, botocore's default) and
//! `max_attempts` (attempts in all, at least 1) its `max_attempts`.
//!
//! Sections are `[default]` and `[profile NAME]`; other sections
//! (`[sso-session …]`, `[services …]`) and other keys are named in a
//! warning and ignored. A value is refused with the file, line and key.

use super::{bad_key, Imported, Refusals};
use crate::policy::PolicySpec;
use crate::scenario::error::{InvalidInput, Located};

/// botocore's default `retry_mode` (`botocore/configprovider.py`).
pub const DEFAULT_RETRY_MODE: &str = "legacy";

/// The most lines a config file may have.
pub const MAX_LINES: usize = 1_000_000;

/// One profile's retry settings, with the lines they are on.
#[derive(Debug, Default)]
struct Profile {
    name: String,
    line: usize,
    retry_mode: Option<(String, usize)>,
    max_attempts: Option<(String, usize)>,
    other: Vec<String>,
}

/// The legacy-mode preset for the service a client calls (botocore's
/// `_retry.json`: only DynamoDB has delays of its own).
fn legacy_preset(service: Option<&str>) -> &'static str {
    match service.map(str::to_ascii_lowercase).as_deref() {
        Some("dynamodb") => "aws-legacy-dynamodb",
        _ => "aws-legacy",
    }
}

/// Imports the profiles of a config file; `profile` picks one by name
/// (`default` for `[default]`). `service` names the AWS service the client
/// calls: legacy mode's delays are per service in botocore's
/// `_retry.json`, and DynamoDB's (10 attempts, 50 ms doubling, no jitter)
/// differ from every other service's. `origin` names the file in errors.
pub fn import_profiles(
    text: &str,
    origin: &str,
    profile: Option<&str>,
    service: Option<&str>,
) -> Result<Imported, InvalidInput> {
    let legacy = legacy_preset(service);
    let mut warnings = vec![];
    let profiles = parse(text, origin, &mut warnings)?;
    let mut refused = Refusals::new(origin);
    let chosen = chosen_profiles(&profiles, profile, origin)?;
    let mut policies: Vec<PolicySpec> = vec![];
    for p in chosen {
        let Some(spec) = profile_policy(p, legacy, origin, &mut refused, &mut warnings) else {
            continue;
        };
        if legacy == "aws-legacy-dynamodb" && spec.preset.as_deref() != Some(legacy) {
            warnings.push(format!(
                "{}: --service dynamodb changes legacy mode's delays only; standard and \
                 adaptive modes before botocore 1.44 treat DynamoDB as any service (with \
                 1.44's 2026 rules DynamoDB gets 4 attempts and a 25 ms base: override \
                 max_attempts and the backoff)",
                section(&p.name)
            ));
        }
        let fallback = format!("aws-{}", policies.len() + 1);
        super::push_named(&mut policies, &p.name, &fallback, spec, &mut warnings);
    }
    refused.check()?;
    if policies.is_empty() {
        return Err(InvalidInput::At(Located::whole(
            origin,
            "no profile with retry settings here: expected an AWS config file with \
             retry_mode or max_attempts in [default] or a [profile NAME] section",
        )));
    }
    Imported {
        policies,
        dispatcher: None,
        warnings,
    }
    .validated(origin)
}

/// The profiles to import: the one named `want` (refused when the file
/// does not have it), or every profile.
fn chosen_profiles<'p>(
    profiles: &'p [Profile],
    want: Option<&str>,
    origin: &str,
) -> Result<Vec<&'p Profile>, InvalidInput> {
    let Some(want) = want else {
        return Ok(profiles.iter().collect());
    };
    let found: Vec<&Profile> = profiles.iter().filter(|p| p.name == want).collect();
    if found.is_empty() {
        let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        return Err(InvalidInput::At(Located::whole(
            origin,
            format!(
                "no profile {want:?} here (the file has {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )));
    }
    Ok(found)
}

/// The policy of the profile `p` (its name left empty), `legacy` being
/// the preset of legacy mode; `None` when it has no retry settings
/// (warned) or a value is refused (recorded).
fn profile_policy(
    p: &Profile,
    legacy: &'static str,
    origin: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<PolicySpec> {
    if p.retry_mode.is_none() && p.max_attempts.is_none() {
        warnings.push(format!(
            "{} (line {}): no retry_mode or max_attempts; not imported",
            section(&p.name),
            p.line
        ));
        return None;
    }
    if !p.other.is_empty() {
        warnings.push(format!(
            "{}: {} not retry settings; ignored",
            section(&p.name),
            p.other.join(", ")
        ));
    }
    let preset = mode_preset(p, legacy, origin, refused, warnings);
    let attempts = max_attempts(p, origin, refused)?;
    Some(PolicySpec {
        preset: Some(preset?.into()),
        max_attempts: attempts,
        ..Default::default()
    })
}

/// The preset of the profile `p`'s `retry_mode` (`legacy` for legacy
/// mode, botocore's default); `None` when refused.
fn mode_preset(
    p: &Profile,
    legacy: &'static str,
    origin: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<&'static str> {
    match &p.retry_mode {
        None => {
            warnings.push(format!(
                "{}: no retry_mode: botocore's default before 1.44, {DEFAULT_RETRY_MODE}, is \
                 assumed (botocore 1.44 and the other SDKs default to standard, botocore's \
                 with the 2026 rules: preset aws-standard-2026; set retry_mode to be sure)",
                section(&p.name)
            ));
            Some(legacy)
        }
        Some((mode, line)) => match mode.as_str() {
            "legacy" => Some(legacy),
            "standard" => {
                warnings.push(format!(
                    "{}: retry_mode standard: botocore's standard mode before 1.44 (1 s base, \
                     preset aws-standard) is assumed; botocore 1.44 runs it with the 2026 rules \
                     (aws-standard-2026), the Go v2 and JavaScript v3 SDKs with their own \
                     delays (aws-go-v2-standard, aws-js-v3-standard): set the preset of the \
                     SDK the client is built with",
                    section(&p.name)
                ));
                Some("aws-standard")
            }
            "adaptive" => {
                warnings.push(format!(
                    "{}: retry_mode adaptive: botocore's adaptive mode before 1.44 (standard \
                     mode's 1 s base, preset aws-adaptive) is assumed; botocore 1.44 retries \
                     with the 2026 rules (aws-standard-2026's delays)",
                    section(&p.name)
                ));
                Some("aws-adaptive")
            }
            other => {
                refused.add(at(
                    bad_key(
                        origin,
                        &format!("{}.retry_mode", section(&p.name)),
                        format!("{other:?} is not a retry mode (legacy, standard or adaptive)"),
                    ),
                    *line,
                ));
                None
            }
        },
    }
}

/// The profile `p`'s `max_attempts`: `Some(None)` when absent, `None`
/// when refused.
fn max_attempts(p: &Profile, origin: &str, refused: &mut Refusals) -> Option<Option<i64>> {
    let Some((v, line)) = &p.max_attempts else {
        return Some(None);
    };
    match v.parse::<i64>() {
        Ok(n) if (1..=i64::from(u32::MAX)).contains(&n) => Some(Some(n)),
        _ => {
            refused.add(at(
                bad_key(
                    origin,
                    &format!("{}.max_attempts", section(&p.name)),
                    format!("expected a whole number of attempts, at least 1, found {v:?}"),
                ),
                *line,
            ));
            None
        }
    }
}

/// The `[section]` a profile is written in.
fn section(name: &str) -> String {
    if name == "default" {
        "[default]".into()
    } else {
        format!("[profile {name}]")
    }
}

/// `e` placed on `line` of its file.
fn at(e: InvalidInput, line: usize) -> InvalidInput {
    match e {
        InvalidInput::At(l) => InvalidInput::At(Located {
            line: Some(line),
            column: Some(1),
            ..l
        }),
        other => other,
    }
}

/// The profiles of the file, in order.
fn parse(
    text: &str,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Profile>, InvalidInput> {
    let mut out: Vec<Profile> = vec![];
    // Inside a section that is not a profile.
    let mut skipping = false;
    let mut in_section = false;
    // The keys of the section being read, with their lines.
    let mut keys: Vec<(String, usize)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if n > MAX_LINES {
            return Err(InvalidInput::At(Located::whole(
                origin,
                format!("more than {MAX_LINES} lines; no AWS config file is that long"),
            )));
        }
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if raw.starts_with([' ', '\t']) && in_section {
            // A nested setting (`s3 =` followed by indented keys).
            continue;
        }
        if let Some(inner) = line.strip_prefix('[') {
            skipping = !open_section(inner, n, origin, &mut out, warnings)?;
            in_section = true;
            keys.clear();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(located(
                origin,
                n,
                format!("expected `key = value` or a [section], found {line:?}"),
            ));
        };
        // Python's configparser, which botocore reads the file with,
        // folds keys to lower case and refuses one given twice in a
        // section.
        let key = k.trim().to_ascii_lowercase();
        if let Some((_, first)) = keys.iter().find(|(seen, _)| *seen == key) {
            return Err(located(
                origin,
                n,
                format!(
                    "`{key}` is set twice in one section (first on line {first}); \
                     the AWS SDKs refuse such a file"
                ),
            ));
        }
        keys.push((key.clone(), n));
        if skipping {
            continue;
        }
        let Some(p) = out.last_mut() else {
            return Err(located(
                origin,
                n,
                "a setting before any section: start with [default] or [profile NAME]",
            ));
        };
        let v = v.trim().to_string();
        match key.as_str() {
            "retry_mode" => p.retry_mode = Some((v, n)),
            "max_attempts" => p.max_attempts = Some((v, n)),
            other => p.other.push(other.to_string()),
        }
    }
    Ok(out)
}

/// Opens the section whose header, after its `[`, is `inner` (on line
/// `n`): a profile is added to `out`, another section named in a
/// warning. Whether it is a profile, whose settings are read.
fn open_section(
    inner: &str,
    n: usize,
    origin: &str,
    out: &mut Vec<Profile>,
    warnings: &mut Vec<String>,
) -> Result<bool, InvalidInput> {
    let Some(inner) = inner.strip_suffix(']') else {
        return Err(located(origin, n, "a section header must end with `]`"));
    };
    let inner = inner.trim();
    let name = if inner == "default" {
        Some("default".to_string())
    } else {
        inner
            .strip_prefix("profile ")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let Some(name) = name else {
        warnings.push(format!("[{inner}] (line {n}): not a profile; ignored"));
        return Ok(false);
    };
    if out.iter().any(|p| p.name == name) {
        return Err(located(
            origin,
            n,
            format!(
                "{} appears twice; each profile may be given once",
                section(&name)
            ),
        ));
    }
    out.push(Profile {
        name,
        line: n,
        ..Default::default()
    });
    Ok(true)
}

/// A problem on line `n` of `origin`.
fn located(origin: &str, n: usize, msg: impl Into<String>) -> InvalidInput {
    InvalidInput::At(Located {
        line: Some(n),
        column: Some(1),
        ..Located::whole(origin, msg)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "\
[default]
region = us-east-1
retry_mode = standard
max_attempts = 5

[profile batch]
retry_mode = adaptive

[profile old]
max_attempts = 10
s3 =
  max_concurrent_requests = 20

[profile plain]
region = eu-west-1

[sso-session corp]
sso_region = us-east-1
";

    #[test]
    fn every_profile_with_retry_settings_is_a_policy() {
        let imp = import_profiles(CONFIG, "config", None, None).unwrap();
        let got: Vec<(&str, Option<&str>, Option<i64>)> = imp
            .policies
            .iter()
            .map(|p| (p.name.as_str(), p.preset.as_deref(), p.max_attempts))
            .collect();
        assert_eq!(
            got,
            [
                ("default", Some("aws-standard"), Some(5)),
                ("batch", Some("aws-adaptive"), None),
                ("old", Some("aws-legacy"), Some(10)),
            ]
        );
        let w = imp.warnings.join("\n");
        assert!(
            w.contains("[profile plain] (line 14): no retry_mode"),
            "{w}"
        );
        assert!(
            w.contains("[sso-session corp] (line 17): not a profile"),
            "{w}"
        );
        assert!(w.contains("[profile old]: no retry_mode"), "{w}");
        assert!(
            w.contains("[default]: retry_mode standard: botocore's standard mode before 1.44"),
            "{w}"
        );
    }

    #[test]
    fn a_dynamodb_client_in_legacy_mode_gets_dynamodbs_delays() {
        let imp = import_profiles(CONFIG, "config", Some("old"), Some("DynamoDB")).unwrap();
        assert_eq!(
            imp.policies[0].preset.as_deref(),
            Some("aws-legacy-dynamodb")
        );
        let imp = import_profiles(CONFIG, "config", Some("old"), Some("s3")).unwrap();
        assert_eq!(imp.policies[0].preset.as_deref(), Some("aws-legacy"));
        // Standard and adaptive modes have no per-service delays before
        // the 2026 rules; the warning says what those change.
        let imp = import_profiles(CONFIG, "config", Some("batch"), Some("dynamodb")).unwrap();
        assert_eq!(imp.policies[0].preset.as_deref(), Some("aws-adaptive"));
        let w = imp.warnings.join("\n");
        assert!(
            w.contains("--service dynamodb changes legacy mode's delays only"),
            "{w}"
        );
        assert!(
            w.contains("retry_mode adaptive: botocore's adaptive mode before 1.44"),
            "{w}"
        );
    }

    /// A profile name a policy cannot have (a device name Windows
    /// reserves) is replaced, with a warning that says why.
    #[test]
    fn a_profile_name_that_cannot_name_a_policy_is_replaced_with_a_warning() {
        let imp = import_profiles(
            "[profile CON]\nretry_mode = standard\n",
            "config",
            None,
            None,
        )
        .unwrap();
        assert_eq!(imp.policies[0].name, "aws-1");
        let w = imp.warnings.join("\n");
        assert!(
            w.contains("\"CON\" cannot be a policy name")
                && w.contains("Windows reserves")
                && w.contains("imported as aws-1"),
            "{w}"
        );
    }

    #[test]
    fn a_profile_is_picked_by_name() {
        let imp = import_profiles(CONFIG, "config", Some("batch"), None).unwrap();
        assert_eq!(imp.policies.len(), 1);
        assert_eq!(imp.policies[0].preset.as_deref(), Some("aws-adaptive"));
        let msg = import_profiles(CONFIG, "config", Some("nope"), None)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("no profile \"nope\"") && msg.contains("default, batch, old, plain"),
            "{msg}"
        );
    }

    /// botocore reads the file with Python's configparser, which folds
    /// keys to lower case and refuses a key given twice in one section.
    #[test]
    fn a_key_given_twice_in_a_section_is_refused() {
        let text = "[default]\nretry_mode = standard\n\n[profile b]\nRetry_Mode = legacy\nretry_mode = adaptive\n";
        let msg = import_profiles(text, "config", None, None)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("config:6:1: `retry_mode` is set twice in one section (first on line 5)"),
            "{msg}"
        );
        let imp =
            import_profiles("[default]\nRETRY_MODE = legacy\n", "config", None, None).unwrap();
        assert_eq!(imp.policies[0].preset.as_deref(), Some("aws-legacy"));
    }

    #[test]
    fn bad_values_are_refused_with_their_lines() {
        let text = "[default]\nretry_mode = fast\nmax_attempts = 0\n";
        let msg = import_profiles(text, "config", None, None)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("config:2:1: [default].retry_mode: \"fast\" is not a retry mode"),
            "{msg}"
        );
        assert!(
            msg.contains("config:3:1: [default].max_attempts: expected a whole number"),
            "{msg}"
        );
    }
}
