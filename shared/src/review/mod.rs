//! Items a machine cannot decide (overpayment, currency mismatch, unknown invoice, a reused key
//! with another payload, an outgoing call in an unknown state) become review items for a person:
//! created, listed and resolved here only.
//!
//! An item is on two lists at once: the API's `ORG#{org}#REVIEW` (newest first, every state) and
//! the operator's `ORG#{org}#REVIEW#{state}` on the second index. Resolving is one conditional
//! update (`open` → `resolved`) that moves the item between the operator's lists, so two people
//! resolving at once leave one resolution and the open list never keeps a resolved item.

mod reasons;

pub use reasons::{Kind, Reason};

use crate::ids::{EventKey, OrgId};
use crate::store::item::{s, Builder, Read};
use crate::store::lists::review_pk;
use crate::store::{
    Cond, Decision, Item, Mismatch, Plan, Seen, Step, Store, StoreError, Transacted, Update,
    Written,
};
use crate::time;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The states a review item is listed in.
pub const STATES: [&str; 2] = ["open", "resolved"];
/// The longest note a resolution keeps, in characters.
pub const NOTE_MAX: usize = 2000;

#[derive(Clone, Debug, PartialEq)]
pub struct ReviewItem {
    pub org: OrgId,
    pub kind: Kind,
    pub reason: Reason,
    /// The key of the event or run it concerns; one review item per key and reason.
    pub key: String,
    pub at: DateTime<Utc>,
    pub detail: Value,
}

/// The key of the item filed for `reason` about `key`.
pub fn review_item_pk(org: &OrgId, reason: Reason, key: &str) -> String {
    org.pk(&format!("REVIEW#{reason}#{key}"))
}

impl ReviewItem {
    /// The one shape of a `payload_mismatch`: the same key arrived with another payload. One
    /// item per key and received payload, however often that payload comes again.
    pub fn mismatch(
        org: &OrgId,
        kind: Kind,
        key: &EventKey,
        mismatch: &Mismatch,
        at: DateTime<Utc>,
        context: Value,
    ) -> Self {
        let received = &mismatch.received;
        let mut detail = json!({
            "event_key": key.as_str(),
            "fields": mismatch.fields,
            "fingerprint": received,
            "stored_fingerprint": mismatch.stored,
        });
        if let (Value::Object(more), Some(out)) = (context, detail.as_object_mut()) {
            out.extend(more);
        }
        Self {
            org: org.clone(),
            kind,
            reason: Reason::PayloadMismatch,
            key: format!("{key}:{}", &received[..received.len().min(16)]),
            at,
            detail,
        }
    }

    pub fn pk(&self) -> String {
        review_item_pk(&self.org, self.reason, &self.key)
    }

    pub fn to_item(&self) -> Item {
        Builder::new(&self.pk(), "review", self.org.as_str())
            .str("review_kind", self.kind.name())
            .str("reason", self.reason.name())
            .str("key", &self.key)
            .time("at", self.at)
            .str("state", "open")
            .str("detail", self.detail.to_string())
            .list(
                &self.org.pk("REVIEW"),
                &format!("{}#{}", time::format(self.at), self.key),
            )
            .index(
                &review_pk(&self.org, "open"),
                &format!("{}#{}#{}", time::format(self.at), self.reason, self.key),
            )
            .build()
    }

    /// Records it; a second record of the same key and reason changes nothing (`Ok(false)`).
    pub async fn put(&self, store: &Store) -> Result<bool, StoreError> {
        Ok(store.put_new(self.to_item()).await?.created())
    }
}

/// Files a `payload_mismatch` of `kind` for every conflict among `written`: how many there were.
pub async fn file_conflicts<T>(
    store: &Store,
    org: &OrgId,
    kind: Kind,
    written: &[(EventKey, Written<T>)],
    context: &Value,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let mut conflicts = 0;
    for (key, w) in written {
        if let Written::Conflict { mismatch, .. } = w {
            tracing::warn!(event_key = %key, fields = ?mismatch.fields, "same key, another payload; the first kept");
            ReviewItem::mismatch(org, kind, key, mismatch, now, context.clone())
                .put(store)
                .await?;
            conflicts += 1;
        }
    }
    Ok(conflicts)
}

/// A review item as the API shows it (`ReviewItem`).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = ReviewItem)]
pub struct ReviewView {
    /// What it is about: `payment`, `automation`, `webhook`, ...
    #[schema(value_type = Kind, required = true)]
    pub kind: Option<String>,
    /// `overpayment`, `invoice_closed`, `currency_mismatch`, `unknown_invoice`, ...
    #[schema(value_type = Reason, required = true)]
    pub reason: Option<String>,
    #[schema(value_type = String, required = true)]
    pub key: Option<String>,
    #[schema(value_type = String, format = DateTime, required = true)]
    pub at: Option<String>,
    #[schema(value_type = ReviewState, required = true)]
    pub state: Option<String>,
    /// What the machine saw: the reason's own fields (null if unreadable).
    #[schema(value_type = Option<Object>)]
    pub detail: Value,
    /// A person's note on resolving it.
    pub note: Option<String>,
    pub resolved_by: Option<String>,
    #[schema(format = DateTime)]
    pub resolved_at: Option<String>,
    /// `apply`, `same_money`, `distinct` or `dismiss`, when resolved with one.
    pub decision: Option<String>,
    /// What it is about, in words: its reason, then the invoice (number, amount), the sender
    /// or contact, the rule and the provider's payment id its detail and key name.
    #[schema(example = "payment proposed: invoice INV-00042, 40.00 UAH, from Olena, rule rule_1")]
    pub about: String,
}

