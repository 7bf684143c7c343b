//! Top-ups: one ledger line per `Idempotency-Key`, written in one transaction with the wallet
//! (conditioned on its version). A repeat gets the stored answer; the same key with another
//! amount or currency is a conflict, which the API refuses and leaves to a person.

use super::line::{ledger_id, topup_pk, LedgerLine, LineKind};
use super::wallet::{wallet_pk, Wallet};
use super::{LedgerError, Price};
use crate::ids::{ExternalId, OrgId};
use crate::store::item::{s, Read};
use crate::store::{Answer, Decision, Item, Mismatch, Plan, Seen, Step, Store, Written};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A top-up's answer: `{"ledger_id", "wallet": {"balance", "currency", "version"}}` (the edge
/// adds `duplicate`).
#[derive(Clone, Debug, PartialEq)]
pub struct TopUp {
    pub answer: Value,
}

/// A top-up's answer, stored with it (`duplicate`, set by the arrival: `Written::answer`).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct TopUpAnswer {
    /// True on a repeat of the same key and body: the stored answer.
    pub duplicate: bool,
    #[schema(example = "led_0123456789abcdef0123")]
    pub ledger_id: String,
    pub wallet: super::wallet::WalletView,
}

impl Answer for TopUp {
    fn answer(&self) -> Value {
        self.answer.clone()
    }
}

pub async fn top_up(
    store: &Store,
    org: &OrgId,
    key: &ExternalId,
    price: Price,
    now: DateTime<Utc>,
) -> Result<Written<TopUp>, LedgerError> {
    store.write(&mut topping(org, key, price), now).await
}

/// A top-up's decision, for a caller that writes it with more (a request's record).
pub fn topping<'a>(
    org: &'a OrgId,
    key: &'a ExternalId,
    price: Price,
) -> impl Decision<Out = TopUp, Error = LedgerError> + 'a {
    Topping { org, key, price }
}

/// What a top-up says: the same key with another amount or currency is another request.
fn fingerprint(price: &Price) -> String {
    let canonical = format!("{}|{}", price.amount.normalize(), price.currency.as_str());
    hex::encode(Sha256::digest(canonical))[..32].to_owned()
}

struct Topping<'a> {
    org: &'a OrgId,
    key: &'a ExternalId,
    price: Price,
}

impl Topping<'_> {
    fn repeat(&self, item: &Item) -> Result<Written<TopUp>, LedgerError> {
        let stored = LedgerLine::from_item(item)?;
        let answer: Value = serde_json::from_str(item.str_of("answer")?)
            .map_err(|_| crate::store::item::malformed(item, "answer"))?;
        let given = &self.price;
        let mismatch = Mismatch::of(
            &fingerprint(&Price {
                amount: stored.amount,
                currency: stored.currency,
            }),
            &fingerprint(given),
            &[
                ("amount", stored.amount != given.amount),
                ("currency", stored.currency != given.currency),
            ],
        );
        Ok(Written::again(TopUp { answer }, mismatch))
    }
}

impl Decision for Topping<'_> {
    type Out = TopUp;
    type Error = LedgerError;

    fn keys(&self) -> Vec<String> {
        vec![topup_pk(self.org, self.key.as_str()), wallet_pk(self.org)]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<TopUp>, LedgerError> {
        if let Some(item) = seen.stored() {
            return Ok(Plan::Done(self.repeat(item)?));
        }
        let (org, price) = (self.org, self.price);
        let wallet = Wallet::from_item(seen.get(1))?;
        if let Some(currency) = wallet.currency.filter(|c| *c != price.currency) {
            return Err(LedgerError::CurrencyMismatch {
                wallet: currency,
                given: price.currency,
            });
        }
        let next = wallet.moved(price.amount, price.currency);
        let line = LedgerLine {
            org: org.clone(),
            ledger_id: ledger_id(&topup_pk(org, self.key.as_str())),
            kind: LineKind::Topup,
            amount: price.amount,
            currency: price.currency,
            event_id: self.key.as_str().to_owned(),
            integration_id: None,
            message_id: None,
            direction: None,
            inbox_id: None,
            at: now,
            applied: true,
            balance_after: next.balance,
        };
        let answer = TopUpAnswer {
            duplicate: false,
            ledger_id: line.ledger_id.clone(),
            wallet: next.view(),
        };
        let answer = serde_json::to_value(answer).expect("a top-up's answer serialises");
        let mut item = line.to_item();
        item.insert("answer".into(), s(answer.to_string()));
        Ok(Plan::Write {
            steps: vec![Step::PutNew(item), wallet.step(org, &next)],
            out: TopUp { answer },
        })
    }
}
