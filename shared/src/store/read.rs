//! Reads: several items in one call, lists on the generic index, and the whole table for tools.

use super::item::Read;
use super::{Index, Item, Store, StoreError, GSI};
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use std::collections::HashMap;

/// Keys one `BatchGetItem` may ask for.
const BATCH_GET_MAX: usize = 100;

impl Store {
    /// Strongly consistent reads (`BatchGetItem`, one call per 100 keys), in the order of `pks`.
    /// Keys DynamoDB leaves unprocessed are asked for again.
    pub async fn get_many(&self, pks: &[String]) -> Result<Vec<Option<Item>>, StoreError> {
        self.get_many_as(pks, true).await
    }

    /// The items `pointers` name, each by its `field` made a key by `pk_of` (an invoice's number
    /// item names its invoice, a contact's list entry its conversation), in one consistent read:
    /// a pointer whose item is gone names nothing, and no pointer makes no read.
    pub async fn named_by(
        &self,
        pointers: &[Item],
        field: &str,
        pk_of: impl Fn(&str) -> String,
    ) -> Result<Vec<Item>, StoreError> {
        let pks = pointers
            .iter()
            .map(|pointer| pointer.str_of(field).map(&pk_of))
            .collect::<Result<Vec<_>, _>>()?;
        if pks.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.get_many(&pks).await?.into_iter().flatten().collect())
    }

    /// [`Store::get_many`], consistent or not: an eventually consistent read costs half the
    /// units and may miss what was written in the last second or so (`write`'s stale first
    /// read, for a decision that says what of it holds so).
    pub async fn get_many_as(
        &self,
        pks: &[String],
        consistent: bool,
    ) -> Result<Vec<Option<Item>>, StoreError> {
        let mut found: HashMap<String, Item> = HashMap::new();
        let mut unique: Vec<&String> = pks.iter().collect();
        unique.sort();
        unique.dedup();
        let mut waiting: Vec<Item> = unique.into_iter().map(|pk| Self::key(pk)).collect();
        let mut wanted = Vec::new();
        let mut rounds = 0;
        // At most 100 keys a call; what DynamoDB leaves unprocessed goes round again.
        while !waiting.is_empty() || !wanted.is_empty() {
            let room = BATCH_GET_MAX - wanted.len();
            wanted.extend(waiting.drain(..room.min(waiting.len())));
            let keys = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut wanted)))
                .consistent_read(consistent)
                .build()
                .expect("keys are set");
            let out = Box::pin(
                self.client
                    .batch_get_item()
                    .request_items(&self.table, keys)
                    .send(),
            )
            .await
            .map_err(StoreError::sdk)?;
            for item in out
                .responses
                .unwrap_or_default()
                .remove(&self.table)
                .unwrap_or_default()
            {
                if let Some(AttributeValue::S(pk)) = item.get("pk") {
                    found.insert(pk.clone(), item);
                }
            }
            if let Some(mut rest) = out.unprocessed_keys.filter(|r| !r.is_empty()) {
                wanted = rest.remove(&self.table).map(|k| k.keys).unwrap_or_default();
                // Throttled: ask again after a pause that grows, not at once.
                rounds += 1;
                tokio::time::sleep(super::write::backoff(rounds)).await;
            }
        }
        Ok(pks.iter().map(|pk| found.get(pk).cloned()).collect())
    }

    /// Reads a list (one `gsi1pk`) in `gsi1sk` order, newest first when `newest_first`.
    pub async fn list(
        &self,
        gsi1pk: &str,
        newest_first: bool,
        limit: i32,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = Box::pin(
                self.client
                    .query()
                    .table_name(&self.table)
                    .index_name(GSI)
                    .key_condition_expression("gsi1pk = :p")
                    .expression_attribute_values(":p", AttributeValue::S(gsi1pk.to_owned()))
                    .scan_index_forward(!newest_first)
                    .limit(limit)
                    .set_exclusive_start_key(start)
                    .send(),
            )
            .await
            .map_err(StoreError::sdk)?;
            items.extend(out.items.unwrap_or_default());
            start = out.last_evaluated_key;
            if start.is_none() || items.len() >= limit as usize {
                break;
            }
        }
        items.truncate(limit as usize);
        Ok(items)
    }

    /// One page of a list: at most `limit` items after `cursor` (from the page before), and the
    /// cursor of the next page while more remain. The cursor is opaque to callers: the position
    /// of the page's last item, base64url JSON.
    pub async fn page(
        &self,
        gsi1pk: &str,
        newest_first: bool,
        limit: i32,
        cursor: Option<&str>,
    ) -> Result<(Vec<Item>, Option<String>), StoreError> {
        self.page_in(Index::Lists, gsi1pk, None, newest_first, limit, cursor)
            .await
    }

    /// A page of `list` on `index`, newest first, each item read by `read`.
    pub async fn newest_page<T>(
        &self,
        (index, list): (Index, &str),
        (limit, cursor): (i32, Option<&str>),
        read: impl Fn(&Item) -> Result<T, StoreError>,
    ) -> Result<(Vec<T>, Option<String>), StoreError> {
        let (items, next) = self.page_in(index, list, None, true, limit, cursor).await?;
        let read = items.iter().map(read).collect::<Result<_, _>>()?;
        Ok((read, next))
    }

    /// A page of the part of a list whose position lies between `range` (both ends inclusive):
    /// a time window, where positions start with a stored time.
    pub async fn page_in(
        &self,
        index: Index,
        list: &str,
        range: Option<(&str, &str)>,
        newest_first: bool,
        limit: i32,
        cursor: Option<&str>,
    ) -> Result<(Vec<Item>, Option<String>), StoreError> {
        let start = match cursor {
            Some(raw) => Some(decode_cursor(index, list, range, raw).ok_or_else(|| {
                StoreError::Malformed {
                    pk: list.to_owned(),
                    detail: "the cursor is not one this list gave".into(),
                }
            })?),
            None => None,
        };
        // One more than asked: whether a next page exists is known without a second read. A
        // query stops at 1 MB; the page goes on from where it stopped until it is full.
        let wanted = limit as usize + 1;
        let mut items: Vec<Item> = Vec::new();
        let mut start = start;
        loop {
            let out = Box::pin(
                self.list_query(index, list, range)
                    .scan_index_forward(!newest_first)
                    .limit((wanted - items.len()) as i32)
                    .set_exclusive_start_key(start)
                    .send(),
            )
            .await
            .map_err(|e| match StoreError::sdk(e) {
                // A position the checks above let through and DynamoDB still refuses is the
                // caller's cursor, not a fault of ours.
                refused if cursor.is_some() && refused.code() == Some("ValidationException") => {
                    StoreError::Malformed {
                        pk: list.to_owned(),
                        detail: "the cursor is not one this list gave".into(),
                    }
                }
                other => other,
            })?;
            items.extend(out.items.unwrap_or_default());
            start = out.last_evaluated_key;
            if start.is_none() || items.len() >= wanted {
                break;
            }
        }
        let more = items.len() > limit as usize;
        items.truncate(limit as usize);
        let next = match (more, items.last()) {
            (true, Some(last)) => Some(encode_cursor(index, last)),
            _ => None,
        };
        Ok((items, next))
    }

    /// The cursor that goes on after `item` on its list: for a page a caller cut short (a
    /// filtered list that found enough before the end of what it read).
    pub fn cursor_after(index: Index, item: &Item) -> String {
        encode_cursor(index, item)
    }

    /// How many items a list holds (between `range`, when given): a `Select=COUNT` query,
    /// page by page, reading keys and no attributes.
    pub async fn count_in(
        &self,
        index: Index,
        list: &str,
        range: Option<(&str, &str)>,
    ) -> Result<u64, StoreError> {
        let mut count = 0u64;
        let mut start = None;
        loop {
            let out = Box::pin(
                self.list_query(index, list, range)
                    .select(aws_sdk_dynamodb::types::Select::Count)
                    .set_exclusive_start_key(start)
                    .send(),
            )
            .await
            .map_err(StoreError::sdk)?;
            count += out.count.max(0) as u64;
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(count);
            }
        }
    }

    /// A query of one list, or of the part of it between `range`.
    fn list_query(
        &self,
        index: Index,
        list: &str,
        range: Option<(&str, &str)>,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(index.name())
            .expression_attribute_names("#p", index.pk())
            .expression_attribute_values(":p", AttributeValue::S(list.to_owned()));
        match range {
            Some((low, high)) => query
                .key_condition_expression("#p = :p AND #s BETWEEN :lo AND :hi")
                .expression_attribute_names("#s", index.sk())
                .expression_attribute_values(":lo", AttributeValue::S(low.to_owned()))
                .expression_attribute_values(":hi", AttributeValue::S(high.to_owned())),
            None => query.key_condition_expression("#p = :p"),
        }
    }

    /// Every item in the table (a consistent scan): for tests and operator tools, never on a
    /// request path.
    /// One page of a consistent scan for the items of `kind`, and where the next starts: for a
    /// one-off migration run by an operator, never on a request's path.
    pub async fn scan_kind(
        &self,
        kind: &str,
        start: Option<Item>,
    ) -> Result<(Vec<Item>, Option<Item>), StoreError> {
        let out = Box::pin(
            self.client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .filter_expression("#k = :k")
                .expression_attribute_names("#k", "kind")
                .expression_attribute_values(":k", AttributeValue::S(kind.to_owned()))
                .set_exclusive_start_key(start)
                .send(),
        )
        .await
        .map_err(StoreError::sdk)?;
        Ok((out.items.unwrap_or_default(), out.last_evaluated_key))
    }

    pub async fn scan_all(&self) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = Box::pin(
                self.client
                    .scan()
                    .table_name(&self.table)
                    .consistent_read(true)
                    .set_exclusive_start_key(start)
                    .send(),
            )
            .await
            .map_err(StoreError::sdk)?;
            items.extend(out.items.unwrap_or_default());
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }
}

