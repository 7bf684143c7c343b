//! The statement import: monobank's `GET /personal/statement/{account}/{from}/{to}` for one bank
//! integration, within monobank's limits, and resumable at any point.
//!
//! - **One call per interval per integration** (60 s; the local and test stages may set less): a
//!   lease item is moved forward with a conditional write before every call, so two overlapping
//!   runs never both call, and a run that finds it held answers "running".
//! - **A cursor per integration**, moved only after the rows before it are stored: `synced_until`
//!   (every row before it is stored) and, while a window is read page by page (500 rows a page,
//!   newest first), the next page's `to`. A run that dies anywhere loses nothing: the next one
//!   reads again from the cursor, and rows read twice are duplicates.
//! - **Windows** of at most 31 days + 1 hour; a first import reads back the whole 31 days; each
//!   later run re-reads a short overlap for rows that arrive late.
//! - A 429 or a 5xx from monobank ends the run for the integration with the cursor unmoved.

use super::monobank::{page, RANGE_MAX_SECS};
use super::providers::BankSettings;
pub use super::requests::{scheduled, Requests};
use super::UPLOAD_CONCURRENCY as CONCURRENCY;
use super::{store_rows, Arrival, BankTx};
use crate::egress::Apis;
use crate::integrations::Integration;
use crate::review::{Kind, Reason};
use crate::store::item::{n, s, Builder, Read};
use crate::store::{Cond, Store, StoreError, Update};
use chrono::{DateTime, Utc};
use secrecy::ExposeSecret;
use std::time::Duration;

/// How far back each later run reads again, for rows monobank adds late.
pub const OVERLAP_SECS: i64 = 600;

/// How an import is held to monobank's limits.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Between two statement calls of one integration (monobank: 60 s).
    pub interval: Duration,
    /// The longest a run waits for the next window before it leaves the rest to the next run.
    pub max_wait: Duration,
    /// Pages one run reads at most.
    pub max_pages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(60),
            max_wait: Duration::ZERO,
            max_pages: 20,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub calls: usize,
    pub rows: usize,
    pub imported: usize,
    /// Another run holds the lease, or the interval has not passed.
    pub running: bool,
    /// monobank answered 429 or 5xx, or could not be reached: the cursor is unmoved.
    pub stopped: Option<String>,
    /// The window is read to its end: the cursor is at its `to`.
    pub caught_up: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("not a monobank bank integration")]
    NotMonobank,
}

fn cursor_pk(integration: &Integration) -> String {
    integration
        .org()
        .pk(&format!("BANK_CURSOR#{}", integration.id.id))
}

/// monobank's one call a minute is per token: the lease is the token's (by its digest), shared
/// by every integration that carries it (two accounts of one client, say).
fn lease_pk(integration: &Integration) -> String {
    let digest = match &integration.settings {
        crate::integrations::Settings::Bank(BankSettings::Monobank { token, .. }) => {
            super::providers::token_digest(token)
        }
        _ => integration.id.id.clone(),
    };
    lease_of(&digest)
}

fn lease_of(token_digest: &str) -> String {
    format!("BANK_LEASE#{token_digest}")
}

/// Where the import stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Cursor {
    /// Every row before this time is stored.
    synced_until: Option<i64>,
    /// The window being read page by page: its `from`, its `to`, and the next page's `to`.
    window: Option<(i64, i64, i64)>,
}

impl Cursor {
    fn read(item: Option<&crate::store::Item>) -> Self {
        let Some(item) = item else {
            return Self::default();
        };
        let num = |name: &str| item.u64_of(name).ok().map(|v| v as i64);
        Self {
            synced_until: num("synced_until"),
            window: match (num("window_from"), num("window_to"), num("page_to")) {
                (Some(from), Some(to), Some(page_to)) => Some((from, to, page_to)),
                _ => None,
            },
        }
    }
}

/// Whether a run holds the token's window now, by the digest its integration keeps in clear
/// (for the api, which may not open the token).
pub async fn is_running(
    store: &Store,
    token_digest: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let item = store.get(&lease_of(token_digest)).await?;
    Ok(item
        .and_then(|i| i.u64_of("next_call_ms").ok())
        .is_some_and(|next| next as i64 > now.timestamp_millis()))
}

/// Takes the lease for one call: only when the interval since the last call has passed.
async fn take_lease(
    store: &Store,
    integration: &Integration,
    limits: &Limits,
) -> Result<bool, StoreError> {
    let now = Utc::now().timestamp_millis();
    let next = now + limits.interval.as_millis() as i64;
    let update = Update::new()
        .set("next_call_ms", n(next))
        .set("kind", s("bank_lease"))
        .set("org", s(integration.org().as_str()))
        .when(Cond::Any(vec![
            Cond::Missing,
            Cond::Before("next_call_ms".into(), n(now + 1)),
        ]));
    store.update_if(&lease_pk(integration), &update).await
}

async fn save(store: &Store, integration: &Integration, cursor: &Cursor) -> Result<(), StoreError> {
    let mut builder = Builder::new(
        &cursor_pk(integration),
        "bank_cursor",
        integration.org().as_str(),
    )
    .opt_num("synced_until", cursor.synced_until);
    if let Some((from, to, page_to)) = cursor.window {
        builder = builder
            .num("window_from", from)
            .num("window_to", to)
            .num("page_to", page_to);
    }
    store.replace(builder.build()).await
}

