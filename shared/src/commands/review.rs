//! A review item resolved by a person, with a decision on what it proposed or kept: `apply`
//! books a model's `payment_proposed` once, or puts money a payment kept (`unknown_invoice`,
//! `invoice_closed`, `currency_mismatch`, an `overpayment`'s excess) on the invoice a person
//! names, through the one payment function, as the approving key; `same_money` books one
//! reversal of a payment a person says is the same money as another; `dismiss` (or no
//! decision) books nothing. A decision's payment and the item's resolution are one
//! transaction (`store::also`), held to the item's being open for the decision: of two
//! approvals one resolves and books, the other books nothing and is told it was resolved
//! before. The payment's identity is derived from the item, so an approval an earlier release
//! cut off after its payment resolves the item with that payment, and books nothing more.

use super::amount::AmountText;
use super::money::{booked, pay_settling, payment_input, Asked};
use super::proposals::Proposal;
use super::{Actor, Env};
use crate::commands::{owned, Command, Ran, Replies, RequestKey};
use crate::commands::{Made, Refused};
use crate::fields;
use crate::ids::ExternalId;
use crate::ops::review::outcome;
use crate::orgs::Scope;
use crate::payments::Source;
use crate::payments::{PaymentError, PaymentEvent};
use crate::review::{self, Reason, NOTE_MAX};
use crate::store::also::{Also, More};
use crate::store::item::Read;
use crate::store::{Item, Step, Written};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A person's decision on what a review item proposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Book what it proposes (a `payment_proposed` item's payment), or put the money a payment
    /// kept on `invoice_id`.
    Apply,
    /// Book nothing.
    Dismiss,
    /// The item's payment is the same money as the payment `as` names (on a
    /// `possible_same_money` item, by default its first lookalike): one reversal of it.
    SameMoney,
    /// A lookalike is not the same (`possible_same_money`, `possible_same_contact`): nothing
    /// moves.
    Distinct,
}

/// What a decision names beside itself: the invoice kept money goes on, the payment a second
/// one is the same money as.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Named {
    pub invoice_id: Option<String>,
    pub same_as: Option<String>,
    /// `apply` of a proposal: the amount a person approves, at most the proposed one.
    pub amount: Option<AmountText>,
}

/// An open review item resolved, with a decision on what it proposed; `named` is what the decision
/// names (the invoice of an `apply` of kept money, the same payment of `same_money`).
#[derive(Debug)]
pub struct ResolveReview {
    pub pk: String,
    pub note: String,
    pub decision: Option<Decision>,
    pub named: Named,
}

impl Command for ResolveReview {
    type Answer = crate::ops::answers::Resolution;
    const NAME: &'static str = "resolve_review";
    const REQUIRES: &'static [Scope] = &[Scope::Write, Scope::Ops];

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<crate::ops::answers::Resolution> {
        owned(by, &self.pk, "REVIEW#", "review item")?;
        let (pk, note, (decision, named)) = (
            self.pk.as_str(),
            self.note.as_str(),
            (self.decision, &self.named),
        );
        let note = fields::text("note", note.trim(), NOTE_MAX)?;
        let who = by.id();
        let resolving = Resolving {
            org: by.org().clone(),
            pk: pk.to_owned(),
            by: who.clone(),
            note: note.to_owned(),
            decision: decision.map(|d| crate::store::item::tag_name(&d)),
        };
        let booked = match decision {
            Some(Decision::Apply) => apply(env, by, named, &resolving)
                .await?
                .map(|p| ("payment", p)),
            Some(Decision::SameMoney) => same_money(env, by, named.same_as.as_deref(), &resolving)
                .await?
                .map(|r| ("reversal", r)),
            Some(Decision::Distinct) => {
                lookalike(pk)?;
                None
            }
            _ => None,
        };
        // A payment was booked with the item's resolution; anything else resolves it now.
        let resolved = match booked {
            Some(_) => Written::New(read(env, pk).await?),
            None => resolving.now(env, place(env, by, pk).await?).await?,
        };
        let mut shown = outcome(resolved.value());
        if !resolved.is_new() {
            let detail = "the review item was resolved before";
            let shown = super::answers::json(&shown);
            return Err(Refused::conflict("not_open", detail).with("outcome", shown));
        }
        match booked {
            Some(("payment", booked)) => shown.payment = Some(booked),
            Some((_, booked)) => shown.reversal = Some(booked),
            None => {}
        }
        Ok((Made::Done, shown))
    }
}

