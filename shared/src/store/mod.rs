//! The one DynamoDB table: string `pk`/`sk`, a generic `gsi1` for every list (sparse: only items
//! that belong to a list carry `gsi1pk`), `kind` and `org` on every item.
//!
//! The client is private: every write is one of the shapes below (put-if-new, a transaction of
//! such steps, a conditional update), so "condition failed" is decided here and nowhere else.

pub mod item;
pub mod schema;
mod update;

pub use update::{Cond, Update};

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, KeysAndAttributes, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem,
};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;
use thiserror::Error;

pub type Item = HashMap<String, AttributeValue>;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("DynamoDB call failed")]
    Dynamo(#[source] Box<aws_sdk_dynamodb::Error>),
    #[error("stored item {pk} is malformed: {detail}")]
    Malformed { pk: String, detail: String },
    /// Another write to the same item was under way (or a freshly generated key was taken):
    /// a retry reads again.
    #[error("item {pk} was contended; retry")]
    Contended { pk: String },
}

impl StoreError {
    pub(crate) fn sdk<E, R>(err: aws_sdk_dynamodb::error::SdkError<E, R>) -> Self
    where
        aws_sdk_dynamodb::Error: From<aws_sdk_dynamodb::error::SdkError<E, R>>,
    {
        Self::Dynamo(Box::new(err.into()))
    }

    /// Whether a later attempt may succeed: throttling, a conflict, a timeout or a service
    /// fault. A malformed item or a request DynamoDB refuses as invalid is our own defect.
    pub fn is_retryable(&self) -> bool {
        use aws_sdk_dynamodb::error::ProvideErrorMetadata;
        match self {
            Self::Malformed { .. } => false,
            Self::Contended { .. } => true,
            Self::Dynamo(e) => !matches!(
                e.code(),
                Some(
                    "ValidationException"
                        | "ResourceNotFoundException"
                        | "ConditionalCheckFailedException"
                        | "ItemCollectionSizeLimitExceededException"
                        | "AccessDeniedException"
                        | "SerializationException"
                )
            ),
        }
    }
}

/// The table and the client: the only handle code needs to read or write business records.
#[derive(Clone, Debug)]
pub struct Store {
    client: Client,
    table: String,
}

/// The sort key every item uses: one item per partition, named by the key.
pub const SK: &str = "item";
pub const GSI: &str = "gsi1";

/// What a put-if-new found.
#[derive(Clone, Debug, PartialEq)]
pub enum PutNew {
    Created,
    /// The key was taken: the item stored under it (a duplicate, acknowledged as success).
    Existing(Item),
}

impl PutNew {
    pub fn created(&self) -> bool {
        matches!(self, Self::Created)
    }
}

/// One step of a transaction.
#[derive(Clone, Debug)]
pub enum Step {
    /// Put the item only if its key is new.
    PutNew(Item),
    /// Update an existing item under a condition.
    Update { pk: String, update: Update },
    /// Hold the transaction to what was read: the item is (still) absent.
    Absent(String),
    /// Hold the transaction to what was read: the item is (still) there.
    Present(String),
}

/// How a transaction ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Transacted {
    Done,
    /// The condition of step `step` failed; for a put, the item that holds the key.
    Refused {
        step: usize,
        existing: Option<Item>,
    },
    /// Another transaction touched the same items: read again and retry.
    Contended,
}

impl Store {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Connects to the configured table (the local emulator when an endpoint URL is set).
    pub async fn connect(table: &str, endpoint_url: Option<&str>) -> Self {
        Self::new(crate::aws::dynamodb(endpoint_url).await, table)
    }

    pub fn key(pk: &str) -> Item {
        HashMap::from([
            ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
            ("sk".to_owned(), AttributeValue::S(SK.to_owned())),
        ])
    }

    /// A strongly consistent read of one item.
    pub async fn get(&self, pk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(pk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::sdk)?;
        Ok(out.item)
    }

