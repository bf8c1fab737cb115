//! Groups of settings are objects, never lists. serde reads a struct from
//! a list too, its fields by position (`["x", "", 1, "60s", ...]` as a
//! scenario), a form no reader of a scenario file would guess and none of
//! its messages could explain. [`Objects`] wraps a deserializer and
//! refuses a list wherever a group of settings (a struct, or a kind's
//! settings) is read, and, in retrysim's own files, an explicit `null` for
//! an optional setting (which would read as the field left out);
//! everything else passes through unchanged.

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use std::fmt;

/// What an explicit `null` for an optional setting is told.
pub(crate) const NULL_REFUSED: &str = "null is not a setting: leave the field out to keep its \
     default (a preset's value, where the policy names one), or give a value";

/// What an explicit `null` for an optional setting means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nulls {
    /// Refused ([`NULL_REFUSED`]): retrysim's own files, where it would
    /// read as the field left out while it looks like "none" or "off".
    Refuse,
    /// The field left out: formats such as protobuf's JSON (a gRPC
    /// service config), where `null` is the field's default.
    AsAbsent,
}

/// A deserializer that reads what `D` reads, except that a group of
/// settings given as a list is a type error ("invalid type: sequence,
/// expected struct ..."), raised where the list starts, and a `null` is
/// read as [`Nulls`] says.
pub(crate) struct Objects<D>(pub(crate) D, pub(crate) Nulls);

/// The visitor `V` handed to the wrapped deserializer: what it visits
/// inside (list items, object values, a kind's settings) is read through
/// [`Objects`] again; a list is refused when `object` is set.
struct Guard<V> {
    inner: V,
    object: bool,
    nulls: Nulls,
}

impl<V> Guard<V> {
    fn any(inner: V, nulls: Nulls) -> Guard<V> {
        Guard {
            inner,
            object: false,
            nulls,
        }
    }

    fn object(inner: V, nulls: Nulls) -> Guard<V> {
        Guard {
            inner,
            object: true,
            nulls,
        }
    }
}

/// Forwards `deserialize_*` methods to the wrapped deserializer, with the
/// visitor guarded.
macro_rules! forward {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method(Guard::any(visitor, self.1))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Objects<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_unit_struct(name, Guard::any(visitor, self.1))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_newtype_struct(name, Guard::any(visitor, self.1))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Guard::any(visitor, self.1))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_tuple_struct(name, len, Guard::any(visitor, self.1))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_struct(name, fields, Guard::object(visitor, self.1))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_enum(name, variants, Guard::any(visitor, self.1))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Forwards `visit_*` methods of plain values to the guarded visitor.
macro_rules! visit {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Guard<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );

    /// An explicit `null` where a setting is optional, as [`Nulls`]
    /// says. TOML has no null; JSON and `--set` values do.
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        match self.nulls {
            Nulls::Refuse => Err(E::custom(NULL_REFUSED)),
            Nulls::AsAbsent => self.inner.visit_none(),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Objects(d, self.nulls))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Objects(d, self.nulls))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        if self.object {
            return Err(de::Error::invalid_type(Unexpected::Seq, &self));
        }
        self.inner.visit_seq(Seq(seq, self.nulls))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Map(map, self.nulls))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Enum(data, self.nulls))
    }
}

/// A seed whose value is read through [`Objects`].
struct Seed<S>(S, Nulls);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Objects(d, self.1))
    }
}

/// A list whose items are read through [`Objects`].
struct Seq<A>(A, Nulls);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed, self.1))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// An object whose keys and values are read through [`Objects`].
struct Map<A>(A, Nulls);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed, self.1))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed, self.1))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A kind (`{"exponential": {...}}`) whose name and settings are read
/// through [`Objects`].
struct Enum<A>(A, Nulls);

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Variant<A::Variant>), A::Error> {
        let nulls = self.1;
        self.0
            .variant_seed(Seed(seed, nulls))
            .map(|(value, variant)| (value, Variant(variant, nulls)))
    }
}

/// A kind's settings: a kind that takes several settings (a struct
/// variant) takes them as an object.
struct Variant<A>(A, Nulls);

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed, self.1))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Guard::any(visitor, self.1))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0
            .struct_variant(fields, Guard::object(visitor, self.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Wrapped(u32),
        Settings { a: u32 },
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Group {
        name: String,
        #[serde(default)]
        list: Vec<u32>,
        #[serde(default)]
        kind: Option<Kind>,
    }

    fn read(text: &str) -> Result<Group, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        Group::deserialize(Objects(&mut de, Nulls::Refuse)).map_err(|e| e.to_string())
    }

    #[test]
    fn objects_and_lists_read_as_before() {
        assert_eq!(
            read(r#"{"name": "x", "list": [1, 2], "kind": {"settings": {"a": 3}}}"#),
            Ok(Group {
                name: "x".into(),
                list: vec![1, 2],
                kind: Some(Kind::Settings { a: 3 }),
            })
        );
        for (kind, want) in [
            (r#""plain""#, Kind::Plain),
            (r#"{"wrapped": 4}"#, Kind::Wrapped(4)),
        ] {
            let group = read(&format!(r#"{{"name": "x", "kind": {kind}}}"#)).unwrap();
            assert_eq!(group.kind, Some(want));
        }
    }

    #[test]
    fn a_group_or_a_kind_s_settings_as_a_list_is_refused() {
        // serde alone reads both, by position.
        assert!(serde_json::from_str::<Group>(r#"["x", [1]]"#).is_ok());
        assert!(
            serde_json::from_str::<Group>(r#"{"name": "x", "kind": {"settings": [3]}}"#).is_ok()
        );
        assert_eq!(
            read(r#"["x", [1]]"#).unwrap_err(),
            "invalid type: sequence, expected struct Group at line 1 column 1"
        );
        let e = read(r#"{"name": "x", "kind": {"settings": [3]}}"#).unwrap_err();
        assert!(
            e.starts_with("invalid type: sequence, expected struct variant Kind::Settings"),
            "{e}"
        );
    }

    #[test]
    fn an_explicit_null_is_refused_where_leaving_the_field_out_is_not() {
        // serde alone reads it as the field left out.
        let plain = serde_json::from_str::<Group>(r#"{"name": "x", "kind": null}"#).unwrap();
        assert_eq!(plain.kind, None);
        assert!(read(r#"{"name": "x"}"#).is_ok());
        let e = read(r#"{"name": "x", "kind": null}"#).unwrap_err();
        assert!(e.starts_with(NULL_REFUSED), "{e}");
        // A unit kind written with a null value is not an optional setting.
        assert_eq!(
            read(r#"{"name": "x", "kind": {"plain": null}}"#)
                .unwrap()
                .kind,
            Some(Kind::Plain)
        );
    }
}
