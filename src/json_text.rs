//! JSON text serialized from a value (`tune.json`, `dispatcher.json`, a
//! candidate's changes), with every float written by the number rule of
//! [`crate::decimal`]: a multiplier of 2 is `2`, not serde's `2.0`, as in
//! the files retrysim writes field by field (`summary.json`,
//! `assess.json`). Everything else is serde_json's own output.

use crate::decimal::num;
use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use std::io::{self, Write};

/// `value` as indented JSON (two spaces), floats by the number rule.
pub fn pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    write_with(value, PrettyFormatter::new())
}

/// `value` as one-line JSON, floats by the number rule.
pub fn compact<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    write_with(value, CompactFormatter)
}

fn write_with<T: Serialize + ?Sized, F: Formatter>(
    value: &T,
    formatter: F,
) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Tidy(formatter));
    value.serialize(&mut ser)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// A formatter that writes floats with [`num`] and leaves the layout to
/// the one it wraps. serde_json writes a non-finite float as `null`
/// before it reaches the formatter.
struct Tidy<F>(F);

impl<F: Formatter> Formatter for Tidy<F> {
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        w.write_all(num(f64::from(value)).as_bytes())
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(num(value).as_bytes())
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Floats follow the number rule; the layout is serde_json's.
    #[test]
    fn floats_follow_the_number_rule() {
        let v = json!({"multiplier": 2.0, "ratio": 0.1234567, "n": 3, "neg": -0.0, "list": [1.5, 30.0]});
        assert_eq!(
            compact(&v).unwrap(),
            r#"{"list":[1.5,30],"multiplier":2,"n":3,"neg":0,"ratio":0.123457}"#
        );
        let pretty_text = pretty(&v).unwrap();
        assert_eq!(
            pretty_text,
            serde_json::to_string_pretty(&v)
                .unwrap()
                .replace("2.0", "2")
                .replace("30.0", "30")
                .replace("-0.0", "0")
                .replace("0.1234567", "0.123457")
        );
        let back: serde_json::Value = serde_json::from_str(&pretty_text).unwrap();
        assert_eq!(back["multiplier"], json!(2));
        assert_eq!(compact(&f64::NAN).unwrap(), "null");
    }
}