    /// Strongly consistent reads of up to 100 items in one call (`BatchGetItem`), in the order
    /// of `pks`. Keys DynamoDB leaves unprocessed are asked for again.
    pub async fn get_many(&self, pks: &[String]) -> Result<Vec<Option<Item>>, StoreError> {
        let mut found: HashMap<String, Item> = HashMap::new();
        let mut wanted: Vec<Item> = pks.iter().map(|pk| Self::key(pk)).collect();
        wanted.dedup();
        while !wanted.is_empty() {
            let keys = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut wanted)))
                .consistent_read(true)
                .build()
                .expect("keys are set");
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, keys)
                .send()
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
            }
        }
        Ok(pks.iter().map(|pk| found.get(pk).cloned()).collect())
    }

    /// Puts an item only if its key is new; a taken key returns the item that holds it, in the
    /// same call.
    pub async fn put_new(&self, item: Item) -> Result<PutNew, StoreError> {
        let item_pk = match item.get("pk") {
            Some(AttributeValue::S(pk)) => Some(pk.clone()),
            _ => None,
        };
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(PutNew::Created),
            Err(err) => match err.as_service_error() {
                Some(e) if e.is_conditional_check_failed_exception() => {
                    let existing = match e {
                        aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => c.item.clone(),
                        _ => None,
                    };
                    // DynamoDB returns the holder with the refusal; an emulator that does not
                    // is asked once more.
                    match existing.filter(|item| !item.is_empty()) {
                        Some(item) => Ok(PutNew::Existing(item)),
                        None => {
                            let pk = item_pk.unwrap_or_default();
                            Ok(PutNew::Existing(self.get(&pk).await?.unwrap_or_default()))
                        }
                    }
                }
                _ => Err(StoreError::sdk(err)),
            },
        }
    }

    /// Puts an item whatever is stored under its key: for settings that are replaced as a whole
    /// (an integration's rotated secret), never for events.
    pub async fn replace(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(StoreError::sdk)?;
        Ok(())
    }

    /// Applies `update` to the item at `pk` if its condition holds; `Ok(false)` when it did not.
    pub async fn update_if(&self, pk: &str, update: &Update) -> Result<bool, StoreError> {
        let expr = update.expression();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(pk)))
            .update_expression(expr.update)
            .set_condition_expression(expr.condition)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(err) => Err(StoreError::sdk(err)),
        }
    }

    /// Adds one to the number `attr` of the item at `pk` (creating it with `fields`) and returns
    /// the new value.
    pub async fn increment(&self, pk: &str, attr: &str, fields: Item) -> Result<u64, StoreError> {
        let mut update = Update::new().add(attr, item::n(1));
        for (name, value) in fields {
            update = update.set(&name, value);
        }
        let expr = update.expression();
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(pk)))
            .update_expression(expr.update)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(StoreError::sdk)?;
        use item::Read;
        out.attributes.unwrap_or_default().u64_of(attr)
    }

    /// Runs the steps as one `TransactWriteItems`: all happen or none.
    pub async fn transact(&self, steps: Vec<Step>) -> Result<Transacted, StoreError> {
        let items = steps.into_iter().map(|s| self.step(s)).collect();
        let sent = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError as E;
        let err = match sent {
            Ok(_) => return Ok(Transacted::Done),
            Err(err) => err,
        };
        match err.as_service_error() {
            Some(E::TransactionCanceledException(cancel)) => {
                let refused = cancel
                    .cancellation_reasons()
                    .iter()
                    .position(|r| r.code() == Some("ConditionalCheckFailed"));
                Ok(match refused {
                    Some(step) => Transacted::Refused {
                        step,
                        existing: cancel.cancellation_reasons()[step].item().cloned(),
                    },
                    None => Transacted::Contended,
                })
            }
            Some(E::TransactionInProgressException(_)) => Ok(Transacted::Contended),
            _ => Err(StoreError::sdk(err)),
        }
    }

    fn step(&self, step: Step) -> TransactWriteItem {
        let check = |pk: String, condition: &str| {
            ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(Self::key(&pk)))
                .condition_expression(condition)
                .build()
                .expect("table, key and condition are set")
        };
        let builder = TransactWriteItem::builder();
        match step {
            Step::PutNew(item) => builder.put(
                Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression("attribute_not_exists(pk)")
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .build()
                    .expect("table and item are set"),
            ),
            Step::Update { pk, update } => builder.update(update.transact_step(&self.table, &pk)),
            Step::Absent(pk) => builder.condition_check(check(pk, "attribute_not_exists(pk)")),
            Step::Present(pk) => builder.condition_check(check(pk, "attribute_exists(pk)")),
        }
        .build()
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
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(GSI)
                .key_condition_expression("gsi1pk = :p")
                .expression_attribute_values(":p", AttributeValue::S(gsi1pk.to_owned()))
                .scan_index_forward(!newest_first)
                .limit(limit)
                .set_exclusive_start_key(start)
                .send()
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

    /// Every item in the table (a consistent scan): for tests and operator tools, never on a
    /// request path.
    pub async fn scan_all(&self) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
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