/// `ORG#<id>#` of an organisation's list: every item on it is that organisation's.
fn organisation_prefix(list: &str) -> Option<&str> {
    let rest = list.strip_prefix("ORG#")?;
    let end = rest.find('#')?;
    Some(&list[..4 + end + 1])
}

fn encode_cursor(index: Index, item: &Item) -> String {
    use base64::Engine;
    let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    let position = serde_json::json!({"pk": text("pk"), "sk": text(index.sk())});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(position.to_string())
}

/// The longest key part a cursor may name: DynamoDB's limit for a sort key.
const KEY_PART_MAX: usize = 1024;

/// The `ExclusiveStartKey` a cursor stands for, on this list only. A cursor is checked against
/// the list before DynamoDB sees it, so a crafted one is refused (400) and never a server error:
/// both parts 1 to 1024 bytes, the item of the list's own organisation, the position inside the
/// asked range.
fn decode_cursor(index: Index, list: &str, range: Option<(&str, &str)>, raw: &str) -> Option<Item> {
    use base64::Engine;
    if raw.len() > 4 * KEY_PART_MAX {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .ok()?;
    let position: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let pk = position.get("pk")?.as_str()?;
    let sk = position.get("sk")?.as_str()?;
    let sized = |part: &str| (1..=KEY_PART_MAX).contains(&part.len());
    if !sized(pk) || !sized(sk) {
        return None;
    }
    if let Some(org) = organisation_prefix(list) {
        if !pk.starts_with(org) {
            return None;
        }
    }
    if range.is_some_and(|(from, to)| sk < from || sk > to) {
        return None;
    }
    let mut key = Store::key(pk);
    key.insert(index.pk().into(), AttributeValue::S(list.to_owned()));
    key.insert(index.sk().into(), AttributeValue::S(sk.to_owned()));
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn cursor(position: serde_json::Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(position.to_string())
    }

    const LIST: &str = "ORG#o1#EVENTS#payment";

    #[test]
    fn a_cursor_this_list_gave_is_read_back() {
        let mut item = Store::key("ORG#o1#PAYMENT#p1");
        item.insert(
            "gsi2sk".into(),
            AttributeValue::S("2026-12-01T00:00:00Z#p1".into()),
        );
        let raw = encode_cursor(Index::States, &item);
        let key = decode_cursor(Index::States, LIST, None, &raw).expect("read back");
        assert_eq!(key.get("gsi2pk"), Some(&AttributeValue::S(LIST.into())));
    }

    #[test]
    fn a_crafted_cursor_is_refused_before_the_store_sees_it() {
        let at = |pk: &str, sk: &str| cursor(serde_json::json!({"pk": pk, "sk": sk}));
        let long = "x".repeat(1025);
        let window = Some(("2026-12-01", "2026-12-02"));
        for (raw, range) in [
            ("not base64!".to_owned(), None),
            (cursor(serde_json::json!({"pk": 1, "sk": "a"})), None),
            (at("", "a"), None),
            (at("ORG#o1#X", &long), None),
            (at("ORG#o2#PAYMENT#p1", "a"), None),
            (at("ORG#o1#PAYMENT#p1", "2026-11-30"), window),
            (at("ORG#o1#PAYMENT#p1", "2026-12-03"), window),
            ("A".repeat(5000), None),
        ] {
            assert!(
                decode_cursor(Index::States, LIST, range, &raw).is_none(),
                "{raw}"
            );
        }
        assert!(
            decode_cursor(Index::States, LIST, window, &at("ORG#o1#P", "2026-12-01T5")).is_some()
        );
    }

    #[test]
    fn the_admins_list_of_organisations_takes_any_organisations_item() {
        assert_eq!(organisation_prefix("ORGS"), None);
        assert_eq!(organisation_prefix("ORG#o1#REVIEW#open"), Some("ORG#o1#"));
    }
}
