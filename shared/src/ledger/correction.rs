//! Ledger corrections: a debit line given back by a person, once. The refund is keyed by the
//! line it gives back: it is the message's refund line, the key a failure's refund takes too, so
//! however often and under whatever request key it is asked, and whether a failure refunded the
//! message first, one refund line gives the money back once. The wallet moves in the same
//! transaction, and the review items that name the debit (a negative balance, another currency)
//! are resolved in it, read with the line: a refund found made already resolves those still open.

use super::line::{by_id, ledger_id, message_line_pk, LedgerLine, LineKind};
use super::wallet::{wallet_pk, Wallet};
use crate::ids::{EventKey, OrgId};
use crate::review::{review_item_pk, Reason};
use crate::store::item::{s, Read};
use crate::store::{Answer, Decision, Index, Item, Plan, Seen, Step, Store, StoreError, Written};
use chrono::{DateTime, Utc};
use serde_json::Value;
use thiserror::Error;

/// The line whose `ledger_id` the export shows, if there is one.
pub async fn find(
    store: &Store,
    org: &OrgId,
    ledger_id: &str,
) -> Result<Option<LedgerLine>, StoreError> {
    let (items, _) = store
        .page_in(Index::States, &by_id(org, ledger_id), None, true, 1, None)
        .await?;
    items
        .first()
        .map(LedgerLine::from_item)
        .transpose()
        .map(|line| line.filter(|l| l.ledger_id == ledger_id))
}

#[derive(Debug, Error)]
pub enum RefundError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no such ledger line")]
    NotFound,
    /// Only a message's debit is given back this way.
    #[error("only a message's debit line is refunded; this line is a {0}")]
    NotADebit(&'static str),
}

/// A debit's refund line, and the wallet after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Refunded {
    pub line: LedgerLine,
    pub refunds: String,
    pub reason: String,
    pub wallet: Value,
}

impl Answer for Refunded {
    fn answer(&self) -> Value {
        let answer = RefundAnswer {
            duplicate: false,
            ledger_id: self.line.ledger_id.clone(),
            refunds: self.refunds.clone(),
            amount: self.line.currency.show(self.line.amount),
            currency: self.line.currency.as_str(),
            applied: self.line.applied,
            reason: self.reason.clone(),
            wallet: self.wallet.clone(),
        };
        serde_json::to_value(answer).expect("a refund's answer serialises")
    }
}

/// A debit line given back: the refund line, the line it refunds, and the wallet after it
/// (`duplicate`, set by the arrival: `Written::answer`).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RefundAnswer {
    /// True when the line was given back before (by a person, or by the message's failure).
    pub duplicate: bool,
    /// The refund line's id.
    pub ledger_id: String,
    /// The debit line it gives back.
    pub refunds: String,
    pub amount: String,
    pub currency: &'static str,
    /// False when the debit never moved the balance (another currency): neither does its refund.
    pub applied: bool,
    pub reason: String,
    /// As stored with the refund (null if unreadable).
    #[schema(value_type = Option<super::wallet::WalletView>)]
    pub wallet: Value,
}

impl Refunded {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        let wallet = item
            .opt_str("wallet")
            .and_then(|w| serde_json::from_str(w).ok())
            .unwrap_or(Value::Null);
        Ok(Self {
            line: LedgerLine::from_item(item)?,
            refunds: item.opt_str("refunds").unwrap_or_default().to_owned(),
            reason: item.opt_str("reason").unwrap_or_default().to_owned(),
            wallet,
        })
    }
}

/// Gives back the debit line `ledger_id` once, by `by`, for `reason`.
pub async fn refund(
    store: &Store,
    org: &OrgId,
    ledger_id: &str,
    (reason, by): (&str, &str),
    now: DateTime<Utc>,
) -> Result<Written<Refunded>, RefundError> {
    let mut decision = refunding(store, org, ledger_id, (reason, by)).await?;
    store.write(&mut decision, now).await
}

