//! Attribute mapping helpers: money as DynamoDB numbers, text as strings, enums by their serde
//! names, times in the one stored format.

use super::{Item, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{de::DeserializeOwned, Serialize};

/// An enum's wire name, as serde spells it (`rename_all` and all).
pub fn tag_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => unreachable!("tags are unit enum variants"),
    }
}

/// An enum from its wire name.
pub fn parse_tag<T: DeserializeOwned>(raw: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(raw.to_owned())).ok()
}

/// An item's size as DynamoDB bills it: each attribute's name and value in bytes (a number
/// about a byte for two digits, and one more). A write costs a unit per KB of it, each index's
/// copy as much again.
pub fn size(item: &Item) -> usize {
    fn value(v: &AttributeValue) -> usize {
        match v {
            AttributeValue::S(s) => s.len(),
            AttributeValue::N(n) => n.len().div_ceil(2) + 1,
            AttributeValue::B(b) => b.as_ref().len(),
            AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
            AttributeValue::Ns(set) => set.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
            AttributeValue::L(list) => 3 + list.iter().map(|v| 1 + value(v)).sum::<usize>(),
            AttributeValue::M(map) => {
                3 + map
                    .iter()
                    .map(|(k, v)| 1 + k.len() + value(v))
                    .sum::<usize>()
            }
            _ => 1,
        }
    }
    item.iter().map(|(k, v)| k.len() + value(v)).sum()
}

pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub fn b(value: bool) -> AttributeValue {
    AttributeValue::Bool(value)
}

/// Builds an item from pairs, skipping `None` values.
#[derive(Default)]
pub struct Builder(Item);

impl Builder {
    pub fn new(pk: &str, kind: &str, org: &str) -> Self {
        let mut item = super::Store::key(pk);
        item.insert("kind".into(), s(kind));
        item.insert("org".into(), s(org));
        Self(item)
    }

    pub fn set(mut self, name: &str, value: AttributeValue) -> Self {
        self.0.insert(name.to_owned(), value);
        self
    }

    pub fn str(self, name: &str, value: impl Into<String>) -> Self {
        self.set(name, s(value))
    }

    pub fn opt_str(self, name: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(v) => self.str(name, v),
            None => self,
        }
    }

    pub fn num(self, name: &str, value: impl ToString) -> Self {
        self.set(name, n(value))
    }

    pub fn opt_num(self, name: &str, value: Option<impl ToString>) -> Self {
        match value {
            Some(v) => self.num(name, v),
            None => self,
        }
    }

    pub fn bool(self, name: &str, value: bool) -> Self {
        self.set(name, b(value))
    }

    /// An enum, by its serde name.
    pub fn tag<T: Serialize>(self, name: &str, value: &T) -> Self {
        self.str(name, tag_name(value))
    }

    pub fn time(self, name: &str, at: DateTime<Utc>) -> Self {
        self.str(name, crate::time::format(at))
    }

    /// Puts the item on a list read through `gsi1`.
    pub fn list(self, gsi1pk: &str, gsi1sk: &str) -> Self {
        self.str("gsi1pk", gsi1pk).str("gsi1sk", gsi1sk)
    }

    /// Puts the item on one of the operator's lists, read through `gsi2` (see `ops`).
    pub fn index(self, gsi2pk: &str, gsi2sk: &str) -> Self {
        self.str("gsi2pk", gsi2pk).str("gsi2sk", gsi2sk)
    }

    /// Puts an event item on its organisation's list of `kind` events (`gsi2`), at its time and
    /// key: where the operator's lists find it and the fan-out counts it.
    pub fn on_events(
        self,
        org: &crate::ids::OrgId,
        kind: super::lists::EventKind,
        (at, key): (DateTime<Utc>, &str),
    ) -> Self {
        use super::lists::{event_position, events_pk};
        self.index(&events_pk(org, kind), &event_position(at, key))
    }

    /// Puts the item on a list of keys alone, read through `gsi3` (the waiting marks, an
    /// organisation's invoices): an update that keeps its place writes no index entry.
    pub fn keys_list(self, gsi3pk: &str, gsi3sk: &str) -> Self {
        self.str("gsi3pk", gsi3pk).str("gsi3sk", gsi3sk)
    }

    pub fn build(self) -> Item {
        self.0
    }
}

/// Typed reads from a stored item; a missing or mistyped attribute is `StoreError::Malformed`.
pub trait Read {
    fn str_of(&self, name: &str) -> Result<&str, StoreError>;
    fn opt_str(&self, name: &str) -> Option<&str>;
    fn dec_of(&self, name: &str) -> Result<Decimal, StoreError>;
    fn opt_dec(&self, name: &str) -> Option<Decimal>;
    fn u64_of(&self, name: &str) -> Result<u64, StoreError>;
    fn bool_of(&self, name: &str) -> bool;
    fn tag_of<T: DeserializeOwned>(&self, name: &str) -> Result<T, StoreError>;
    fn time_of(&self, name: &str) -> Result<DateTime<Utc>, StoreError>;
    fn opt_time(&self, name: &str) -> Option<DateTime<Utc>>;
}

/// The error for an attribute that is missing or does not read as its type.
pub fn malformed(item: &Item, name: &str) -> StoreError {
    let pk = item
        .get("pk")
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default();
    StoreError::Malformed {
        pk,
        detail: format!("attribute {name} is missing or has the wrong type"),
    }
}

impl Read for Item {
    fn str_of(&self, name: &str) -> Result<&str, StoreError> {
        self.opt_str(name).ok_or_else(|| malformed(self, name))
    }

    fn opt_str(&self, name: &str) -> Option<&str> {
        self.get(name)
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
    }

    fn dec_of(&self, name: &str) -> Result<Decimal, StoreError> {
        self.opt_dec(name).ok_or_else(|| malformed(self, name))
    }

    fn opt_dec(&self, name: &str) -> Option<Decimal> {
        self.get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|raw| raw.parse().ok())
    }

    fn u64_of(&self, name: &str) -> Result<u64, StoreError> {
        self.get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|raw| raw.parse().ok())
            .ok_or_else(|| malformed(self, name))
    }

    fn bool_of(&self, name: &str) -> bool {
        matches!(self.get(name), Some(AttributeValue::Bool(true)))
    }

    fn tag_of<T: DeserializeOwned>(&self, name: &str) -> Result<T, StoreError> {
        parse_tag(self.str_of(name)?).ok_or_else(|| malformed(self, name))
    }

    fn time_of(&self, name: &str) -> Result<DateTime<Utc>, StoreError> {
        self.opt_time(name).ok_or_else(|| malformed(self, name))
    }

    fn opt_time(&self, name: &str) -> Option<DateTime<Utc>> {
        self.opt_str(name).and_then(crate::time::parse)
    }
}