/// A person's resolution of the item at `pk`: by whom, with which note and decision.
#[derive(Clone)]
struct Resolving {
    org: crate::ids::OrgId,
    pk: String,
    by: String,
    note: String,
    decision: Option<String>,
}

impl Resolving {
    /// The item resolved with no payment (a proposal's `place` given up with it, while it is
    /// there): new, or a repeat with the stored item.
    async fn now<R>(
        &self,
        env: &Env<'_, R>,
        place: Option<(String, Step)>,
    ) -> Result<Written<Item>, Refused> {
        let asked = (
            self.by.as_str(),
            self.note.as_str(),
            self.decision.as_deref(),
        );
        let refused = |e| match e {
            review::ResolveError::Store(e) => Refused::from(e),
            review::ResolveError::NotFound => Refused::not_found("review item"),
        };
        let (keys, free): (Vec<String>, Option<Step>) = match place {
            Some((pk, free)) => (vec![pk], Some(free)),
            None => (Vec::new(), None),
        };
        let more: More<Item, review::ResolveError> = Box::new(move |seen, _, repeat, _| {
            Ok(match (&free, repeat, seen.get(0)) {
                (Some(free), false, Some(_)) => vec![free.clone()],
                _ => Vec::new(),
            })
        });
        let resolution = review::resolving(&self.org, &self.pk, asked);
        let written = env
            .apply(Also::new(resolution, keys, more), refused)
            .await?;
        Ok(written.map(|(item, _)| item))
    }

    /// What a decision's payment holds beside itself: the item resolved (held to its being open
    /// for the decision) and off its open counters, and a proposal's `place` among its
    /// conversation's open ones given up while it is there. An item no longer open for the
    /// decision refuses the payment (`LinkMoved`: nothing is booked); over a payment booked
    /// before, it is resolved if it is still open, and left as it is if not. `unreversed`: the
    /// key of a reversal that must not be there (kept money's source payment's), read with the
    /// item and held absent by the transaction; there, it refuses the payment (`LinkMoved`).
    fn with_payment(
        &self,
        place: Option<(String, Step)>,
        unreversed: Option<String>,
    ) -> (Vec<String>, More<PaymentEvent, PaymentError>) {
        let (place_pk, free) = place.unzip();
        let mut keys = vec![self.pk.clone()];
        let place_at = place_pk.as_ref().map(|_| keys.len());
        keys.extend(place_pk);
        let unreversed_at = unreversed.as_ref().map(|_| keys.len());
        keys.extend(unreversed.clone());
        let Self {
            org,
            pk,
            by,
            note,
            decision,
        } = self.clone();
        let more: More<PaymentEvent, PaymentError> = Box::new(move |seen, _, repeat, now| {
            let open = seen
                .get(0)
                .is_some_and(|item| review::is_open_for(item, decision.as_deref()));
            match (open, repeat) {
                (false, true) => return Ok(Vec::new()),
                (false, false) => return Err(PaymentError::LinkMoved),
                (true, _) => {}
            }
            let reversed = unreversed_at.and_then(|at| seen.get(at)).is_some();
            if reversed && !repeat {
                return Err(PaymentError::LinkMoved);
            }
            let asked = (by.as_str(), note.as_str(), decision.as_deref());
            let update = review::resolution(&org, &pk, asked, now)
                .when(review::open_for(decision.as_deref()));
            let mut steps = vec![Step::Update {
                pk: pk.clone(),
                update,
            }];
            steps.extend(crate::store::counters::resolved(&org, &pk).unwrap_or_default());
            if let (Some(free), Some(_)) = (&free, place_at.and_then(|at| seen.get(at))) {
                steps.push(free.clone());
            }
            if let (Some(reversal), false) = (&unreversed, repeat) {
                steps.push(Step::Absent(reversal.clone()));
            }
            Ok(steps)
        });
        (keys, more)
    }
}

