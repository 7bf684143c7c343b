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

mod cursor;

pub use cursor::{Cursor, Page, Window, OVERLAP_SECS};

use super::monobank::{page, StatementItem, Unreadable};

/// One row of a statement page: readable, or kept for a person.
type Row = Result<StatementItem, Unreadable>;
use super::providers::BankSettings;
pub use super::requests::{of_org, scheduled, Request, Requests};
use super::UPLOAD_CONCURRENCY as CONCURRENCY;
use super::{store_rows, Arrival, BankTx};
use crate::egress::Apis;
use crate::ids::{ExternalId, IntegrationId};
use crate::integrations::{Integration, Settings};
use crate::review::{self, Kind, Reason, ReviewItem};
use crate::store::item::{n, s, Read};
use crate::store::{Cond, Index, Store, StoreError, Update, Written};
use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use std::time::Duration;

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
    /// Pushed rows the statement did not show, filed for a person.
    pub unconfirmed: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("not a monobank bank integration")]
    NotMonobank,
}

fn cursor_pk(id: &IntegrationId) -> String {
    id.org.pk(&format!("BANK_CURSOR#{}", id.digest()))
}

/// Of these integrations (each with when it was made), the ones whose statement is not
/// imported up to `period` × 2 before `now`: their cursors read in one batch.
pub async fn overdue(
    store: &Store,
    integrations: &[(IntegrationId, Option<DateTime<Utc>>)],
    period: Duration,
    now: DateTime<Utc>,
) -> Result<Vec<IntegrationId>, StoreError> {
    let pks: Vec<String> = integrations.iter().map(|(id, _)| cursor_pk(id)).collect();
    let cursors = store.get_many(&pks).await?;
    let late = now.timestamp() - 2 * period.as_secs() as i64;
    Ok(integrations
        .iter()
        .zip(cursors)
        .filter(|((_, made), cursor)| {
            let synced = Cursor::read(cursor.as_ref()).synced_until;
            let since = synced.or(made.map(|m| m.timestamp())).unwrap_or(i64::MIN);
            since < late
        })
        .map(|((id, _), _)| id.clone())
        .collect())
}

/// monobank's one call a minute is per token: the lease is the token's (by its digest), shared
/// by every integration that carries it (two accounts of one client, say).
fn lease_pk(integration: &Integration) -> String {
    let digest = match &integration.settings {
        Settings::Bank(BankSettings::Monobank { token, .. }) => {
            super::providers::token_digest(token)
        }
        _ => integration.id.digest(),
    };
    lease_of(&digest)
}

