//! Finding the line and column of a field path in the original text, so
//! problems found after deserialisation (validation) point at the file as
//! precisely as type errors do.
//!
//! Neither serde_json nor toml hands out spans for arbitrary values, but
//! both attach a position to any error raised while a value is read. So the
//! text is walked again with a seed that follows the path, skipping every
//! other value, and fails on purpose at the target: the failure's position
//! is the field's position.

use super::load::{json_position, line_col, Format};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Splits `policies[1].backoff.exponential.initial` into steps; `None`
/// for text that is not a path of this shape.
fn parse_path(path: &str) -> Option<Vec<Seg>> {
    let mut segs = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => part.split_at(i),
            None => (part, ""),
        };
        if key.is_empty() && segs.is_empty() {
            return None;
        }
        if !key.is_empty() {
            segs.push(Seg::Key(key.to_string()));
        }
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            segs.push(Seg::Index(r[..end].parse().ok()?));
            rest = &r[end + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(segs)
}

/// Line and column (1-based) of `path` in `text`, or of its nearest
/// ancestor present in the text (a missing field points at its table).
pub(crate) fn locate(text: &str, format: Format, path: &str) -> Option<(usize, usize)> {
    let segs = parse_path(path)?;
    (1..=segs.len())
        .rev()
        .find_map(|n| locate_exact(text, format, &segs[..n]))
}

fn locate_exact(text: &str, format: Format, segs: &[Seg]) -> Option<(usize, usize)> {
    let seed = Walk { segs };
    match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            match seed.deserialize(&mut de) {
                Err(e) => json_position(text, &e),
                Ok(()) => None,
            }
        }
        Format::Toml => {
            let de = toml::Deserializer::parse(text).ok()?;
            match seed.deserialize(de) {
                Err(e) => e.span().map(|s| line_col(text, s.start)),
                Ok(()) => None,
            }
        }
    }
}

/// Follows `segs`; fails at the target, succeeds when the path is absent.
struct Walk<'a> {
    segs: &'a [Seg],
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.segs.first() {
            None => d.deserialize_any(Here),
            Some(Seg::Key(_)) => d.deserialize_map(self),
            Some(Seg::Index(_)) => d.deserialize_seq(self),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table or a list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some(Seg::Key(want)) = self.segs.first() else {
            return Ok(());
        };
        while let Some(key) = map.next_key::<String>()? {
            if &key == want {
                return map.next_value_seed(Walk {
                    segs: &self.segs[1..],
                });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(&Seg::Index(want)) = self.segs.first() else {
            return Ok(());
        };
        for _ in 0..want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element_seed(Walk {
            segs: &self.segs[1..],
        })?;
        Ok(())
    }

    // Scalars where a table or list was expected: the path is absent.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The target: every visit fails (serde's default), which records where.
struct Here;

impl Visitor<'_> for Here {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("nothing (this marks a position)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths() {
        assert_eq!(
            parse_path("policies[1].backoff"),
            Some(vec![
                Seg::Key("policies".into()),
                Seg::Index(1),
                Seg::Key("backoff".into())
            ])
        );
        assert_eq!(parse_path("[1]"), None);
        assert_eq!(parse_path("a[x]"), None);
    }

    #[test]
    fn finds_json_fields() {
        let text = "{\n  \"a\": 1,\n  \"b\": [\n    {\"c\": \"x\"},\n    {\"c\": \"y\",\n     \"d\": 2}\n  ]\n}";
        assert_eq!(locate(text, Format::Json, "a").map(|p| p.0), Some(2));
        assert_eq!(locate(text, Format::Json, "b[1].d").map(|p| p.0), Some(6));
        assert_eq!(locate(text, Format::Json, "b[0].c").map(|p| p.0), Some(4));
        // Missing: the nearest ancestor.
        assert_eq!(locate(text, Format::Json, "b[1].e").map(|p| p.0), Some(5));
        assert_eq!(locate(text, Format::Json, "zzz"), None);
    }

    #[test]
    fn finds_toml_fields() {
        let text = "a = 1\n\n[t]\nx = \"1s\"\ny = { z = 3 }\n\n[[p]]\nn = 1\n[[p]]\nn = 2\n";
        assert_eq!(locate(text, Format::Toml, "a"), Some((1, 5)));
        assert_eq!(locate(text, Format::Toml, "t.x").map(|p| p.0), Some(4));
        assert_eq!(locate(text, Format::Toml, "t.y.z").map(|p| p.0), Some(5));
        assert_eq!(locate(text, Format::Toml, "p[1].n").map(|p| p.0), Some(10));
    }
}
