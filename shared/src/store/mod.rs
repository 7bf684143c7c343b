//! The one DynamoDB table: string `pk`/`sk`, a generic `gsi1` for every list (sparse: only items
//! that belong to a list carry `gsi1pk`), `kind` and `org` on every item.

pub mod item;
pub mod schema;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
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
}

impl StoreError {
    pub fn sdk<E, R>(err: aws_sdk_dynamodb::error::SdkError<E, R>) -> Self
    where
        aws_sdk_dynamodb::Error: From<aws_sdk_dynamodb::error::SdkError<E, R>>,
    {
        Self::Dynamo(Box::new(err.into()))
    }
}

/// The table and the client: the only handle code needs to read or write business records.
#[derive(Clone, Debug)]
pub struct Store {
    pub client: Client,
    pub table: String,
}

/// The sort key every item uses: one item per partition, named by the key.
pub const SK: &str = "item";
pub const GSI: &str = "gsi1";

impl Store {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// Connects to the configured table (the local emulator when an endpoint URL is set).
    pub async fn from_config(config: &crate::config::Config) -> Self {
        let client = crate::aws::dynamodb(config.endpoint_url.as_deref()).await;
        Self::new(client, config.table.clone())
    }

    /// A transaction step that puts an item only if its key is new.
    pub fn put_new_step(&self, item: Item) -> TransactWriteItem {
        TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression("attribute_not_exists(pk)")
                    .build()
                    .expect("table and item are set"),
            )
            .build()
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

    /// Puts an item only if its key is new. `Ok(false)` means the key already existed: a
    /// duplicate, which callers acknowledge as success.
    pub async fn put_new(&self, item: Item) -> Result<bool, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
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
}