/// `apply` on an open item that proposes or kept money: the item marked as being applied (a
/// dismissal can no longer resolve it), its payment booked (once, whoever approves and however
/// often), then the item resolved, so a cut-off approval is retried whole. `None` when the item
/// is not open: the resolution then tells so.
async fn apply<R>(
    env: &Env<'_, R>,
    by: &Actor,
    named: &Named,
    resolving: &Resolving,
) -> Result<Option<Value>, Refused> {
    let pk = resolving.pk.as_str();
    let item = read(env, pk).await?;
    // Resolved before (another person's approval paid it): nothing to weigh against the
    // invoice now; the resolution tells `not_open`, with who resolved it.
    if item.opt_str("state") != Some("open") {
        return Ok(None);
    }
    let detail = detail_of(&item);
    let reason = item.opt_str("reason").and_then(Reason::parse);
    let target = match reason {
        Some(Reason::PaymentProposed) => {
            by.person()?;
            proposed(env, by, (&item, &detail), named.amount.as_ref()).await?
        }
        Some(kept)
            if review::KEPT.contains(&kept) && item.opt_str("review_kind") == Some("payment") =>
        {
            let key = item.opt_str("key").unwrap_or_default();
            not_reversed(env, by, key).await?;
            let target = kept_on(env, by, &detail, named.invoice_id.as_deref()).await?;
            let unreversed = reversal_of(by, key);
            let also = resolving.with_payment(place_of(by, pk, &item), unreversed);
            return match book(env, by, pk, target, also).await? {
                // Nothing booked: the item moved, or the source was reversed meanwhile.
                None => not_reversed(env, by, key).await.map(|()| None),
                booked => Ok(booked),
            };
        }
        _ => {
            return Err(Refused::invalid(
                "invalid_decision",
                "apply books a payment_proposed item's payment or money a payment kept \
                 (unknown_invoice, invoice_closed, currency_mismatch, overpayment)",
            ))
        }
    };
    let also = resolving.with_payment(place_of(by, pk, &item), None);
    book(env, by, pk, target, also).await
}

/// What a person approves of a model's proposal: the amount they typed (at most the proposed
/// one) or the proposed one, at most what the invoice owes now; refused, the item stays open.
/// An approval cut off after it marked the item books what that first approval chose.
async fn proposed<R>(
    env: &Env<'_, R>,
    by: &Actor,
    (item, detail): (&Item, &Value),
    typed: Option<&AmountText>,
) -> Result<Target, Refused> {
    let proposal = Proposal::of(item, detail)?;
    let invoice_id = proposal.invoice_id;
    let target = |amount: &Value| Target {
        invoice_id: invoice_id.clone(),
        amount: AmountText::of(amount),
        source: Source::Assistant,
    };
    if let Some(chosen) = item.opt_str(review::APPLYING_AMOUNT) {
        return Ok(target(&serde_json::json!(chosen)));
    }
    let invoice = crate::payments::invoice::get(env.store, by.org(), &invoice_id)
        .await?
        .ok_or_else(|| Refused::not_found("invoice"))?;
    let show = |a| invoice.currency.show(a);
    let proposed =
        AmountText::of(&Value::from(proposal.amount)).in_currency("amount", invoice.currency)?;
    let amount = match typed {
        Some(typed) => typed.in_currency("amount", invoice.currency)?,
        None => proposed,
    };
    if amount > proposed {
        let detail = format!("amount: at most the {} proposed", show(proposed));
        return Err(Refused::field("amount", "invalid_amount", detail));
    }
    if amount > invoice.open() {
        let open = show(invoice.open());
        let detail = format!(
            "{} is more than the {open} the invoice owes now",
            show(amount)
        );
        return Err(Refused::conflict("exceeds_open", detail).with("open_now", open.into()));
    }
    Ok(target(&serde_json::json!(show(amount))))
}