/// A refund's decision (`refund`), for a caller that writes it with more (a request's record):
/// the debit found first (not found, or not a message's debit, refused).
pub async fn refunding<'a>(
    store: &Store,
    org: &'a OrgId,
    ledger_id: &str,
    (reason, by): (&'a str, &'a str),
) -> Result<impl Decision<Out = Refunded, Error = RefundError> + 'a, RefundError> {
    let debit = find(store, org, ledger_id)
        .await?
        .ok_or(RefundError::NotFound)?;
    let (Some(integration), Some(message), Some(direction)) =
        (&debit.integration_id, &debit.message_id, debit.direction)
    else {
        return Err(RefundError::NotADebit("top-up"));
    };
    if debit.kind != LineKind::Debit {
        return Err(RefundError::NotADebit(match debit.kind {
            LineKind::Refund => "refund",
            _ => "top-up",
        }));
    }
    let pk = message_line_pk(org, integration, message, direction, LineKind::Refund);
    // The matters the debit raised, settled by its refund.
    let sms = EventKey::new(
        super::EVENT_KIND,
        &format!("{integration}:{}", debit.event_id),
    );
    let matters = [Reason::NegativeBalance, Reason::CurrencyMismatch]
        .map(|flagged| review_item_pk(org, flagged, sms.as_str()));
    let note = format!("debit {ledger_id} refunded: {reason}");
    Ok(Refunding {
        org,
        debit,
        pk,
        matters,
        note,
        reason,
        by,
    })
}

struct Refunding<'a> {
    org: &'a OrgId,
    debit: LedgerLine,
    pk: String,
    /// The review items the debit may have raised, resolved with the refund while open.
    matters: [String; 2],
    note: String,
    reason: &'a str,
    by: &'a str,
}

impl Refunding<'_> {
    /// The steps that resolve the matters read open (the items after the line and the wallet).
    fn settles(&self, seen: &Seen, now: DateTime<Utc>) -> Vec<Step> {
        let open: Vec<&str> = (self.matters.iter().enumerate())
            .filter(|(i, _)| {
                seen.get(2 + i)
                    .is_some_and(|m| crate::review::is_open_for(m, None))
            })
            .map(|(_, pk)| pk.as_str())
            .collect();
        let asked = (self.by, self.note.as_str(), None);
        let mut steps: Vec<Step> = (open.iter())
            .map(|pk| Step::Update {
                pk: (*pk).to_owned(),
                update: crate::review::resolution(self.org, pk, asked, now)
                    .when(crate::review::open_for(None)),
            })
            .collect();
        steps.extend(crate::store::counters::resolved_many(self.org, &open));
        steps
    }
}

impl Decision for Refunding<'_> {
    type Out = Refunded;
    type Error = RefundError;

    fn keys(&self) -> Vec<String> {
        let mut keys = vec![self.pk.clone(), wallet_pk(self.org)];
        keys.extend(self.matters.iter().cloned());
        keys
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Refunded>, RefundError> {
        let settles = self.settles(seen, now);
        if let Some(item) = seen.stored() {
            // Given back already: by a person, or by the message's failure, which kept neither
            // a reason nor the wallet: the failure is the reason, the wallet is as it is now.
            let mut stored = Refunded {
                refunds: self.debit.ledger_id.clone(),
                ..Refunded::from_item(item)?
            };
            if stored.reason.is_empty() {
                stored.reason = format!(
                    "the carrier reported the message failed ({})",
                    stored.line.event_id
                );
            }
            if stored.wallet.is_null() {
                stored.wallet = Wallet::from_item(seen.get(1))?.to_json();
            }
            return Ok(match settles.is_empty() {
                true => Plan::Done(Written::Repeat { stored }),
                false => Plan::Acknowledge {
                    steps: settles,
                    out: stored,
                },
            });
        }
        let (debit, wallet) = (&self.debit, Wallet::from_item(seen.get(1))?);
        // Money that never moved the balance (another currency) is not given back to it.
        let applied = debit.applied && wallet.takes(debit.currency);
        let next = applied.then(|| wallet.moved(debit.amount, debit.currency));
        let line = LedgerLine {
            ledger_id: ledger_id(&self.pk),
            kind: LineKind::Refund,
            event_id: format!("correction:{}", self.by),
            at: now,
            applied,
            balance_after: next.map_or(wallet.balance, |w| w.balance),
            ..debit.clone()
        };
        let shown = next.unwrap_or(wallet).to_json();
        let mut item = line.to_item();
        item.insert("refunds".into(), s(&debit.ledger_id));
        item.insert("reason".into(), s(self.reason));
        item.insert("wallet".into(), s(shown.to_string()));
        let mut steps = vec![Step::PutNew(item)];
        steps.extend(next.map(|next| wallet.step(self.org, &next)));
        steps.extend(settles);
        Ok(Plan::Write {
            steps,
            out: Refunded {
                line,
                refunds: debit.ledger_id.clone(),
                reason: self.reason.to_owned(),
                wallet: shown,
            },
        })
    }
}
