#![forbid(unsafe_code)]
//! Matching queue → a stored credit row is paid to the one open invoice of its currency that its
//! description, reference or counterparty names (`INV-00042`), through `register_linked`; a row
//! no single invoice claims becomes an `unmatched_bank_row` review item. A redelivered message
//! finds the row matched (or its review item filed) and does nothing. A booked payment is held
//! against the money that reached its invoice or contact the week before: a lookalike becomes a
//! `possible_same_money` review item, never a merge (`effects::lookalike`). A reversed payment's
//! kept money that a person put on an invoice is taken back once (`effects::kept`).

use chrono::{DateTime, Utc};
use firmspace::bank::matching::{self, Auto, MatchError};
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::effects::{kept, lookalike, BankCredit, Matched};
use firmspace::review::Kind;
use firmspace::review::Reason;
use firmspace::store::Store;

pub struct Matcher {
    store: Store,
}

pub type App = SqsApp<Matcher>;

pub fn app(store: Store, max_receives: u32) -> App {
    SqsApp::new(
        Matcher {
            store: store.clone(),
        },
        store,
        max_receives,
    )
}

pub async fn from_env() -> Result<App, firmspace::config::ConfigError> {
    SqsApp::from_env(|_, store| Ok(Matcher { store })).await
}

impl Worker for Matcher {
    type Job = Matched;
    const KIND: Kind = Kind::Matching;

    async fn apply(&self, job: Matched, now: DateTime<Utc>) -> Result<Applied, WorkError> {
        match job {
            Matched::BankCredit(credit) => self.credit(credit, now).await,
            Matched::Lookalike(payment) => {
                let filed = lookalike::check(&self.store, &payment).await?;
                Ok(Applied::one(filed))
            }
            // A reversed payment's kept money, where a person applied it, taken back once.
            Matched::Unkeep(unkeep) => match kept::follow(&self.store, &unkeep).await {
                Ok(reverted) => Ok(Applied::one(reverted > 0)),
                Err(e) if e.is_retryable() => Err(WorkError::transient(e)),
                Err(e) => Err(WorkError::permanent(Reason::MatchRefused, e.to_string())),
            },
        }
    }
}

impl Matcher {
    async fn credit(&self, credit: BankCredit, now: DateTime<Utc>) -> Result<Applied, WorkError> {
        match matching::auto_match(&self.store, &credit.org, &credit.tx_id, now).await {
            Ok(Auto::Matched { invoice_id }) => {
                tracing::info!(tx = %credit.tx_id, %invoice_id, "bank row matched");
                Ok(Applied::one(true))
            }
            Ok(other) => {
                tracing::info!(tx = %credit.tx_id, ?other, "bank row not matched automatically");
                Ok(Applied::one(false))
            }
            Err(MatchError::NoRow) => Err(WorkError::permanent(
                Reason::NoBankRow,
                format!("bank row {} is not stored", credit.tx_id),
            )),
            Err(MatchError::Store(e)) => Err(e.into()),
            Err(MatchError::Payment(e)) if e.is_retryable() => Err(WorkError::transient(e)),
            Err(MatchError::Contended) => Err(WorkError::transient(MatchError::Contended)),
            // A debit, another currency, a vanished invoice: found before anything is written,
            // and nothing a retry changes.
            Err(e) => Err(WorkError::permanent(Reason::MatchRefused, e.to_string())),
        }
    }
}