/// `distinct` answers a lookalike only: `possible_same_money` or `possible_same_contact`.
fn lookalike(pk: &str) -> Result<(), Refused> {
    let named = [Reason::PossibleSameMoney, Reason::PossibleSameContact];
    match named.iter().any(|r| pk.contains(&format!("#REVIEW#{r}#"))) {
        true => Ok(()),
        false => Err(Refused::invalid(
            "invalid_decision",
            "distinct answers a possible_same_money or possible_same_contact item",
        )),
    }
}

/// The place among its conversation's open ones of the item at `pk`, when it is a model's
/// proposal (its item read for its conversation).
async fn place<R>(
    env: &Env<'_, R>,
    by: &Actor,
    pk: &str,
) -> Result<Option<(String, Step)>, Refused> {
    let proposal = by.org().pk(&format!("REVIEW#{}#", Reason::PaymentProposed));
    if !pk.starts_with(&proposal) {
        return Ok(None);
    }
    Ok(place_of(by, pk, &read(env, pk).await?))
}

/// A proposal's place among its conversation's open ones (`item` is the proposal at `pk`): where
/// it is, and the step that gives it up. None for any other item.
fn place_of(by: &Actor, pk: &str, item: &Item) -> Option<(String, Step)> {
    let proposal = by.org().pk(&format!("REVIEW#{}#", Reason::PaymentProposed));
    let key = pk.strip_prefix(&proposal)?;
    let proposal = Proposal::of(item, &detail_of(item)).ok()?;
    let conversation = proposal.trigger.conversation_id?;
    Some(super::proposals::place(by.org(), &conversation, key))
}

/// The open review item at `pk`, or 404.
async fn read<R>(env: &Env<'_, R>, pk: &str) -> Result<Item, Refused> {
    env.store
        .get(pk)
        .await?
        .ok_or_else(|| Refused::not_found("review item"))
}

fn detail_of(item: &Item) -> Value {
    item.opt_str("detail")
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null)
}

/// Where money goes, how much, and from whom.
struct Target {
    invoice_id: String,
    amount: AmountText,
    source: Source,
}

/// Refused `source_reversed` when the payment the item is about (its key) was reversed: the
/// money it kept is no longer there to put anywhere.
async fn not_reversed<R>(env: &Env<'_, R>, by: &Actor, key: &str) -> Result<(), Refused> {
    let Some(pk) = reversal_of(by, key) else {
        return Ok(());
    };
    match env.store.get(&pk).await? {
        Some(_) => Err(Refused::conflict(
            "source_reversed",
            "the payment that kept this money was reversed: there is nothing to apply; dismiss it",
        )),
        None => Ok(()),
    }
}

/// Where the reversal of the payment the item is about (its key) is stored, when it is one.
fn reversal_of(by: &Actor, key: &str) -> Option<String> {
    let (source, external_id) = payment_of(key)?;
    let reversal = crate::payments::reversal_id(&external_id);
    Some(crate::payments::payment_pk(by.org(), &source, &reversal))
}

/// The money a payment kept (`unapplied`), on the invoice a person names: in its currency only.
async fn kept_on<R>(
    env: &Env<'_, R>,
    by: &Actor,
    detail: &Value,
    invoice_id: Option<&str>,
) -> Result<Target, Refused> {
    let invoice_id = invoice_id.ok_or_else(|| {
        Refused::invalid(
            "invalid_field",
            "invoice_id names the invoice the kept money goes on",
        )
    })?;
    let invoice_id = fields::reference("invoice_id", invoice_id, fields::REF_MAX)?;
    let invoice = crate::payments::invoice::get(env.store, by.org(), invoice_id)
        .await?
        .ok_or_else(|| Refused::not_found("invoice"))?;
    let kept: crate::payments::register::KeptMoney =
        serde_json::from_value(detail.clone()).unwrap_or_default();
    if let Some(kept) = kept.currency.as_deref() {
        if kept != invoice.currency.as_str() {
            return Err(Refused::invalid(
                "currency_mismatch",
                format!(
                    "the kept money is in {kept}, the invoice in {}",
                    invoice.currency.as_str()
                ),
            ));
        }
    }
    let kept = kept.money().ok_or_else(|| {
        Refused::invalid(
            "nothing_kept",
            "the payment kept no amount to apply (its provider named none): dismiss it",
        )
    })?;
    Ok(Target {
        invoice_id: invoice_id.to_owned(),
        amount: AmountText::of(&serde_json::json!(invoice.currency.show(kept))),
        source: Source::Manual,
    })
}