/// A review item's state: `open` until a person resolves it.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum ReviewState {
    Open,
    Resolved,
}

/// The stored review `item` as the API shows it.
pub fn view(item: &Item) -> ReviewView {
    let text = |name: &str| item.opt_str(name).map(str::to_owned);
    let detail = item
        .opt_str("detail")
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null);
    ReviewView {
        kind: text("review_kind"),
        reason: text("reason"),
        key: text("key"),
        at: text("at"),
        state: text("state"),
        about: about(item.opt_str("reason"), item.opt_str("key"), &detail),
        detail,
        note: text("note"),
        resolved_by: text("resolved_by"),
        resolved_at: text("resolved_at"),
        decision: text("decision"),
    }
}

/// What an item is about, in the words a person reads (its raw key stays beside it, for
/// search): the reason, then what its detail and key name.
pub fn about(reason: Option<&str>, key: Option<&str>, detail: &Value) -> String {
    let text = |name: &str| detail.get(name).and_then(Value::as_str);
    let mut parts = Vec::new();
    if let Some(invoice) = text("invoice_number").or(text("invoice_id")) {
        parts.push(format!("invoice {invoice}"));
    }
    if let (Some(amount), Some(currency)) = (text("amount"), text("currency")) {
        parts.push(format!("{amount} {currency}"));
    }
    let sender = &detail["trigger"]["sender"];
    match (sender["name"].as_str(), text("contact_id")) {
        (Some(name), _) => parts.push(format!("from {name}")),
        (None, Some(contact)) => parts.push(format!("contact {contact}")),
        (None, None) => {}
    }
    if let Some(rule) = text("rule_id") {
        parts.push(format!("rule {rule}"));
    }
    let key = key.unwrap_or_default();
    if let Some((source, id)) = key.strip_prefix("payment:").and_then(|k| k.split_once(':')) {
        parts.push(format!("{source} payment {id}"));
    } else if parts.is_empty() && !key.is_empty() {
        parts.push(key.to_owned());
    }
    let reason = reason.unwrap_or("review").replace('_', " ");
    match parts.is_empty() {
        true => reason,
        false => format!("{reason}: {}", parts.join(", ")),
    }
}

/// Newest first, every state.
pub async fn list(store: &Store, org: &OrgId, limit: i32) -> Result<Vec<ReviewView>, StoreError> {
    let items = store.list(&org.pk("REVIEW"), true, limit).await?;
    Ok(items.iter().map(view).collect())
}

/// A page of an organisation's review items in `state`, newest first, each as `shown` shows it.
pub async fn page<T>(
    store: &Store,
    org: &OrgId,
    state: &str,
    limit: i32,
    cursor: Option<&str>,
    shown: fn(&Item) -> T,
) -> Result<(Vec<T>, Option<String>), StoreError> {
    crate::store::lists::page(store, &review_pk(org, state), limit, cursor, shown).await
}

/// Resolves the open item under `pk` of `org`, by `by`, with `note`: one conditional update
/// that moves it from the operator's open list to the resolved one. `false` when no open item
/// is there (never filed, or resolved before), with nothing read back.
pub async fn settle(
    store: &Store,
    org: &OrgId,
    pk: &str,
    by: &str,
    note: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    settle_deciding(store, org, pk, (by, note, None), now).await
}

/// The condition a resolution moves an item under: open, and either not being applied or
/// being applied by this very decision (an approval books before it resolves, so a dismissal or
/// another decision in between must not win).
pub fn open_for(decision: Option<&str>) -> Cond {
    let open = Cond::Equals("state".into(), s("open"));
    let unclaimed = Cond::Lacks(APPLYING.into());
    match decision {
        Some(d) if d != "dismiss" => Cond::All(vec![
            open,
            Cond::Any(vec![unclaimed, Cond::Equals(APPLYING.into(), s(d))]),
        ]),
        _ => Cond::All(vec![open, unclaimed]),
    }
}

/// Set on an item (to the decision's name) while an approval books what it decides.
pub const APPLYING: &str = "applying";

/// The reasons of a payment that kept money a person may put on an invoice.
pub const KEPT: [Reason; 4] = [
    Reason::UnknownInvoice,
    Reason::InvoiceClosed,
    Reason::CurrencyMismatch,
    Reason::Overpayment,
];

/// What the external id of a payment a person books on a review item begins with: the
/// approvals' own, which no client's key may take.
pub const DECIDED_PREFIX: &str = "review-";

