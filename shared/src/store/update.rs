//! A conditional update, described as values: which attributes to set or add to, and the
//! condition the stored item must meet. Turned into one DynamoDB expression here only.

use super::{Item, Store};
use aws_sdk_dynamodb::types::{AttributeValue, Update as SdkUpdate};
use std::collections::HashMap;

/// The condition an update is held to.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// Any stored state (the item is created when missing).
    Always,
    /// The item exists.
    Exists,
    /// The attribute holds exactly this value.
    Equals(String, AttributeValue),
    /// The item exists and the attribute is absent or sorts before this value (a lease that
    /// has run out: stored times sort as strings).
    AbsentOrBefore(String, AttributeValue),
    /// The item does not exist (the update creates it).
    Missing,
    /// The item exists without this attribute.
    Lacks(String),
    /// The attribute sorts before this value (a missing attribute does not).
    Before(String, AttributeValue),
    /// The set attribute holds this member.
    Contains(String, AttributeValue),
    /// The set attribute holds fewer members than this (a missing one holds none).
    Fewer(String, usize),
    /// Every one of these.
    All(Vec<Cond>),
    /// At least one of these.
    Any(Vec<Cond>),
}

impl Cond {
    /// The condition expression, its names and values numbered from `names.len()`.
    fn render(&self, names: &mut HashMap<String, String>, values: &mut Item) -> Option<String> {
        let mut bind = |name: &str, value: &AttributeValue| {
            let i = names.len();
            names.insert(format!("#c{i}"), name.to_owned());
            values.insert(format!(":c{i}"), value.clone());
            i
        };
        match self {
            Cond::Always => None,
            Cond::Exists => Some("attribute_exists(pk)".to_owned()),
            Cond::Equals(name, value) => {
                let i = bind(name, value);
                Some(format!("#c{i} = :c{i}"))
            }
            Cond::AbsentOrBefore(name, value) => {
                let i = bind(name, value);
                Some(format!(
                    "attribute_exists(pk) AND (attribute_not_exists(#c{i}) OR #c{i} < :c{i})"
                ))
            }
            Cond::Missing => Some("attribute_not_exists(pk)".to_owned()),
            Cond::Lacks(name) => {
                let i = names.len();
                names.insert(format!("#c{i}"), name.clone());
                Some(format!(
                    "attribute_exists(pk) AND attribute_not_exists(#c{i})"
                ))
            }
            Cond::Before(name, value) => {
                let i = bind(name, value);
                Some(format!("#c{i} < :c{i}"))
            }
            Cond::Contains(name, value) => {
                let i = bind(name, value);
                Some(format!("contains(#c{i}, :c{i})"))
            }
            Cond::Fewer(name, n) => {
                let i = bind(name, &AttributeValue::N(n.to_string()));
                Some(format!(
                    "attribute_not_exists(#c{i}) OR size(#c{i}) < :c{i}"
                ))
            }
            Cond::All(all) | Cond::Any(all) => {
                let joint = if matches!(self, Cond::All(_)) {
                    " AND "
                } else {
                    " OR "
                };
                let parts: Vec<String> = all
                    .iter()
                    .filter_map(|c| c.render(names, values))
                    .map(|p| format!("({p})"))
                    .collect();
                (!parts.is_empty()).then(|| parts.join(joint))
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    set: Vec<(String, AttributeValue)>,
    add: Vec<(String, AttributeValue)>,
    /// Members taken out of a set (`DELETE`).
    take: Vec<(String, AttributeValue)>,
    remove: Vec<String>,
    cond: Cond,
}

pub(super) struct Expression {
    pub update: String,
    pub condition: Option<String>,
    pub names: HashMap<String, String>,
    pub values: Item,
}

impl Default for Update {
    fn default() -> Self {
        Self::new()
    }
}

impl Update {
    pub fn new() -> Self {
        Self {
            set: Vec::new(),
            add: Vec::new(),
            take: Vec::new(),
            remove: Vec::new(),
            cond: Cond::Always,
        }
    }

    /// `other`, an update of the same counter item, folded into this one (a transaction may touch
    /// an item once): what both set (the same values) once, each number both add summed.
    /// Nothing changes unless both are unconditioned sets and number adds that
    /// agree on what they set (`Some(other)` is what is left).
    pub fn merge_count(&mut self, other: Update) -> Option<Update> {
        let plain = |u: &Update| u.cond == Cond::Always && u.take.is_empty() && u.remove.is_empty();
        let agrees = other.set.iter().all(|(name, value)| {
            self.set
                .iter()
                .all(|(mine, stored)| mine != name || stored == value)
        });
        let number = |v: &AttributeValue| match v {
            AttributeValue::N(n) => n.parse::<i64>().ok(),
            _ => None,
        };
        let numbers = self
            .add
            .iter()
            .chain(&other.add)
            .all(|(_, v)| number(v).is_some());
        if !plain(self) || !plain(&other) || !agrees || !numbers {
            return Some(other);
        }
        for (name, value) in other.set {
            if !self.set.iter().any(|(mine, _)| *mine == name) {
                self.set.push((name, value));
            }
        }
        for (name, value) in other.add {
            let delta = number(&value).unwrap_or_default();
            match self.add.iter_mut().find(|(mine, _)| *mine == name) {
                Some((_, sum)) => {
                    let total = number(sum).unwrap_or_default() + delta;
                    *sum = AttributeValue::N(total.to_string());
                }
                None => self.add.push((name, value)),
            }
        }
        None
    }

    pub fn set(mut self, name: &str, value: AttributeValue) -> Self {
        self.set.push((name.to_owned(), value));
        self
    }

    /// Adds to a number (or creates it).
    pub fn add(mut self, name: &str, value: AttributeValue) -> Self {
        self.add.push((name.to_owned(), value));
        self
    }

    /// Takes these members out of a string set (a set left empty is removed).
    pub fn take_from_set(mut self, name: &str, members: Vec<String>) -> Self {
        self.take
            .push((name.to_owned(), AttributeValue::Ss(members)));
        self
    }

    /// Removes an attribute (a missing one is no error).
    pub fn remove(mut self, name: &str) -> Self {
        self.remove.push(name.to_owned());
        self
    }

    pub fn when(mut self, cond: Cond) -> Self {
        self.cond = cond;
        self
    }

    pub(super) fn expression(&self) -> Expression {
        let mut names = HashMap::new();
        let mut values = HashMap::new();
        let mut clause = |prefix: &str, pairs: &[(String, AttributeValue)], sep: &str| {
            let parts: Vec<String> = pairs
                .iter()
                .map(|(name, value)| {
                    let i = names.len();
                    names.insert(format!("#a{i}"), name.clone());
                    values.insert(format!(":v{i}"), value.clone());
                    format!("#a{i}{sep}:v{i}")
                })
                .collect();
            (!parts.is_empty()).then(|| format!("{prefix} {}", parts.join(", ")))
        };
        let set = clause("SET", &self.set, " = ");
        let add = clause("ADD", &self.add, " ");
        let take = clause("DELETE", &self.take, " ");
        let removed: Vec<String> = self
            .remove
            .iter()
            .map(|name| {
                let i = names.len();
                names.insert(format!("#a{i}"), name.clone());
                format!("#a{i}")
            })
            .collect();
        let remove = (!removed.is_empty()).then(|| format!("REMOVE {}", removed.join(", ")));
        let update = [set, add, take, remove]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let condition = self.cond.render(&mut names, &mut values);
        Expression {
            update,
            condition,
            names,
            values,
        }
    }

    pub(super) fn transact_step(&self, table: &str, pk: &str) -> SdkUpdate {
        let expr = self.expression();
        SdkUpdate::builder()
            .table_name(table)
            .set_key(Some(Store::key(pk)))
            .update_expression(expr.update)
            .set_condition_expression(expr.condition)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .build()
            .expect("table, key and expression are set")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::{n, s};

    #[test]
    fn an_update_names_every_attribute_and_value_once() {
        let expr = Update::new()
            .set("status", s("paid"))
            .set("version", n(2))
            .add("attempts", n(1))
            .when(Cond::Equals("version".into(), n(1)))
            .expression();
        assert_eq!(expr.update, "SET #a0 = :v0, #a1 = :v1 ADD #a2 :v2");
        assert_eq!(expr.condition.as_deref(), Some("#c3 = :c3"));
        assert_eq!(expr.names.len(), 4);
        assert_eq!(expr.values.len(), 4);
        assert_eq!(expr.names["#a2"], "attempts");
    }

    #[test]
    fn conditions_combine_with_their_own_names() {
        let expr = Update::new()
            .set("state", s("sent"))
            .when(Cond::All(vec![
                Cond::Equals("state".into(), s("sending")),
                Cond::Equals("lease".into(), s("t1")),
            ]))
            .expression();
        assert_eq!(
            expr.condition.as_deref(),
            Some("(#c1 = :c1) AND (#c2 = :c2)")
        );
        assert_eq!(
            (expr.names["#c1"].as_str(), expr.names["#c2"].as_str()),
            ("state", "lease")
        );
        assert_eq!(expr.values.len(), 3);
    }

    #[test]
    fn an_upsert_over_a_lower_rank_reads_as_missing_or_before() {
        let expr = Update::new()
            .set("rank", n(3))
            .when(Cond::Any(vec![
                Cond::Missing,
                Cond::Before("rank".into(), n(3)),
            ]))
            .expression();
        assert_eq!(
            expr.condition.as_deref(),
            Some("(attribute_not_exists(pk)) OR (#c1 < :c1)")
        );
    }
}