fn lease_of(token_digest: &str) -> String {
    format!("BANK_LEASE#{token_digest}")
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

/// Takes the lease for one call at `now`: only when the interval since the last call has passed.
async fn take_lease(
    store: &Store,
    integration: &Integration,
    limits: &Limits,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let now = now.timestamp_millis();
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

/// What a monobank bank integration calls with.
struct Statement<'a> {
    base: String,
    token: &'a SecretString,
    account: &'a str,
}

impl<'a> Statement<'a> {
    fn of(apis: &Apis, integration: &'a Integration) -> Result<Self, ImportError> {
        let Settings::Bank(BankSettings::Monobank {
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
        Ok(Self {
            base,
            token,
            account,
        })
    }

    /// One page of the window, newest first; `Err` says why the run stops (429, 5xx,
    /// unreachable, unreadable), with the cursor unmoved.
    async fn page(&self, apis: &Apis, w: Window) -> Result<(Vec<Row>, Page), String> {
        let url = format!(
            "{}/personal/statement/{}/{}/{}",
            self.base, self.account, w.from, w.page_to
        );
        let answer = apis
            .http
            .get(url)
            .header("X-Token", self.token.expose_secret())
            .timeout(apis.timeout)
            .send()
            .await;
        let body = match answer {
            Ok(res) if res.status().is_success() => res
                .bytes()
                .await
                .map_err(|e| format!("reading the statement: {}", e.without_url()))?,
            Ok(res) => return Err(format!("monobank answered {}", res.status().as_u16())),
            Err(e) => return Err(format!("monobank unreachable: {}", e.without_url())),
        };
        let (items, full) = page(&body)?;
        let time = |row: &Row| match row {
            Ok(item) => Some(item.time),
            Err(bad) => bad.time,
        };
        let oldest = items.iter().filter_map(time).min();
        Ok((items, Page { full, oldest }))
    }
}

/// Stores a page's rows once (a conflict and an unreadable row each a review item): how many
/// were readable, and how many were new.
async fn store_page(
    store: &Store,
    integration: &Integration,
    account: &str,
    items: Vec<Row>,
    now: DateTime<Utc>,
) -> Result<(usize, usize), StoreError> {
    let org = integration.org();
    let mut txs = Vec::with_capacity(items.len());
    let mut unreadable = Vec::new();
    for item in items {
        let item = match item {
            Ok(item) => item,
            Err(bad) => {
                unreadable.push((bad.id, bad.why));
                continue;
            }
        };
        let id = item.id.clone();
        match item.row() {
            Ok(row) => txs.push(BankTx::new(
                org,
                &integration.id.id,
                account,
                row,
                Arrival::Import,
                now,
            )),
            Err(why) => unreadable.push((id, why)),
        }
    }
    let rows = store_rows(store, &txs, CONCURRENCY).await?;
    // A row pushed before, the same as the statement has it: confirmed now (and paid, if it
    // names an invoice). A pushed row that differs is a conflict and stays unconfirmed.
    for (_, written) in &rows.written {
        if let Written::Repeat { stored } = written {
            if stored.confirmed_at.is_none() {
                super::confirm(store, stored, now).await?;
            }
        }
    }
    let context = json!({"integration": integration.id.digest()});
    review::file_conflicts(store, org, Kind::Bank, &rows.written, &context, now).await?;
    file_unreadable(store, integration, unreadable, now).await?;
    Ok((txs.len(), rows.imported()))
}

/// A review item for each statement row that could not be read, with why.
async fn file_unreadable(
    store: &Store,
    integration: &Integration,
    unreadable: Vec<(String, String)>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let org = integration.org();
    for (id, why) in unreadable {
        tracing::warn!(row = %id, %why, "statement row kept for review");
        ReviewItem {
            org: org.clone(),
            kind: Kind::Bank,
            reason: Reason::UnreadableBankRow,
            key: format!(
                "{}:{}",
                integration.id.digest(),
                ExternalId::of_body(id.as_bytes())
            ),
            at: now,
            detail: json!({"integration": integration.id.digest(), "row_id": id, "error": why}),
        }
        .put(store)
        .await?;
    }
    Ok(())
}

/// Files `unconfirmed_bank_row` for every pushed row of the integration *stored* in [`from`,
/// `to`) whose own time lies outside that window and outside every window to come (before it,
/// or more than an hour ahead): a row timed where no statement will look (a forgery dated
/// outside the import's reach) is filed by when it arrived. How many.
async fn unconfirmed_stored(
    store: &Store,
    integration: &Integration,
    (from, to): (i64, i64),
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let at = |secs: i64| DateTime::from_timestamp(secs, 0).map(crate::time::format);
    // `to` is whole seconds; a row stored within its last second is in.
    let (Some(low), Some(high)) = (at(from), at(to + 1)) else {
        return Ok(0);
    };
    let list =
        crate::store::lists::events_pk(integration.org(), crate::store::lists::EventKind::BankRow);
    let digest = crate::ids::integration_digest(&integration.id.id);
    let ahead = now.timestamp() + 3600;
    let (mut filed, mut cursor) = (0, None);
    loop {
        let (items, next) = store
            .page_in(
                Index::States,
                &list,
                Some((&low, &high)),
                false,
                500,
                cursor.as_deref(),
            )
            .await?;
        let outside: Vec<String> = items
            .iter()
            .filter(|i| i.opt_str("integration") == Some(digest.as_str()))
            .filter(|i| i.opt_str("confirmed_at").is_none())
            .filter(|i| {
                let time = i.opt_time("time").map(|t| t.timestamp()).unwrap_or(from);
                time < from || time > ahead
            })
            .filter_map(|i| i.opt_str("pk").map(str::to_owned))
            .collect();
        if !outside.is_empty() {
            for item in store.get_many(&outside).await?.iter().flatten() {
                let tx = BankTx::from_item(item)?;
                if tx.confirmed_at.is_none() {
                    filed += usize::from(unconfirmed_review(&tx, now).put(store).await?);
                }
            }
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(filed),
        }
    }
}

/// The review item of a pushed row the statement never showed.
fn unconfirmed_review(tx: &BankTx, now: DateTime<Utc>) -> ReviewItem {
    let r = &tx.row;
    ReviewItem {
        org: tx.org.clone(),
        kind: Kind::Bank,
        reason: Reason::UnconfirmedBankRow,
        key: tx.id(),
        at: now,
        detail: json!({
            "tx_id": tx.id(),
            "row_id": r.id,
            "time": crate::time::format(r.time),
            "amount": r.currency.show(r.amount),
            "currency": r.currency.as_str(),
            "description": r.description,
            "why": "pushed to the webhook, but the bank's statement for its time does not hold it: it paid nothing",
        }),
    }
}

/// Files `unconfirmed_bank_row` for every pushed row of the integration whose time lies in
/// [`from`, `to`) (seconds) and that no statement has shown: how many. Each row is in one such
/// range only (the next window starts at `to`), so each is looked at once; the rows are read
/// from the integration's list by time, a page at a time.
async fn unconfirmed(
    store: &Store,
    integration: &Integration,
    from: i64,
    to: i64,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let at = |secs: i64| DateTime::from_timestamp(secs, 0).map(crate::time::format);
    let (Some(from), Some(to)) = (at(from), at(to)) else {
        return Ok(0);
    };
    let list = super::list_pk(integration.org(), &integration.id.id);
    let (mut filed, mut cursor) = (0, None);
    loop {
        let (items, next) = store
            .page_in(
                Index::Lists,
                &list,
                Some((&from, &to)),
                false,
                500,
                cursor.as_deref(),
            )
            .await?;
        // The index may not show yet a confirmation this very run wrote: the unconfirmed ones
        // are read again, strongly, before any is filed.
        let candidates: Vec<String> = items
            .iter()
            .filter(|i| i.opt_str("confirmed_at").is_none())
            .filter_map(|i| i.opt_str("pk").map(str::to_owned))
            .collect();
        let current = match candidates.is_empty() {
            true => Vec::new(),
            false => store.get_many(&candidates).await?,
        };
        for item in current.iter().flatten() {
            let tx = BankTx::from_item(item)?;
            if tx.confirmed_at.is_some() {
                continue;
            }
            tracing::warn!(tx_id = %tx.id(), "a pushed row the statement never showed: for a person");
            filed += usize::from(unconfirmed_review(&tx, now).put(store).await?);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(filed),
        }
    }
}

/// Whether the run may make its next call: the lease taken, or (after the first page, when the
/// limits allow) taken after waiting one interval. `now` moves on by the wait.
async fn lease(
    store: &Store,
    integration: &Integration,
    limits: &Limits,
    first: bool,
    now: &mut DateTime<Utc>,
) -> Result<Option<bool>, StoreError> {
    if take_lease(store, integration, limits, *now).await? {
        return Ok(Some(true));
    }
    if first {
        return Ok(None);
    }
    if limits.interval > limits.max_wait {
        return Ok(Some(false));
    }
    tokio::time::sleep(limits.interval).await;
    *now += chrono::Duration::from_std(limits.interval).unwrap_or_default();
    Ok(take_lease(store, integration, limits, *now)
        .await?
        .then_some(true))
}

/// One page of a recovery: what monobank's statement held in a window, stored as the import
/// stores it. `next`: where the next page of the window ends, when this one was full; `busy`:
/// the statement was called less than a minute ago (monobank's limit), nothing was read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowRead {
    pub rows: usize,
    pub imported: usize,
    pub next: Option<i64>,
    pub busy: bool,
    /// Why the statement could not be read (429, 5xx, unreachable, unreadable).
    pub stopped: Option<String>,
}

/// Reads one page of the statement in `[from, to]`, newest first from `page_to`, under the
/// import's lease, and stores its rows once (a row that arrived is a repeat): the recovery of
/// a window the webhook may have missed. The import's cursor does not move.
pub async fn window_page(
    store: &Store,
    apis: &Apis,
    integration: &Integration,
    limits: &Limits,
    (from, to, page_to): (i64, i64, i64),
    mut now: DateTime<Utc>,
) -> Result<WindowRead, ImportError> {
    let statement = Statement::of(apis, integration)?;
    if lease(store, integration, limits, true, &mut now).await? != Some(true) {
        return Ok(WindowRead {
            busy: true,
            ..WindowRead::default()
        });
    }
    let window = Window { from, to, page_to };
    let (items, page) = match statement.page(apis, window).await {
        Ok(read) => read,
        Err(why) => {
            return Ok(WindowRead {
                stopped: Some(why),
                ..WindowRead::default()
            })
        }
    };
    let (rows, imported) = store_page(store, integration, statement.account, items, now).await?;
    let next = Cursor::default()
        .after(window, page)
        .window
        .map(|w| w.page_to);
    Ok(WindowRead {
        rows,
        imported,
        next,
        ..WindowRead::default()
    })
}

/// One run for one integration at `now`: reads from the cursor, page by page, as far as the
/// lease and `limits` allow.
pub async fn run(
    store: &Store,
    apis: &Apis,
    integration: &Integration,
    limits: &Limits,
    mut now: DateTime<Utc>,
) -> Result<Report, ImportError> {
    let statement = Statement::of(apis, integration)?;
    let cursor_pk = cursor_pk(&integration.id);
    let mut cursor = Cursor::read(store.get(&cursor_pk).await?.as_ref());
    let mut report = Report::default();
    for pages in 0..limits.max_pages {
        let window = cursor.window(now.timestamp());
        match lease(store, integration, limits, pages == 0, &mut now).await? {
            Some(true) => {}
            Some(false) => return Ok(report),
            None => {
                report.running = true;
                return Ok(report);
            }
        }
        report.calls += 1;
        let (items, page) = match statement.page(apis, window).await {
            Ok(read) => read,
            Err(why) => {
                report.stopped = Some(why);
                return Ok(report);
            }
        };
        let (rows, imported) =
            store_page(store, integration, statement.account, items, now).await?;
        report.rows += rows;
        report.imported += imported;
        cursor = cursor.after(window, page);
        if cursor.window.is_none() {
            // The window is read to its end: a pushed row in it that the statement did not show
            // (before the part the next run reads again) never will. Filed before the cursor
            // moves past it (each item keyed by its row: a run cut off here files it again).
            let (from, to) = (window.from, window.to - OVERLAP_SECS);
            report.unconfirmed += unconfirmed(store, integration, from, to, now).await?;
            // Stored up to the window's end: a row timed before the window can only ever be
            // filed by when it came, however recently.
            let stored = (window.from, window.to);
            report.unconfirmed += unconfirmed_stored(store, integration, stored, now).await?;
        }
        // The rows are stored and the window's strays filed: only now the cursor moves.
        store
            .replace(cursor.to_item(&cursor_pk, integration.org().as_str()))
            .await?;
        if cursor.caught_up(now.timestamp()) {
            report.caught_up = true;
            return Ok(report);
        }
    }
    Ok(report)
}