/// The external id a decision on the item at `pk` books under: the same for every approval.
pub fn decided_id(pk: &str) -> crate::ids::ExternalId {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(pk.as_bytes()));
    let id = format!("{DECIDED_PREFIX}{}", &digest[..32]);
    crate::ids::ExternalId::parse("review", &id).expect("a prefix and 32 hex digits are an id")
}
/// The amount the decision that marked the item chose (an approval of a proposal).
pub const APPLYING_AMOUNT: &str = "applying_amount";

/// The update that resolves the item at `pk` (without its condition): resolved by `by` with
/// `note` (and the `decision`), moved to the resolved list.
pub fn resolution(
    org: &OrgId,
    pk: &str,
    (by, note, decision): (&str, &str, Option<&str>),
    now: DateTime<Utc>,
) -> Update {
    let at = time::format(now);
    let mut update = Update::new();
    if let Some(decision) = decision {
        update = update.set("decision", s(decision));
    }
    update
        .set("state", s("resolved"))
        .set("resolved_by", s(by))
        .set("resolved_at", s(&at))
        .set("note", s(note))
        .set("gsi2pk", s(review_pk(org, "resolved")))
        .set("gsi2sk", s(format!("{at}#{pk}")))
}

/// `settle`, keeping a person's `decision` on what the item proposed with the resolution.
pub async fn settle_deciding(
    store: &Store,
    org: &OrgId,
    pk: &str,
    (by, note, decision): (&str, &str, Option<&str>),
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let update = resolution(org, pk, (by, note, decision), now).when(open_for(decision));
    let Some(uncount) = crate::store::counters::resolved(org, pk) else {
        // Not a review item's key: nothing of it is open.
        return Ok(false);
    };
    let mut steps = vec![Step::Update {
        pk: pk.to_owned(),
        update,
    }];
    steps.extend(uncount);
    match store.transact_held(steps).await? {
        Transacted::Done => Ok(true),
        Transacted::Refused { .. } => Ok(false),
        Transacted::Contended => Err(StoreError::Contended { pk: pk.to_owned() }),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no such review item")]
    NotFound,
}

/// Whether `item` is open for `decision`, as `open_for` holds a write to it.
pub fn is_open_for(item: &Item, decision: Option<&str>) -> bool {
    let applying = item.opt_str(APPLYING);
    item.opt_str("state") == Some("open")
        && match decision {
            Some(d) if d != "dismiss" => applying.is_none_or(|a| a == d),
            _ => applying.is_none(),
        }
}

/// A resolution as a decision: the item read, and one transaction that moves it to the
/// resolved list and takes it off the open counters, held to its being open for this decision
/// (`open_for`; a lost race reads again). An item resolved before, or held by another
/// decision's approval, is a repeat: the stored item.
struct Resolve<'a> {
    org: &'a OrgId,
    pk: &'a str,
    asked: (&'a str, &'a str, Option<&'a str>),
}

impl Decision for Resolve<'_> {
    type Out = Item;
    type Error = ResolveError;

    fn keys(&self) -> Vec<String> {
        vec![self.pk.to_owned()]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Item>, ResolveError> {
        let (Some(item), Some(uncount)) = (
            seen.stored(),
            crate::store::counters::resolved(self.org, self.pk),
        ) else {
            return Err(ResolveError::NotFound);
        };
        let (by, note, decision) = self.asked;
        if !is_open_for(item, decision) {
            return Ok(Plan::Done(Written::Repeat {
                stored: item.clone(),
            }));
        }
        let update = resolution(self.org, self.pk, self.asked, now).when(open_for(decision));
        let mut steps = vec![Step::Update {
            pk: self.pk.to_owned(),
            update,
        }];
        steps.extend(uncount);
        let mut out = item.clone();
        let at = time::format(now);
        for (name, value) in [
            ("state", "resolved"),
            ("resolved_by", by),
            ("resolved_at", &at),
        ] {
            out.insert(name.into(), s(value));
        }
        out.insert("note".into(), s(note));
        if let Some(decision) = decision {
            out.insert("decision".into(), s(decision));
        }
        Ok(Plan::Write { steps, out })
    }
}

/// The resolution of the item under `pk` as `asked` (by, note, a person's decision), as a
/// decision for a caller that writes it with more (a proposal's place given up).
pub fn resolving<'a>(
    org: &'a OrgId,
    pk: &'a str,
    asked: (&'a str, &'a str, Option<&'a str>),
) -> impl Decision<Out = Item, Error = ResolveError> + 'a {
    Resolve { org, pk, asked }
}

/// Resolves the review item under `pk` by `by` with `note` (keeping a person's `decision`):
/// new, or a repeat (resolved before) with the stored item.
pub async fn resolve_deciding(
    store: &Store,
    org: &OrgId,
    pk: &str,
    asked: (&str, &str, Option<&str>),
    now: DateTime<Utc>,
) -> Result<Written<Item>, ResolveError> {
    store.write(&mut Resolve { org, pk, asked }, now).await
}

/// Open review items by reason, from their counters (`store::counters`): one read of 8 items
/// whatever the number open.
pub async fn open_by_reason(
    store: &Store,
    org: &OrgId,
) -> Result<BTreeMap<String, u64>, StoreError> {
    Ok(crate::store::counters::read(store, org, Utc::now(), 0)
        .await?
        .open)
}
