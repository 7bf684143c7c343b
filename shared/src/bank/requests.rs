//! What the import queue carries: the schedule's and the API's statement imports, and the steps
//! of a large CSV file.

use crate::ids::{IntegrationId, OrgId};
use crate::store::item::Read;
use crate::store::{Store, StoreError};
use chrono::{DateTime, Utc};

/// Where requests go: statements and turns on the import queue, a large CSV file's steps on a
/// queue of their own (`files_queue_url`), so a file of 100,000 rows delays no organisation's
/// statement and a backlog of statements delays no file. Both are taken by the import function.
#[derive(Clone, Debug)]
pub struct Requests {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub files_queue_url: String,
}

/// A request of the import queue: a monobank integration's statement ("import now", or the
/// schedule's), or the next steps of a large CSV file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Statement {
        integration_id: IntegrationId,
    },
    File {
        org: OrgId,
        import_id: String,
    },
    /// The schedule's turn of one organisation: its monobank integrations, one after another
    /// from where its last turn stopped, so one organisation's many integrations are one message
    /// among the others' and delay nobody else's import.
    Turn {
        org: OrgId,
    },
}

impl Request {
    pub fn to_body(&self) -> String {
        match self {
            Self::Statement { integration_id } => {
                serde_json::json!({"integration_id": integration_id.to_string()})
            }
            Self::File { org, import_id } => {
                serde_json::json!({"org": org.as_str(), "import_id": import_id})
            }
            Self::Turn { org } => serde_json::json!({"turn_of": org.as_str()}),
        }
        .to_string()
    }

    /// A request's body; `None` when it names no integration and no file import.
    pub fn from_body(body: &str) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        if let Some(raw) = value.get("integration_id").and_then(|v| v.as_str()) {
            return Some(Self::Statement {
                integration_id: IntegrationId::parse(raw).ok()?,
            });
        }
        if let Some(raw) = value.get("turn_of").and_then(|v| v.as_str()) {
            return Some(Self::Turn {
                org: OrgId::parse(raw).ok()?,
            });
        }
        Some(Self::File {
            org: OrgId::parse(value.get("org")?.as_str()?).ok()?,
            import_id: value.get("import_id")?.as_str()?.to_owned(),
        })
    }
}

impl Requests {
    /// The queue `request` goes to.
    pub fn queue_of(&self, request: &Request) -> &str {
        match request {
            Request::File { .. } => &self.files_queue_url,
            Request::Statement { .. } | Request::Turn { .. } => &self.queue_url,
        }
    }

    pub async fn send(&self, request: &Request) -> Result<(), String> {
        let body = request.to_body();
        self.sqs
            .send_message()
            .queue_url(self.queue_of(request))
            .message_body(body)
            .send()
            .await
            .map(drop)
            .map_err(|e| format!("{}", aws_sdk_sqs::error::DisplayErrorContext(e)))
    }
}

impl Requests {
    /// One turn per organisation, ten to a `SendMessageBatch`: the schedule's fan-out, so each
    /// organisation's imports are an invocation of their own whatever their number. Any entry
    /// refused is an error (the schedule runs again; a turn sent twice meets each lease).
    pub async fn send_turns(&self, orgs: &[OrgId]) -> Result<(), String> {
        use aws_sdk_sqs::types::SendMessageBatchRequestEntry as Entry;
        for chunk in orgs.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, org)| {
                    let body = Request::Turn { org: org.clone() }.to_body();
                    Entry::builder()
                        .id(i.to_string())
                        .message_body(body)
                        .build()
                        .expect("id and body are set")
                })
                .collect();
            let out = self
                .sqs
                .send_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| format!("{}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
            if !out.failed.is_empty() {
                return Err(format!(
                    "{} of {} requests refused",
                    out.failed.len(),
                    chunk.len()
                ));
            }
        }
        Ok(())
    }
}

/// An organisation's monobank integrations, in id order, from just after `after` (a turn's
/// place), at most `limit`: a range of the import list, whose positions are the ids.
pub async fn of_org(
    store: &Store,
    org: &OrgId,
    after: Option<&str>,
    limit: i32,
) -> Result<Vec<IntegrationId>, StoreError> {
    let low = match after {
        Some(after) => format!("{after}\u{1}"),
        None => format!("{org}_"),
    };
    let high = format!("{org}_\u{7f}");
    let (items, _) = store
        .page_in(
            crate::store::Index::Lists,
            super::providers::IMPORTS_LIST,
            Some((&low, &high)),
            false,
            limit,
            None,
        )
        .await?;
    Ok(items
        .iter()
        .filter_map(|item| IntegrationId::parse(item.opt_str("id")?).ok())
        .collect())
}

/// Integrations the schedule reads a page.
pub const SCHEDULED_PAGE: i32 = 500;

/// One page of every monobank bank integration, whatever its organisation (each with when it
/// was made), and the cursor of the next: what a scheduled run walks, page by page.
pub async fn scheduled(
    store: &Store,
    cursor: Option<&str>,
) -> Result<(Vec<(IntegrationId, Option<DateTime<Utc>>)>, Option<String>), StoreError> {
    let (items, next) = store
        .page(
            super::providers::IMPORTS_LIST,
            false,
            SCHEDULED_PAGE,
            cursor,
        )
        .await?;
    let ids = items
        .iter()
        .filter_map(|item| {
            let id = IntegrationId::parse(item.opt_str("id")?).ok()?;
            Some((id, item.opt_time("created_at")))
        })
        .collect();
    Ok((ids, next))
}
