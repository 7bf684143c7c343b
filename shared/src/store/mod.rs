//! The one DynamoDB table: string `pk`/`sk`, a generic `gsi1` for every list (sparse: only items
//! that belong to a list carry `gsi1pk`), `kind` and `org` on every item.
//!
//! The client is private: every write is one of the shapes below (put-if-new, a transaction of
//! such steps, a conditional update), so "condition failed" is decided here and nowhere else.

pub mod also;
pub mod counters;
pub mod item;
pub mod lists;
mod read;
pub mod request;
pub mod schema;
pub mod spent;
pub mod stream_counts;
mod transact;
mod update;
pub mod write;
mod written;

pub use transact::{Step, Transacted};
pub use update::{Cond, Update};
pub use write::{Answer, Decision, Mismatch, Plan, PutOnce, Seen, Written};

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
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
    /// Sealing or opening a record's secrets failed (or no key is configured to do it).
    #[error("secrets could not be sealed or opened")]
    Vault(#[from] crate::vault::VaultError),
}

impl StoreError {
    pub(crate) fn sdk<E, R>(err: aws_sdk_dynamodb::error::SdkError<E, R>) -> Self
    where
        aws_sdk_dynamodb::Error: From<aws_sdk_dynamodb::error::SdkError<E, R>>,
    {
        Self::Dynamo(Box::new(err.into()))
    }

    /// DynamoDB's error code, when DynamoDB refused the call.
    pub fn code(&self) -> Option<&str> {
        use aws_sdk_dynamodb::error::ProvideErrorMetadata;
        match self {
            Self::Dynamo(e) => e.code(),
            _ => None,
        }
    }

    /// Whether a later attempt may succeed: throttling, a conflict, a timeout or a service
    /// fault. A malformed item or a request DynamoDB refuses as invalid is our own defect.
    pub fn is_retryable(&self) -> bool {
        use aws_sdk_dynamodb::error::ProvideErrorMetadata;
        match self {
            Self::Malformed { .. } => false,
            Self::Contended { .. } => true,
            Self::Vault(e) => e.is_retryable(),
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
    /// Seals the secret fields of records (integrations) before they are written and opens them
    /// when read; a store without one refuses to write or read a secret.
    vault: Option<crate::vault::Vault>,
    /// What every request of `client` consumed (`aws::meter`).
    meter: crate::aws::Meter,
}

/// The sort key every item uses: one item per partition, named by the key.
pub const SK: &str = "item";

/// How long items that are only worth keeping a while live (the table's TTL, `expires_at`;
/// DynamoDB removes them within days after). Events, payments, review items and ledger lines
/// never expire: they are the record.
///
/// An operator action's `Idempotency-Key` record: a repeat comes within minutes, a week is
/// ample, and the action itself is safe twice over.
pub const REQUEST_KEPT: chrono::Duration = chrono::Duration::days(7);
/// A status that came before its outgoing message: the send is in flight and stores the
/// message within seconds, or never.
pub const EARLY_STATUS_KEPT: chrono::Duration = chrono::Duration::days(2);
/// The raw body of a delivery that could not be read: kept for the person its review item
/// asks, for a quarter.
pub const RAW_BODY_KEPT: chrono::Duration = chrono::Duration::days(90);
pub const GSI: &str = "gsi1";
/// The second index: the operator's lists of events by kind, review items and runs by state.
pub const GSI2: &str = "gsi2";
/// The third index: lists of keys alone (the waiting marks, an organisation's invoices).
pub const GSI3: &str = "gsi3";

/// The table's secondary indexes, each sparse: `Lists` (`gsi1`, every list the API reads
/// whole), `States` (`gsi2`, what the operator counts; see `ops`), both of whole items, and
/// `Keys` (`gsi3`: the waiting marks of each kind, an organisation's invoices), of keys alone:
/// a mark's settle or an invoice's payment changes what it holds, not its keys, so it writes
/// no index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Index {
    Lists,
    States,
    Keys,
}

impl Index {
    pub fn name(self) -> &'static str {
        match self {
            Self::Lists => GSI,
            Self::States => GSI2,
            Self::Keys => GSI3,
        }
    }

    pub fn pk(self) -> &'static str {
        match self {
            Self::Lists => "gsi1pk",
            Self::States => "gsi2pk",
            Self::Keys => "gsi3pk",
        }
    }

    pub fn sk(self) -> &'static str {
        match self {
            Self::Lists => "gsi1sk",
            Self::States => "gsi2sk",
            Self::Keys => "gsi3sk",
        }
    }
}

/// Why a put under a cap wrote nothing (`UnderCap`).
#[derive(Debug, thiserror::Error)]
pub enum CapError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The count is at its cap.
    #[error("the count is at its cap")]
    Full,
    /// What the put must be alone to be (its `unique` marker) is another's already.
    #[error("it is another's already")]
    Taken,
}

