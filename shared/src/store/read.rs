//! Reads: several items in one call, lists on the generic index, and the whole table for tools.

use super::{Index, Item, Store, StoreError, GSI};
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use std::collections::HashMap;

/// Keys one `BatchGetItem` may ask for.
const BATCH_GET_MAX: usize = 100;

impl Store {
    /// Strongly consistent reads (`BatchGetItem`, one call per 100 keys), in the order of `pks`.
    /// Keys DynamoDB leaves unprocessed are asked for again.
    pub async fn get_many(&self, pks: &[String]) -> Result<Vec<Option<Item>>, StoreError> {
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
                .consistent_read(true)
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
            Some(raw) => {
                Some(
                    decode_cursor(index, list, raw).ok_or_else(|| StoreError::Malformed {
                        pk: list.to_owned(),
                        detail: "the cursor is not one this list gave".into(),
                    })?,
                )
            }
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
            .map_err(StoreError::sdk)?;
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

fn encode_cursor(index: Index, item: &Item) -> String {
    use base64::Engine;
    let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    let position = serde_json::json!({"pk": text("pk"), "sk": text(index.sk())});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(position.to_string())
}

/// The `ExclusiveStartKey` a cursor stands for, on this list only.
fn decode_cursor(index: Index, list: &str, raw: &str) -> Option<Item> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .ok()?;
    let position: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let pk = position.get("pk")?.as_str()?;
    let sk = position.get("sk")?.as_str()?;
    let mut key = Store::key(pk);
    key.insert(index.pk().into(), AttributeValue::S(list.to_owned()));
    key.insert(index.sk().into(), AttributeValue::S(sk.to_owned()));
    Some(key)
}