/// A payment's source and external id from its event key (`payment:SOURCE:EXTERNAL_ID`).
fn payment_of(key: &str) -> Option<(Source, ExternalId)> {
    let (source, external) = key.strip_prefix("payment:")?.split_once(':')?;
    Some((
        Source::parse(source)?,
        ExternalId::parse("external_id", external).ok()?,
    ))
}

/// The payment `as` names: another stored payment of the organisation than the item's (`key`).
async fn another_payment<R>(
    env: &Env<'_, R>,
    org: &crate::ids::OrgId,
    key: &str,
    same_as: Option<&str>,
) -> Result<(), Refused> {
    let other = same_as
        .ok_or_else(|| Refused::invalid("invalid_field", "as names the payment's event key"))?;
    let other = fields::reference("as", other, fields::KEY_MAX * 2)?;
    let (other_source, other_id) = payment_of(other).ok_or_else(|| {
        Refused::invalid("invalid_field", "as is a payment's event key (payment:…)")
    })?;
    if other == key {
        return Err(Refused::invalid(
            "invalid_field",
            "as names another payment than the item's",
        ));
    }
    let stored = crate::payments::payment_pk(org, &other_source, &other_id);
    env.store
        .get(&stored)
        .await?
        .ok_or_else(|| Refused::not_found("payment"))?;
    Ok(())
}

/// How often `same_money` reads a bank row that moved under it before it asks for a retry.
const ROW_ROUNDS: usize = 3;

/// `same_money` on an open item about a payment: the payment `as` names must be another stored
/// payment of the organisation; one reversal of the item's payment, keyed by the item, takes
/// back what it applied.
async fn same_money<R>(
    env: &Env<'_, R>,
    by: &Actor,
    same_as: Option<&str>,
    resolving: &Resolving,
) -> Result<Option<Value>, Refused> {
    let pk = resolving.pk.as_str();
    let item = read(env, pk).await?;
    let key = item.opt_str("key").unwrap_or_default();
    // A lookalike's item names the earlier payment itself: the later one is reversed.
    let first = detail_of(&item)["lookalikes"][0]["event_key"]
        .as_str()
        .map(str::to_owned);
    let same_as = same_as.or(first.as_deref());
    let Some((source, external_id)) = payment_of(key) else {
        return Err(Refused::invalid(
            "invalid_decision",
            "same_money reverses the payment a review item is about; this item is about none",
        ));
    };
    let org = by.org();
    another_payment(env, org, key, same_as).await?;
    // Only money the payment put on an invoice can be taken back.
    let own = crate::payments::payment_pk(org, &source, &external_id);
    let applied = match env.store.get(&own).await? {
        Some(event) => crate::payments::PaymentEvent::from_item(&event)?.applied,
        None => return Err(Refused::not_found("payment")),
    };
    if applied <= rust_decimal::Decimal::ZERO {
        return Err(Refused::invalid(
            "nothing_to_reverse",
            "the item's payment put nothing on an invoice: dismiss it",
        ));
    }
    // Under the key the provider's own reversal of it would take: whichever comes second is
    // that reversal again, so the money goes back once.
    let input = crate::payments::PaymentInput {
        org: org.clone(),
        invoice_ref: None,
        external_id: crate::payments::reversal_id(&external_id),
        source,
        amount: None,
        currency: None,
        at: env.now,
        actor: by.id(),
        reverses: Some(external_id.clone()),
        reversible: false,
        via: None,
    };
    let input = crate::payments::register::on_its_payments_invoice(env.store, input).await?;
    reversed(env, (&input, &external_id), resolving).await
}