/// A put under a cap, as a decision. It writes at once (no read): the put and the count's
/// increment held under `max` in one transaction. A taken key hands its holder over (a repeat);
/// a refused count is read and decided again, `Full` when the count is at the cap.
pub struct UnderCap {
    item: Item,
    /// The counter's key, its kind and its organisation.
    counter: (String, String, String),
    max: u64,
    /// A marker put with it whose key must be free: what the item may be alone (a bank
    /// account of a token); held, it is refused `CapError::Taken`.
    unique: Option<Item>,
}

impl UnderCap {
    /// `item` put if its key is new, with one more on the `count` of the item at `counter`
    /// (its key, kind and organisation), held under `max`.
    pub fn new(item: Item, (counter, kind, org): (&str, &str, &str), max: u64) -> Self {
        Self {
            item,
            counter: (counter.to_owned(), kind.to_owned(), org.to_owned()),
            max,
            unique: None,
        }
    }

    /// The same put, holding `marker`'s key too: put in the same transaction while it is free.
    pub fn alone_as(self, marker: Item) -> Self {
        Self {
            unique: Some(marker),
            ..self
        }
    }
}

impl Decision for UnderCap {
    /// The item under its key: the one put now, or the one a repeat found there.
    type Out = Item;
    type Error = CapError;

    fn keys(&self) -> Vec<String> {
        let pk = |item: &Item| {
            let pk = item.get("pk").and_then(|v| v.as_s().ok());
            pk.cloned().unwrap_or_default()
        };
        let mut keys = vec![pk(&self.item), self.counter.0.to_owned()];
        keys.extend(self.unique.as_ref().map(pk));
        keys
    }

    fn reads(&self) -> bool {
        false
    }

    fn decide(
        &self,
        seen: &Seen,
        _now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Plan<Item>, CapError> {
        if let Some(stored) = seen.stored() {
            return Ok(Plan::Done(Written::Repeat {
                stored: stored.clone(),
            }));
        }
        // A counter there is read as stored: one without a count holds no cap, and says so.
        let count = match seen.get(1) {
            Some(c) => item::Read::u64_of(c, "count")?,
            None => 0,
        };
        if count >= self.max {
            return Err(CapError::Full);
        }
        if self.unique.is_some() && seen.get(2).is_some() {
            return Err(CapError::Taken);
        }
        let (counter, kind, org) = &self.counter;
        let counted = Update::new()
            .set("kind", item::s(kind))
            .set("org", item::s(org))
            .add("count", item::n(1))
            .when(Cond::Any(vec![
                Cond::Missing,
                Cond::Before("count".into(), item::n(self.max)),
            ]));
        let mut steps = vec![
            Step::PutNew(self.item.clone()),
            Step::Update {
                pk: counter.to_owned(),
                update: counted,
            },
        ];
        steps.extend(self.unique.iter().cloned().map(Step::PutNew));
        Ok(Plan::Write {
            steps,
            out: self.item.clone(),
        })
    }
}

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

impl Store {
    /// The store of `table` through `client`, every request of which is metered from now on.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        let meter = crate::aws::Meter::default();
        Self {
            client: meter.on(&client),
            table: table.into(),
            vault: None,
            meter,
        }
    }

    /// The calls and units this store's requests consumed since the last take.
    pub fn metered(&self) -> (u64, crate::aws::Units) {
        self.meter.take()
    }

    /// This store, sealing secrets with `vault`.
    pub fn with_vault(mut self, vault: crate::vault::Vault) -> Self {
        self.vault = Some(vault);
        self
    }

    /// The vault, or the error that says none is configured.
    pub fn vault(&self) -> Result<&crate::vault::Vault, StoreError> {
        self.vault
            .as_ref()
            .ok_or(StoreError::Vault(crate::vault::VaultError::NotConfigured))
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

    /// A count kept under a cap from now on (`UnderCap`), begun at what `listed` counts when
    /// it has none yet (an organisation from before it was kept): one read, and one put the
    /// first time (of two at once, one; the other finds it).
    pub async fn begin_count<F>(
        &self,
        (counter, kind, org): (&str, &str, &str),
        listed: F,
    ) -> Result<(), StoreError>
    where
        F: std::future::Future<Output = Result<usize, StoreError>>,
    {
        if self.get(counter).await?.is_some() {
            return Ok(());
        }
        let count = listed.await?;
        let item = item::Builder::new(counter, kind, org)
            .num("count", count)
            .build();
        self.put_new(item).await.map(drop)
    }

    /// Puts an item only if its key is new; a taken key returns the item that holds it, in the
    /// same call.
    pub async fn put_new(&self, item: Item) -> Result<PutNew, StoreError> {
        let item_pk = match item.get("pk") {
            Some(AttributeValue::S(pk)) => Some(pk.clone()),
            _ => None,
        };
        // A counted item (an open review item; a held event, with its waiting mark) is put
        // with what comes with it.
        if let Some(steps) = counters::with_counts(&[Step::PutNew(item.clone())]) {
            let pk = item_pk.unwrap_or_default();
            return match self.transact_counted(steps).await? {
                Transacted::Done => Ok(PutNew::Created),
                Transacted::Refused { existing, .. } => Ok(PutNew::Existing(match existing {
                    Some(holder) => holder,
                    None => self.get(&pk).await?.unwrap_or_default(),
                })),
                Transacted::Contended => Err(StoreError::Contended { pk }),
            };
        }
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

    /// Deletes the item at `pk` (nothing when there is none): for marks whose work is done (a
    /// held event sent on), never for events.
    pub async fn delete(&self, pk: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(pk)))
            .send()
            .await
            .map_err(StoreError::sdk)?;
        Ok(())
    }

