//! An inbox line: one per (message, direction), however often and in whatever order its events
//! arrive. An outgoing line's status only moves forward, and the first final status wins.

use super::{derived_id, inbox_list, message_part};
use crate::ids::OrgId;
use crate::messages::Direction;
use crate::store::item::{malformed, Builder, Read};
use crate::store::{Item, Store, StoreError};
use crate::time;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub const KIND: &str = "inbox_row";

/// `sent` → `delivered` or `failed` (outgoing); `received` (incoming). `delivered` and `failed`
/// are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InboxStatus {
    Sent,
    Delivered,
    Failed,
    Received,
}

impl InboxStatus {
    pub fn is_final(self) -> bool {
        matches!(self, Self::Delivered | Self::Failed)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboxLine {
    pub org: OrgId,
    pub inbox_id: String,
    pub integration_id: String,
    pub message_id: String,
    pub direction: Direction,
    pub from: String,
    pub to: String,
    pub text: String,
    pub segments: Option<u32>,
    pub status: InboxStatus,
    /// Every event that wrote to the line (made it, moved its status, booked its debit).
    pub event_ids: Vec<String>,
    /// The `sms.sent` event that booked the outgoing message, once it came.
    pub sent_event: Option<String>,
    pub at: DateTime<Utc>,
}

pub fn inbox_pk(
    org: &OrgId,
    integration_id: &str,
    message_id: &str,
    direction: Direction,
) -> String {
    let direction = crate::store::item::tag_name(&direction);
    org.pk(&format!(
        "INBOX#{}#{direction}",
        message_part(integration_id, message_id)
    ))
}

/// The id the line under `pk` has.
pub fn inbox_id(pk: &str) -> String {
    derived_id("inb_", pk)
}

/// The attribute value that adds one event id to a line's set.
pub(crate) fn event_set(event_id: &str) -> AttributeValue {
    AttributeValue::Ss(vec![event_id.to_owned()])
}

impl InboxLine {
    pub fn pk(&self) -> String {
        inbox_pk(
            &self.org,
            &self.integration_id,
            &self.message_id,
            self.direction,
        )
    }

    pub fn to_item(&self) -> Item {
        let mut builder = Builder::new(&self.pk(), KIND, self.org.as_str())
            .str("inbox_id", &self.inbox_id)
            .str("integration_id", &self.integration_id)
            .str("message_id", &self.message_id)
            .tag("direction", &self.direction)
            .str("from", &self.from)
            .str("to", &self.to)
            .str("text", &self.text)
            .opt_num("segments", self.segments)
            .tag("status", &self.status)
            .opt_str("sent_event", self.sent_event.clone())
            .time("at", self.at)
            .list(
                &inbox_list(&self.org),
                &format!("{}#{}", time::format(self.at), self.inbox_id),
            );
        if !self.event_ids.is_empty() {
            builder = builder.set("event_ids", AttributeValue::Ss(self.event_ids.clone()));
        }
        builder.build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let mut event_ids = match item.get("event_ids") {
            Some(AttributeValue::Ss(ids)) => ids.clone(),
            _ => Vec::new(),
        };
        event_ids.sort();
        Ok(Self {
            org: OrgId::parse(item.str_of("org")?).map_err(|_| malformed(item, "org"))?,
            inbox_id: item.str_of("inbox_id")?.to_owned(),
            integration_id: item.str_of("integration_id")?.to_owned(),
            message_id: item.str_of("message_id")?.to_owned(),
            direction: item.tag_of("direction")?,
            from: item.str_of("from")?.to_owned(),
            to: item.str_of("to")?.to_owned(),
            text: item.str_of("text")?.to_owned(),
            segments: item
                .get("segments")
                .map(|_| item.u64_of("segments").map(|n| n as u32))
                .transpose()?,
            status: item.tag_of("status")?,
            event_ids,
            sent_event: item.opt_str("sent_event").map(str::to_owned),
            at: item.time_of("at")?,
        })
    }

    /// The line as the inbox shows it.
    pub fn view(&self) -> InboxView {
        InboxView {
            inbox_id: self.inbox_id.clone(),
            message_id: self.message_id.clone(),
            direction: self.direction,
            from: self.from.clone(),
            to: self.to.clone(),
            text: self.text.clone(),
            status: self.status,
            event_ids: self.event_ids.clone(),
            at: time::format(self.at),
            integration_id: self.integration_id.clone(),
            segments: self.segments,
        }
    }
}

/// An SMS in the inbox, one per carrier message (`InboxItem`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = InboxItem)]
pub struct InboxView {
    pub inbox_id: String,
    pub message_id: String,
    pub direction: Direction,
    pub from: String,
    pub to: String,
    pub text: String,
    pub status: InboxStatus,
    /// Every event that wrote to the line.
    pub event_ids: Vec<String>,
    #[schema(format = DateTime)]
    pub at: String,
    pub integration_id: String,
    pub segments: Option<u32>,
}

/// The organisation's inbox, newest first, a page at a time.
pub async fn page(
    store: &Store,
    org: &OrgId,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<InboxLine>, Option<String>), StoreError> {
    let (items, next) = store.page(&inbox_list(org), true, limit, cursor).await?;
    let lines = items
        .iter()
        .map(InboxLine::from_item)
        .collect::<Result<_, _>>()?;
    Ok((lines, next))
}