/// The reversal `input` of the payment `original` booked with the item's resolution. A bank
/// row's payment: the row leaves its match in the reversal's transaction, as an unmatch would,
/// held to the row's sequence; a row that moved meanwhile is read again.
async fn reversed<R>(
    env: &Env<'_, R>,
    (input, original): (&crate::payments::PaymentInput, &ExternalId),
    resolving: &Resolving,
) -> Result<Option<Value>, Refused> {
    let org = &input.org;
    for _ in 0..ROW_ROUNDS {
        let row = match input.source {
            Source::Bank => crate::bank::matching::reversal_link(env.store, org, original).await?,
            _ => None,
        };
        let link = row.as_ref().map(crate::bank::matching::unlinking);
        let also = resolving.with_payment(None, None);
        let registered = pay_settling(env, (input, link.as_ref()), also).await?;
        let moved = match (&registered, &row) {
            (None, Some(row)) => {
                let now = crate::bank::matching::reversal_link(env.store, org, original).await?;
                now.is_none_or(|now| now.match_seq != row.match_seq)
            }
            _ => false,
        };
        if !moved {
            return Ok(registered.map(|r| r.answer()));
        }
    }
    Err(Refused::unavailable(
        "contended",
        "the bank row kept moving while its payment was reversed; nothing moved: retry",
    ))
}

/// The payment decided on, booked as the approving actor, its external id derived from the
/// item, with what else it holds (`also`: the item's resolution): its answer, or `None` when
/// the item was no longer open for it and nothing was booked.
async fn book<R>(
    env: &Env<'_, R>,
    by: &Actor,
    pk: &str,
    target: Target,
    also: (Vec<String>, More<PaymentEvent, PaymentError>),
) -> Result<Option<Value>, Refused> {
    let asked = Asked {
        source: target.source,
        external_id: review::decided_id(pk),
        amount: Some(&target.amount),
        actor: None,
    };
    let input = payment_input(env, by, &target.invoice_id, asked).await?;
    match pay_settling(env, (&input, None), also).await? {
        Some(registered) => booked(env, &input, registered).await.map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::Builder;
    use crate::store::Seen;

    /// Kept money applied while its source payment is reversed: the reversal read with the item
    /// refuses the payment, and its absence is a step of the payment's transaction, so a
    /// reversal stored between the read and the write fails the write and is read again.
    #[test]
    fn kept_money_is_applied_only_while_its_source_stays_unreversed() {
        let org = crate::ids::OrgId::parse("o0123456789ab").unwrap();
        let pk = org.pk("REVIEW#unknown_invoice#payment:stripe:pi_1");
        let resolving = Resolving {
            org: org.clone(),
            pk: pk.clone(),
            by: "k1".into(),
            note: "on INV-2".into(),
            decision: Some("apply".into()),
        };
        let reversal = org.pk("PAYMENT#stripe#pi_1:reversal");
        let (keys, more) = resolving.with_payment(None, Some(reversal.clone()));
        assert_eq!(keys, [pk.clone(), reversal.clone()]);
        let open = Builder::new(&pk, "review_item", org.as_str())
            .str("state", "open")
            .build();
        let event = crate::payments::event::tests::sample(false);
        let now = chrono::Utc::now();

        let steps = more(
            &Seen::of(vec![Some(open.clone()), None]),
            &event,
            false,
            now,
        )
        .expect("an unreversed source");
        assert!(
            steps
                .iter()
                .any(|s| matches!(s, Step::Absent(k) if *k == reversal)),
            "the reversal held absent: {steps:?}"
        );
        let stored = Builder::new(&reversal, "payment", org.as_str()).build();
        let refused = more(
            &Seen::of(vec![Some(open), Some(stored)]),
            &event,
            false,
            now,
        );
        assert!(matches!(refused, Err(PaymentError::LinkMoved)));
    }
}
