//! Storing rows once, and reading them back. A row is one event write with no read before it:
//! the conditional put of its key either stores it or hands back the row that holds the key,
//! which is the same row (a repeat) or another row under the same bank id (a conflict).

use super::{list_pk, tx_pk, BankTx};
use crate::ids::{EventKey, OrgId};
use crate::store::item::{s, Builder};
use crate::store::{
    Answer, Cond, Decision, Mismatch, Plan, Seen, Step, Store, StoreError, Transacted, Update,
    Written,
};
use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt};
use serde_json::Value;

/// How storing one row ended.
pub type Stored = Written<BankTx>;

impl Answer for BankTx {
    fn answer(&self) -> Value {
        let answer = BankRowAnswer {
            duplicate: false,
            id: self.row.id.clone(),
            tx_id: self.id(),
        };
        serde_json::to_value(answer).expect("a row's answer serialises")
    }
}

/// A row's answer (`duplicate` on every repeat, set by the arrival: `Written::answer`).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct BankRowAnswer {
    pub duplicate: bool,
    /// The bank's own id of the row.
    pub id: String,
    /// Our id of the row in `GET /api/bank/transactions` and the match routes.
    pub tx_id: String,
}

struct StoreRow<'a> {
    tx: &'a BankTx,
}

impl Decision for StoreRow<'_> {
    type Out = BankTx;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        vec![self.tx.pk()]
    }

    fn reads(&self) -> bool {
        false
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<BankTx>, StoreError> {
        let tx = self.tx;
        let Some(item) = seen.stored() else {
            return Ok(Plan::Write {
                steps: vec![Step::PutNew(tx.to_item())],
                out: tx.clone(),
            });
        };
        let stored = BankTx::from_item(item)?;
        let (a, b) = (&stored.row, &tx.row);
        let mismatch = Mismatch::of(
            &stored.fingerprint(),
            &tx.fingerprint(),
            &[
                ("time", a.time != b.time),
                ("amount", a.amount != b.amount),
                ("currency", a.currency != b.currency),
                ("description", a.description != b.description),
                ("counterparty", a.counterparty != b.counterparty),
                ("reference", a.reference != b.reference),
                ("account", stored.account != tx.account),
            ],
        );
        Ok(Plan::Done(Written::again(stored, mismatch)))
    }
}

/// The item a pushed credit's confirmation leaves: an insert the fan-out turns into the row's
/// match, as it does the insert of a confirmed row (`derive`).
pub const CONFIRMATION: &str = "bank_confirmation";

/// A pushed row that a statement has shown now: marked confirmed, and for a credit a
/// confirmation item that brings its match, in one transaction. `false` when it was confirmed
/// before (by a concurrent import).
pub async fn confirm(store: &Store, tx: &BankTx, now: DateTime<Utc>) -> Result<bool, StoreError> {
    let at = crate::time::format(now);
    let mut steps = vec![Step::Update {
        pk: tx.pk(),
        update: Update::new()
            .set("confirmed_at", s(&at))
            .when(Cond::Lacks("confirmed_at".into())),
    }];
    if tx.row.is_credit() {
        let id = tx.id();
        let item = Builder::new(
            &tx.org.pk(&format!("BANKCONFIRM#{id}")),
            CONFIRMATION,
            tx.org.as_str(),
        )
        .str("tx_id", &id)
        .str("at", &at)
        .build();
        steps.push(Step::PutNew(item));
    }
    match store.transact_held(steps).await? {
        Transacted::Done => {
            tracing::info!(tx_id = %tx.id(), "pushed row confirmed by the statement");
            Ok(true)
        }
        Transacted::Refused { .. } => Ok(false),
        Transacted::Contended => Err(StoreError::Contended { pk: tx.pk() }),
    }
}

/// Stores a row once: one conditional put on its key.
pub async fn store_row(store: &Store, tx: &BankTx) -> Result<Stored, StoreError> {
    store.write(&mut StoreRow { tx }, tx.stored_at).await
}

async fn keyed(store: &Store, tx: &BankTx) -> Result<(EventKey, Stored), StoreError> {
    Ok((tx.key(), store_row(store, tx).await?))
}

/// Many rows as they were stored: each row's key and how it was written.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub written: Vec<(EventKey, Stored)>,
}

impl Rows {
    pub fn imported(&self) -> usize {
        self.count(|w| w.is_new())
    }

    pub fn duplicates(&self) -> usize {
        self.count(|w| matches!(w, Written::Repeat { .. }))
    }

    /// Rows whose bank id was taken by another row: the first kept, a person asked.
    pub fn conflicts(&self) -> usize {
        self.count(|w| matches!(w, Written::Conflict { .. }))
    }

    fn count(&self, f: impl Fn(&Stored) -> bool) -> usize {
        self.written.iter().filter(|(_, w)| f(w)).count()
    }
}

/// Stores many rows, `concurrency` at a time. The first failure is returned after the rows
/// under way have finished; rows stored before it stay stored, and a retry of the whole set
/// finds them as duplicates.
pub async fn store_rows(
    store: &Store,
    txs: &[BankTx],
    concurrency: usize,
) -> Result<Rows, StoreError> {
    let writes: Vec<_> = txs.iter().map(|tx| keyed(store, tx)).collect();
    let results: Vec<Result<(EventKey, Stored), StoreError>> = stream::iter(writes)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let written = results.into_iter().collect::<Result<_, _>>()?;
    Ok(Rows { written })
}

/// One row by its API id.
pub async fn get(store: &Store, org: &OrgId, tx_id: &str) -> Result<Option<BankTx>, StoreError> {
    store
        .get(&tx_pk(org, tx_id))
        .await?
        .map(|item| BankTx::from_item(&item))
        .transpose()
}

/// One page of an integration's rows, newest first, and the cursor of the next page.
pub async fn list(
    store: &Store,
    org: &OrgId,
    integration_id: &str,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<BankTx>, Option<String>), StoreError> {
    let (items, next) = store
        .page(&list_pk(org, integration_id), true, limit, cursor)
        .await?;
    let rows = items
        .iter()
        .map(BankTx::from_item)
        .collect::<Result<_, _>>()?;
    Ok((rows, next))
}
