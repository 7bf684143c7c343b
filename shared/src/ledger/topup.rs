//! Top-ups: one ledger line per `Idempotency-Key`, written in one transaction with the wallet
//! (conditioned on its version). A repeat gets the stored answer; the same key with another
//! amount or currency is refused and left to a person.

use super::line::{ledger_id, topup_pk, LedgerLine, LineKind};
use super::wallet::{wallet_pk, Wallet};
use super::{LedgerError, Price};
use crate::ids::{ExternalId, OrgId};
use crate::review::ReviewItem;
use crate::store::item::{s, Read};
use crate::store::{Step, Store, Transacted};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// Attempts before giving up on a contended wallet.
const ATTEMPTS: u32 = 40;

#[derive(Clone, Debug)]
pub struct TopUp {
    pub duplicate: bool,
    /// `{"duplicate", "ledger_id", "wallet": {"balance", "currency", "version"}}`.
    pub answer: Value,
}

pub async fn top_up(
    store: &Store,
    org: &OrgId,
    key: &ExternalId,
    price: Price,
    now: DateTime<Utc>,
) -> Result<TopUp, LedgerError> {
    let pk = topup_pk(org, key.as_str());
    for attempt in 0..ATTEMPTS {
        let mut found = store
            .get_many(&[pk.clone(), wallet_pk(org)])
            .await?
            .into_iter();
        let (stored, wallet) = (found.next().flatten(), found.next().flatten());
        if let Some(item) = stored {
            return repeat(store, org, key, price, &item, now).await;
        }
        let wallet = Wallet::from_item(wallet.as_ref())?;
        if let Some(currency) = wallet.currency.filter(|c| *c != price.currency) {
            return Err(LedgerError::CurrencyMismatch {
                wallet: currency,
                given: price.currency,
            });
        }
        let next = wallet.moved(price.amount, price.currency);
        let line = LedgerLine {
            org: org.clone(),
            ledger_id: ledger_id(&pk),
            kind: LineKind::Topup,
            amount: price.amount,
            currency: price.currency,
            event_id: key.as_str().to_owned(),
            integration_id: None,
            message_id: None,
            direction: None,
            inbox_id: None,
            at: now,
            applied: true,
            balance_after: next.balance,
        };
        let answer =
            json!({"duplicate": false, "ledger_id": line.ledger_id, "wallet": next.to_json()});
        let mut item = line.to_item();
        item.insert("answer".into(), s(answer.to_string()));
        match store
            .transact(vec![Step::PutNew(item), wallet.step(org, &next)])
            .await?
        {
            Transacted::Done => {
                return Ok(TopUp {
                    duplicate: false,
                    answer,
                })
            }
            Transacted::Refused {
                step: 0,
                existing: Some(item),
            } => return repeat(store, org, key, price, &item, now).await,
            _ => tokio::time::sleep(crate::payments::register::backoff(attempt)).await,
        }
    }
    Err(LedgerError::Contended)
}

/// The key was used before: the stored answer for the same request, a refusal (and a review
/// item) for another.
async fn repeat(
    store: &Store,
    org: &OrgId,
    key: &ExternalId,
    price: Price,
    item: &crate::store::Item,
    now: DateTime<Utc>,
) -> Result<TopUp, LedgerError> {
    let stored = LedgerLine::from_item(item)?;
    if stored.amount == price.amount && stored.currency == price.currency {
        let mut answer: Value = serde_json::from_str(item.str_of("answer")?)
            .map_err(|_| crate::store::item::malformed(item, "answer"))?;
        answer["duplicate"] = json!(true);
        return Ok(TopUp {
            duplicate: true,
            answer,
        });
    }
    ReviewItem {
        org: org.clone(),
        kind: "wallet".into(),
        reason: "idempotency_key_reused".into(),
        key: format!("topup:{key}:{}{}", price.amount, price.currency),
        at: now,
        detail: json!({
            "ledger_id": stored.ledger_id,
            "stored": {"amount": crate::money::display(stored.amount), "currency": stored.currency.as_str()},
            "given": {"amount": crate::money::display(price.amount), "currency": price.currency.as_str()},
        }),
    }
    .put(store)
    .await?;
    Err(LedgerError::KeyReused)
}
