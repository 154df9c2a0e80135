//! The serde path: reads any JSON through serde_json, calling back for each entry as the fast
//! path does; what it refuses is not JSON (or not the shape asked for).

use super::value::{Key, PyText, Scalar, SetFlag, ValueError, ValueSink};
use super::NotObject;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Visits an object's entries with `on_entry(key, map)`; a non-object value is skipped and
/// reported as `Ok(false)`. The callback must consume the value of the key it is given.
pub(crate) fn visit_object<'de, D, F>(d: D, on_entry: F) -> Result<bool, D::Error>
where
    D: Deserializer<'de>,
    F: FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
{
    d.deserialize_any(ObjectVisitor { on_entry })
}

/// Visits an array's elements with `on_element(index, raw element)`, one at a time (nothing
/// of the array is kept); a callback error stops it. A non-array is an error.
pub(crate) fn visit_array<'de, D, F>(d: D, on_element: F) -> Result<(), D::Error>
where
    D: Deserializer<'de>,
    F: FnMut(usize, &'de serde_json::value::RawValue) -> Result<(), ValueError>,
{
    struct Elements<F>(F);
    impl<'de, F> Visitor<'de> for Elements<F>
    where
        F: FnMut(usize, &'de serde_json::value::RawValue) -> Result<(), ValueError>,
    {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            let mut n = 0;
            while let Some(item) = seq.next_element::<&'de serde_json::value::RawValue>()? {
                (self.0)(n, item).map_err(de::Error::custom)?;
                n += 1;
            }
            Ok(())
        }
    }
    d.deserialize_seq(Elements(on_element))
}

/// serde_json's message as the error of a value.
fn invalid(e: impl fmt::Display) -> ValueError {
    ValueError::Invalid(e.to_string())
}

struct MapSink<'a, A> {
    map: &'a mut A,
}

impl<'de, A: MapAccess<'de>> ValueSink<'de> for MapSink<'_, A> {
    fn scalar(&mut self) -> Result<Scalar<'de>, ValueError> {
        // Through the raw text, so that an integer too wide for 64 bits keeps its digits.
        let raw = self
            .map
            .next_value::<&'de serde_json::value::RawValue>()
            .map_err(invalid)?;
        Scalar::of_raw(raw.get())
    }
    fn text(&mut self) -> Result<PyText<'de>, ValueError> {
        let raw = self
            .map
            .next_value::<&'de serde_json::value::RawValue>()
            .map_err(invalid)?;
        PyText::of_raw(raw.get())
    }
    fn raw(&mut self) -> Result<&'de serde_json::value::RawValue, ValueError> {
        self.map
            .next_value::<&'de serde_json::value::RawValue>()
            .map_err(invalid)
    }
    fn span(&mut self) -> Result<&'de str, ValueError> {
        self.map
            .next_value::<&'de serde_json::value::RawValue>()
            .map(|raw| raw.get())
            .map_err(invalid)
    }
    fn flag(&mut self) -> Result<bool, ValueError> {
        self.map.next_value::<SetFlag>().map(|f| f.0).map_err(invalid)
    }
    fn skip(&mut self) -> Result<(), ValueError> {
        self.map.next_value::<IgnoredAny>().map(|_| ()).map_err(invalid)
    }
    fn object(
        &mut self,
        on_entry: &mut dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
    ) -> Result<bool, ValueError> {
        self.map.next_value_seed(NestedObject { on_entry }).map_err(invalid)
    }
}

struct NestedObject<'f, 'de> {
    on_entry: &'f mut dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
}

impl<'de> DeserializeSeed<'de> for NestedObject<'_, 'de> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        let on_entry = self.on_entry;
        d.deserialize_any(ObjectVisitor {
            on_entry: move |k: &str, s: &mut dyn ValueSink<'de>| on_entry(k, s),
        })
    }
}

struct ObjectVisitor<F> {
    on_entry: F,
}

impl<'de, F> Visitor<'de> for ObjectVisitor<F>
where
    F: FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
{
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<bool, A::Error> {
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let mut sink = MapSink { map: &mut map };
            (self.on_entry)(&key, &mut sink).map_err(de::Error::custom)?;
        }
        Ok(true)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

pub(super) fn parse_object_text<'de>(
    text: &'de str,
    on_entry: impl FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError>,
) -> Result<(), NotObject> {
    let mut de = serde_json::Deserializer::from_str(text);
    match visit_object(&mut de, on_entry).and_then(|is_obj| de.end().map(|_| is_obj)) {
        Ok(true) => Ok(()),
        Ok(false) => Err(NotObject::NotObject),
        Err(_) => Err(NotObject::NotJson),
    }
}