/// One run for one integration: reads from the cursor, page by page, as far as the lease and
/// `limits` allow.
pub async fn run(
    store: &Store,
    apis: &Apis,
    integration: &Integration,
    limits: &Limits,
) -> Result<Report, ImportError> {
    let crate::integrations::Settings::Bank(BankSettings::Monobank {
        token,
        account,
        api_url,
    }) = &integration.settings
    else {
        return Err(ImportError::NotMonobank);
    };
    let base = match api_url {
        Some(own) if apis.allow_loopback => own.trim_end_matches('/').to_owned(),
        _ => apis.monobank.clone(),
    };
    let mut cursor = Cursor::read(store.get(&cursor_pk(integration)).await?.as_ref());
    let mut report = Report::default();
    for pages in 0..limits.max_pages {
        let now = Utc::now().timestamp();
        let (from, to, page_to) = match cursor.window {
            Some(window) => window,
            None => {
                // The first import reads back 31 days; a later one walks on from where it
                // stopped, a window of at most 31 days + 1 hour at a time, so a long outage
                // leaves no gap.
                let from = cursor
                    .synced_until
                    .map_or(now - RANGE_MAX_SECS + 3600, |synced| synced - OVERLAP_SECS);
                let to = (from + RANGE_MAX_SECS).min(now);
                (from, to, to)
            }
        };
        if !take_lease(store, integration, limits).await? {
            if pages == 0 {
                report.running = true;
                return Ok(report);
            }
            if limits.interval > limits.max_wait {
                return Ok(report);
            }
            tokio::time::sleep(limits.interval).await;
            if !take_lease(store, integration, limits).await? {
                report.running = true;
                return Ok(report);
            }
        }
        report.calls += 1;
        let url = format!("{base}/personal/statement/{account}/{from}/{page_to}");
        let answer = apis
            .http
            .get(url)
            .header("X-Token", token.expose_secret())
            .timeout(apis.timeout)
            .send()
            .await;
        let body = match answer {
            Ok(res) if res.status().is_success() => match res.bytes().await {
                Ok(body) => body,
                Err(e) => {
                    report.stopped = Some(format!("reading the statement: {}", e.without_url()));
                    return Ok(report);
                }
            },
            Ok(res) => {
                report.stopped = Some(format!("monobank answered {}", res.status().as_u16()));
                return Ok(report);
            }
            Err(e) => {
                report.stopped = Some(format!("monobank unreachable: {}", e.without_url()));
                return Ok(report);
            }
        };
        let (items, full) = match page(&body) {
            Ok(parsed) => parsed,
            Err(why) => {
                report.stopped = Some(why);
                return Ok(report);
            }
        };
        let oldest = items.iter().map(|i| i.time).min();
        let mut txs = Vec::with_capacity(items.len());
        let mut unreadable = Vec::new();
        for item in items {
            let id = item.id.clone();
            match item.row() {
                Ok(row) => txs.push(BankTx::new(
                    integration.org(),
                    &integration.id.id,
                    account,
                    row,
                    Arrival::Import,
                    Utc::now(),
                )),
                Err(why) => {
                    tracing::warn!(row = %id, %why, "statement row kept for review");
                    unreadable.push((id, why));
                }
            }
        }
        let rows = store_rows(store, &txs, CONCURRENCY).await?;
        let context = serde_json::json!({"integration_id": integration.id.id});
        crate::review::file_conflicts(
            store,
            integration.org(),
            Kind::Bank,
            &rows.written,
            &context,
            Utc::now(),
        )
        .await?;
        let imported = rows.imported();
        for (id, why) in unreadable {
            crate::review::ReviewItem {
                org: integration.org().clone(),
                kind: Kind::Bank,
                reason: Reason::UnreadableBankRow,
                key: format!("{}:{}", integration.id.id, crate::ids::ExternalId::of_body(id.as_bytes())),
                at: Utc::now(),
                detail: serde_json::json!({"integration_id": integration.id.id, "row_id": id, "error": why}),
            }
            .put(store)
            .await?;
        }
        report.rows += txs.len();
        report.imported += imported;
        // The rows are stored: only now the cursor moves.
        cursor = match (full, oldest) {
            // The next page ends at the oldest row's time (read again, harmless); a full page
            // all in one second moves one second on, or the window would never advance.
            (true, Some(oldest)) => Cursor {
                synced_until: cursor.synced_until,
                window: Some((
                    from,
                    to,
                    if oldest >= page_to {
                        page_to - 1
                    } else {
                        oldest
                    },
                )),
            },
            _ => Cursor {
                synced_until: Some(to),
                window: None,
            },
        };
        save(store, integration, &cursor).await?;
        // Caught up when the window just read ends within the overlap the next run reads again.
        if cursor.window.is_none() && Utc::now().timestamp() - to < OVERLAP_SECS {
            report.caught_up = true;
            return Ok(report);
        }
    }
    Ok(report)
}