    /// Deletes the item at `pk` while it is there (one conditional `DeleteItem`): `true` when
    /// this call deleted it, `false` when it was gone.
    pub async fn delete_present(&self, pk: &str) -> Result<bool, StoreError> {
        self.delete_when(pk, "attribute_exists(pk)", None).await
    }

    /// Deletes the item at `pk` while it is there and holds no `set` (a set emptied by its last
    /// member's removal is gone): `true` when this call deleted it, `false` when it was gone or
    /// a member was added to it meanwhile.
    pub async fn delete_if_empty(&self, pk: &str, set: &str) -> Result<bool, StoreError> {
        let condition = "attribute_exists(pk) AND attribute_not_exists(#set)";
        self.delete_when(pk, condition, Some(set)).await
    }

    async fn delete_when(
        &self,
        pk: &str,
        condition: &str,
        set: Option<&str>,
    ) -> Result<bool, StoreError> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(pk)))
            .condition_expression(condition)
            .set_expression_attribute_names(
                set.map(|set| HashMap::from([("#set".to_owned(), set.to_owned())])),
            )
            .send()
            .await;
        match deleted {
            Ok(_) => Ok(true),
            Err(e) => match StoreError::sdk(e) {
                refused if refused.code() == Some("ConditionalCheckFailedException") => Ok(false),
                other => Err(other),
            },
        }
    }

    /// `update_if`, answering the item as it is after the update; `None` when the condition did
    /// not hold.
    pub async fn update_returning(
        &self,
        pk: &str,
        update: &Update,
    ) -> Result<Option<Item>, StoreError> {
        self.send_update(pk, update, aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .await
    }

    /// Applies `update` to the item at `pk` if its condition holds; `Ok(false)` when it did not.
    pub async fn update_if(&self, pk: &str, update: &Update) -> Result<bool, StoreError> {
        let updated = self
            .send_update(pk, update, aws_sdk_dynamodb::types::ReturnValue::None)
            .await?;
        Ok(updated.is_some())
    }

    /// One conditional `UpdateItem`: the attributes `returning` asks for, or `None` when the
    /// condition did not hold.
    async fn send_update(
        &self,
        pk: &str,
        update: &Update,
        returning: aws_sdk_dynamodb::types::ReturnValue,
    ) -> Result<Option<Item>, StoreError> {
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
            .return_values(returning)
            .send()
            .await;
        match result {
            Ok(out) => Ok(Some(out.attributes.unwrap_or_default())),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(None)
            }
            Err(err) => Err(StoreError::sdk(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_put_under_a_cap_is_new_below_it_a_repeat_when_taken_and_full_at_it() {
        let item =
            item::Builder::new("ORG#o0123456789ab#MEMBER#u1", "member", "o0123456789ab").build();
        let under = UnderCap::new(
            item.clone(),
            (
                "ORG#o0123456789ab#MEMBER_COUNT",
                "member_count",
                "o0123456789ab",
            ),
            2,
        );
        let counted = |count: u64| {
            let mut c = Item::new();
            c.insert("count".into(), item::n(count));
            Some(c)
        };
        let now = chrono::Utc::now();
        let plan = under.decide(&Seen::of(vec![None, None]), now).unwrap();
        assert!(matches!(plan, Plan::Write { ref steps, .. } if steps.len() == 2));
        let below = under
            .decide(&Seen::of(vec![None, counted(1)]), now)
            .unwrap();
        assert!(matches!(below, Plan::Write { .. }));
        let taken = under
            .decide(&Seen::of(vec![Some(item), counted(2)]), now)
            .unwrap();
        assert!(matches!(taken, Plan::Done(Written::Repeat { .. })));
        let full = under.decide(&Seen::of(vec![None, counted(2)]), now);
        assert!(matches!(full, Err(CapError::Full)));
    }
}
