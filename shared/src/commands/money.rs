//! The commands that move money: a payment (or, asked by a model, its proposal), a credit
//! note, a void. Each books through the payments domain's one function for it.

use super::amount::AmountText;
use super::answers::EventAnswer;
use super::answers::{self, BankMatched, BankUnmatched, InvoiceCopy, InvoiceVoided};
use super::{Actor, Env};
use crate::bank::matching::MatchError;
use crate::commands::{Command, Once, Ran, Replies, RequestKey};
use crate::commands::{Made, Refused};
use crate::fields::FieldError;
use crate::fields::{self, REF_MAX, TITLE_MAX};
use crate::ids::{ExternalId, LocalId};
use crate::money::{parse_amount, Currency};
use crate::orgs::Scope;
use crate::payments::credit::{self, CreditError, CreditLine, NewCreditNote, VoidError};
use crate::payments::invoice::Links;
use crate::payments::register::{registering, registering_linked, Link};
use crate::payments::{invoice, Invoice, PaymentError, PaymentEvent, PaymentInput, Source};
use crate::payments::{InvoiceStatus, NewInvoice};
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::also::{Also, More};
use crate::store::Written;
use rust_decimal::Decimal;
use serde::Deserialize;

/// A top-up's answer: its line and the wallet after, or the stored one for a repeat.
pub type ToppedUp = EventAnswer<crate::ledger::topup::TopUpAnswer>;
/// A credit note issued, or the stored one for a repeat.
pub type CreditIssued = EventAnswer<crate::payments::credit::CreditNoteIssued>;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// The longest reason a credit note takes (a line of text).
const REASON_MAX: usize = 500;

/// What to credit: `amount` (major units), else the lines' sum, else all that is left to credit.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditInput {
    #[schema(inline)]
    pub(super) amount: Option<AmountText>,
    /// Why: 1 to 500 characters.
    #[schema(example = "returned goods", min_length = 1, max_length = 500)]
    pub(super) reason: String,
    /// At most 100; each a description (1 to 500 characters) and an amount.
    #[schema(inline, max_items = 100)]
    pub(super) lines: Option<Vec<CreditLineInput>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditLineInput {
    #[schema(min_length = 1, max_length = 500)]
    description: String,
    #[schema(inline)]
    amount: AmountText,
}

/// A payment a person or an assistant asks for, before it is checked.
pub(super) struct Asked<'a> {
    pub source: Source,
    /// Its identity: the request's key.
    pub external_id: ExternalId,
    pub amount: Option<&'a AmountText>,
    /// For whom the key acted.
    pub actor: Option<&'a str>,
}

/// Books `asked` on invoice `id` through `register_payment`: its answer.
pub(super) async fn pay<R>(
    env: &Env<'_, R>,
    by: &Actor,
    id: &str,
    asked: Asked<'_>,
) -> Ran<answers::PaymentRegistered> {
    let input = payment_input(env, by, id, asked).await?;
    // What a request's record keeps: the answer `RegisterPayment` gives.
    let answer = |event: &Written<PaymentEvent>| {
        let booked = EventAnswer::from_json(event.answer());
        (Made::Done, answers::PaymentRegistered::Booked(booked))
    };
    let decision = registering(env.store, &input);
    let (registered, made, answer) = env.answered(decision, answer, Refused::from).await?;
    not_reused_payment(env, &input, &registered).await?;
    Ok((made, answer))
}

/// Books `input` with what else its transaction holds (`also`: its keys and steps): both, or
/// neither. A payment stored before it (by an earlier release) gets only what else it holds.
/// `None`: nothing booked, because what it holds moved (a review item resolved meanwhile).
pub(super) async fn pay_settling<R>(
    env: &Env<'_, R>,
    (input, link): (&PaymentInput, Option<&Link<'_>>),
    (keys, more): (Vec<String>, More<PaymentEvent, PaymentError>),
) -> Result<Option<Written<PaymentEvent>>, Refused> {
    let also = Also::new(registering_linked(env.store, input, link), keys, more);
    let refused = |e: PaymentError| match e {
        PaymentError::LinkMoved => None,
        e => Some(Refused::from(e)),
    };
    let written = match env.apply(also, refused).await {
        Ok(written) => written,
        Err(None) => return Ok(None),
        Err(Some(refused)) => return Err(refused),
    };
    // Its identity stored with another payment (another invoice or amount): nothing moves.
    if matches!(written, Written::Conflict { .. }) {
        return Err(Refused::conflict(
            "payment_conflict",
            "the payment this decision books was stored before as another payment; nothing moved",
        ));
    }
    Ok(written.value().1.then(|| written.map(|(event, _)| event)))
}

/// A payment's answer, once its key is known not to be another request's.
pub(super) async fn booked<R>(
    env: &Env<'_, R>,
    input: &PaymentInput,
    registered: Written<PaymentEvent>,
) -> Result<Value, Refused> {
    not_reused_payment(env, input, &registered).await?;
    Ok(registered.answer())
}

/// `Ok` for a new payment or a true repeat; a payment's key sent again with another body is a
/// review item for a person and the conflict the caller is refused (`not_reused`).
async fn not_reused_payment<R>(
    env: &Env<'_, R>,
    input: &PaymentInput,
    registered: &Written<PaymentEvent>,
) -> Result<(), Refused> {
    let key = input.event_key();
    not_reused(
        env.store,
        &input.org,
        Kind::Payment,
        &key,
        registered,
        env.now,
    )
    .await
}

/// What `asked` on invoice `id` books, as `by`: the invoice read for its currency, the amount
/// read in it, the actor named.
pub(super) async fn payment_input<R>(
    env: &Env<'_, R>,
    by: &Actor,
    id: &str,
    asked: Asked<'_>,
) -> Result<PaymentInput, Refused> {
    let org = by.org();
    let actor = fields::optional(asked.actor, |r| fields::reference("actor", r, REF_MAX))?;
    asked.amount.map(|a| a.decimal("amount")).transpose()?;
    let invoice = invoice::get(env.store, org, id)
        .await?
        .ok_or_else(|| Refused::not_found("invoice"))?;
    let amount = (asked.amount)
        .map(|a| a.in_currency("amount", invoice.currency))
        .transpose()?;
    let input = PaymentInput {
        org: org.clone(),
        invoice_ref: Some(id.to_owned()),
        // The key that asked is the actor; the body's `actor` only says for whom it acted.
        actor: match actor {
            Some(user) => format!("{}/{user}", by.id()),
            None => by.id(),
        },
        source: asked.source,
        external_id: asked.external_id,
        amount,
        currency: Some(invoice.currency),
        at: env.now,
        reverses: None,
        reversible: false,
        via: None,
    };
    Ok(input)
}

/// A payment on an invoice (the "paid" button, the assistant): `amount` or the open rest; the
/// request's key is its identity. A model's is a proposal for a person, never a booking.
#[derive(Debug)]
pub struct RegisterPayment {
    pub invoice_id: String,
    pub source: Source,
    pub amount: Option<AmountText>,
    /// For whom the key acted.
    pub actor: Option<String>,
}

impl Command for RegisterPayment {
    type Answer = answers::PaymentRegistered;
    const NAME: &'static str = "register_payment";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const FOR_MODEL: bool = true;
    const ONCE: Once = Once::ByEffect;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        key: &RequestKey,
    ) -> Ran<answers::PaymentRegistered> {
        let amount = self.amount.as_ref();
        if let Actor::Model { .. } = by {
            let proposed = propose(env, by, key, &self.invoice_id, amount).await?;
            return Ok((
                Made::Accepted,
                answers::PaymentRegistered::Proposed(proposed),
            ));
        }
        let asked = Asked {
            source: self.source,
            external_id: key.identity()?,
            amount,
            actor: self.actor.as_deref(),
        };
        pay(env, by, &self.invoice_id, asked).await
    }

    fn found_done(answer: &answers::PaymentRegistered) -> bool {
        matches!(answer, answers::PaymentRegistered::Booked(booked) if booked.is_repeat())
    }
}

/// A model's payment: one open `payment_proposed` review item for a person, keyed by the tool
/// call, holding what would be booked, what the invoice owes now and what led to it (its
/// trigger's message and sender). Nothing is booked and no invoice changes. A model asks at most
/// what is open, and a conversation holds at most three open proposals.
async fn propose<R>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    id: &str,
    amount: Option<&AmountText>,
) -> Result<answers::PaymentProposed, Refused> {
    let Actor::Model {
        org,
        rule_id,
        event_key,
        cause,
    } = by
    else {
        return Err(Refused::forbidden("only a model proposes"));
    };
    amount.map(|a| a.decimal("amount")).transpose()?;
    let invoice = invoice::get(env.store, org, id)
        .await?
        .ok_or_else(|| Refused::not_found("invoice"))?;
    let (open, amount) = (invoice.open(), at_most_open(&invoice, amount)?);
    let trigger =
        super::proposals::cause(env.store, org, (event_key.as_str(), cause), &invoice).await?;
    let proposal = super::proposals::Proposal {
        invoice_id: invoice.id.as_str().to_owned(),
        invoice_number: invoice.number.clone(),
        amount: invoice.currency.show(amount),
        currency: invoice.currency.as_str().to_owned(),
        rule_id: rule_id.clone(),
        event_key: event_key.as_str().to_owned(),
        call: key.id().to_owned(),
        open_now: invoice.currency.show(open),
        trigger,
    };
    let item = ReviewItem {
        org: org.clone(),
        kind: Kind::Payment,
        reason: Reason::PaymentProposed,
        key: format!("{rule_id}:{}", key.id()),
        at: env.now,
        detail: answers::json(&proposal),
    };
    let filed = match proposal.trigger.conversation_id.as_deref() {
        Some(conversation) => super::proposals::file(env, org, conversation, &item).await?,
        None => {
            let put = crate::store::PutOnce(item.to_item());
            env.apply(put, Refused::from).await?.is_new()
        }
    };
    Ok(answers::PaymentProposed {
        state: answers::Proposed::Proposed,
        review_key: item.key,
        filed,
        detail: item.detail,
    })
}

/// What a model may propose on `invoice`: `amount`, or all that is open, never more than that.
fn at_most_open(invoice: &Invoice, amount: Option<&AmountText>) -> Result<Decimal, Refused> {
    let open = invoice.open();
    if open <= Decimal::ZERO {
        let detail = "the invoice has nothing open";
        return Err(Refused::conflict("nothing_open", detail));
    }
    let amount = match amount {
        Some(a) => a.in_currency("amount", invoice.currency)?,
        None => open,
    };
    if amount > open {
        let show = |a| invoice.currency.show(a);
        let detail = format!("{} is more than the {} open", show(amount), show(open));
        return Err(Refused::conflict("exceeds_open", detail));
    }
    Ok(amount)
}

/// A credit note on an issued invoice.
#[derive(Debug)]
pub struct CreateCreditNote {
    pub invoice_id: String,
    pub note: CreditInput,
}

/// Issues a credit note on invoice `id` under the request's key: 201 with the note the first
/// time, 200 with the stored note for the same key and body, 409 for another body.
impl Command for CreateCreditNote {
    type Answer = CreditIssued;
    const NAME: &'static str = "create_credit_note";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByEffect;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        key: &RequestKey,
    ) -> Ran<CreditIssued> {
        let (id, body) = (self.invoice_id.as_str(), self.note);
        let lines = credit_lines(body.lines.unwrap_or_default())?;
        let new = NewCreditNote {
            org: by.org().clone(),
            invoice_id: id.to_owned(),
            key: key.identity()?,
            amount: body.amount.map(|a| a.decimal("amount")).transpose()?,
            reason: fields::line("reason", &body.reason, REASON_MAX)?.to_owned(),
            lines,
            actor: by.id(),
            at: env.now,
        };
        if LocalId::parse("invoice_id", id).is_err() {
            return Err(Refused::not_found("invoice"));
        }
        let answer = |note: &Written<credit::CreditNote>| {
            let made = if note.is_new() {
                Made::Created
            } else {
                Made::Done
            };
            (made, CreditIssued::of(note))
        };
        let issuing = credit::issuing(&new);
        let (issued, made, answer) = env.answered(issuing, answer, refused).await?;
        let event_key = new.event_key();
        not_reused(
            env.store,
            by.org(),
            Kind::Payment,
            &event_key,
            &issued,
            env.now,
        )
        .await?;
        Ok((made, answer))
    }

    fn found_done(answer: &CreditIssued) -> bool {
        answer.is_repeat()
    }
}

/// A credit note's lines as asked: at most `credit::LINES_MAX`, each described and an amount.
fn credit_lines(lines: Vec<CreditLineInput>) -> Result<Vec<CreditLine>, Refused> {
    if lines.len() > credit::LINES_MAX {
        return Err(Refused::field(
            "lines",
            "invalid_field",
            "at most 100 lines",
        ));
    }
    lines
        .iter()
        .map(|l| {
            Ok(CreditLine {
                description: fields::line("description", &l.description, TITLE_MAX)?.to_owned(),
                amount: l.amount.decimal("lines")?,
            })
        })
        .collect()
}

fn refused(e: CreditError) -> Refused {
    match e {
        CreditError::Store(e) => e.into(),
        CreditError::NoInvoice => Refused::not_found("invoice"),
        CreditError::NotIssued(_) => Refused::conflict("not_issued", e.to_string()),
        CreditError::Exceeds(_) => Refused::conflict("credit_exceeds_invoice", e.to_string()),
        CreditError::Amount(_) => Refused::field("amount", "invalid_amount", e.to_string()),
    }
}

/// A draft invoice voided.
#[derive(Debug)]
pub struct VoidInvoice {
    pub invoice_id: String,
}

/// Voids a draft invoice; a void one again gets the same answer (`duplicate: true`).
impl Command for VoidInvoice {
    type Answer = InvoiceVoided;
    const NAME: &'static str = "void_invoice";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<InvoiceVoided> {
        let id = self.invoice_id.as_str();
        let refused = |e: VoidError| match e {
            VoidError::Store(e) => e.into(),
            VoidError::NoInvoice => Refused::not_found("invoice"),
            VoidError::NotDraft(_) => Refused::conflict("not_draft", e.to_string()),
        };
        let decision = credit::voiding(by.org(), id).map_err(refused)?;
        let written = env.apply(decision, refused).await?;
        let voided = InvoiceVoided {
            duplicate: !written.is_new(),
            invoice: written.value().view(),
        };
        Ok((Made::Done, voided))
    }
}

/// The statuses a new invoice may be made in.
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // A document's type: the body reads `status` as text.
enum InvoiceStatusAsked {
    Open,
    Draft,
}

/// Amounts are strings in major units; the links are optional.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateInvoice {
    #[schema(example = "UAH")]
    currency: String,
    /// Major units, as many decimals as the currency has at most.
    #[schema(
        example = "100.00",
        pattern = "^(0*[1-9][0-9]{0,9}(\\.[0-9]{1,4}0*)?|0+\\.[0-9]{0,3}[1-9]0*)$",
        max_length = 32
    )]
    gross: String,
    /// The member notified of its payments; without one, the whole team is. Each link is 1 to
    /// 128 bytes, without white space, control characters or `#`.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\s#\\x00-\\x1f\\x7f-\\x9f\\uFFFE\\uFFFF]+$"
    )]
    owner: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\s#\\x00-\\x1f\\x7f-\\x9f\\uFFFE\\uFFFF]+$"
    )]
    contact_id: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\s#\\x00-\\x1f\\x7f-\\x9f\\uFFFE\\uFFFF]+$"
    )]
    deal_id: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\s#\\x00-\\x1f\\x7f-\\x9f\\uFFFE\\uFFFF]+$"
    )]
    company_id: Option<String>,
    /// `open` (default: issued, takes payments) or `draft` (not issued yet; can be voided).
    #[schema(value_type = Option<InvoiceStatusAsked>)]
    status: Option<String>,
}

/// A new invoice, numbered from the organisation's series: 201 and the invoice.
impl Command for CreateInvoice {
    type Answer = crate::payments::invoice::InvoiceView;
    const NAME: &'static str = "create_invoice";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::Each;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<crate::payments::invoice::InvoiceView> {
        let body = &self;
        let currency = Currency::parse(&body.currency)
            .map_err(|e| Refused::invalid("invalid_currency", e.to_string()))?;
        let new = NewInvoice {
            currency,
            gross: parse_amount(&body.gross)
                .and_then(|gross| currency.check(gross))
                .map_err(|e| Refused::invalid("invalid_gross", e.to_string()))?,
            status: match body.status.as_deref() {
                None | Some("open") => InvoiceStatus::Open,
                Some("draft") => InvoiceStatus::Draft,
                Some(_) => {
                    return Err(Refused::invalid(
                        "invalid_status",
                        "status is open or draft",
                    ))
                }
            },
            links: links(body)?,
        };
        let created = env.apply(invoice::creating(by.org(), new), Refused::from);
        let created = created.await?;
        Ok((Made::Created, created.value().view()))
    }
}

/// The records an invoice links to: references, each within `REF_MAX` and without `#`.
fn links(body: &CreateInvoice) -> Result<Links, FieldError> {
    let link = |field: &'static str, raw: &Option<String>| {
        fields::optional(raw.as_deref(), |r| fields::reference(field, r, REF_MAX))
    };
    Ok(Links {
        owner: link("owner", &body.owner)?,
        contact_id: link("contact_id", &body.contact_id)?,
        deal_id: link("deal_id", &body.deal_id)?,
        company_id: link("company_id", &body.company_id)?,
    })
}

/// A copy on purpose: a new draft with the next number.
#[derive(Debug)]
pub struct DuplicateInvoice {
    pub invoice_id: String,
}

/// A copy on purpose: a new draft with a new number, never a retry.
impl Command for DuplicateInvoice {
    type Answer = InvoiceCopy;
    const NAME: &'static str = "duplicate_invoice";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::Each;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<InvoiceCopy> {
        let id = self.invoice_id.as_str();
        let original = invoice::get(env.store, by.org(), id)
            .await?
            .ok_or_else(|| Refused::not_found("invoice"))?;
        let copying = invoice::creating(
            by.org(),
            NewInvoice {
                currency: original.currency,
                gross: original.gross,
                status: InvoiceStatus::Draft,
                links: original.links.clone(),
            },
        );
        let copy = env.apply(copying, Refused::from).await?;
        let answer = InvoiceCopy {
            invoice: copy.value().view(),
            duplicate_of: original.id.as_str().to_owned(),
        };
        Ok((Made::Created, answer))
    }
}
fn match_error(e: MatchError) -> Refused {
    match e {
        MatchError::NoRow => Refused::not_found("bank row"),
        MatchError::NoInvoice => Refused::not_found("invoice"),
        MatchError::NotACredit => Refused::conflict("not_a_credit",
            "the row is a debit: only credits pay invoices",
        ),
        MatchError::CurrencyMismatch { .. } => {
            Refused::conflict("currency_mismatch", e.to_string())
        }
        MatchError::NotMatched => Refused::conflict("not_matched", "the row is not matched"),
        MatchError::Unconfirmed => Refused::conflict("row_unconfirmed",
            "the bank's statement has not shown this row yet: send confirm_unconfirmed: true to match it anyway",
        ),
        MatchError::Contended => Refused::unavailable("contended", "the row kept changing; retry"),
        MatchError::Payment(p) => p.into(),
        MatchError::Store(s) => s.into(),
    }
}

/// A bank row matched to an invoice, or (`invoice_id: None`) its match undone;
/// `confirm_unconfirmed` is a person's say-so to match a row the statement has not confirmed yet.
#[derive(Debug)]
pub struct MatchBankRow {
    pub tx_id: String,
    pub invoice_id: Option<String>,
    pub confirm_unconfirmed: bool,
}

/// A bank row matched to an invoice (`invoice_id`), or its match undone (`None`): the row's
/// payment booked or reverted once through the bank's one match function.
impl Command for MatchBankRow {
    type Answer = answers::BankMatch;
    const NAME: &'static str = "match_bank_row";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<answers::BankMatch> {
        let (tx_id, (invoice_id, confirm_unconfirmed)) = (
            self.tx_id.as_str(),
            (self.invoice_id.as_deref(), self.confirm_unconfirmed),
        );
        use crate::bank::matching;
        // Who matched: the key (or the admin) as its payment's actor, with the time.
        let (org, by_id) = (by.org(), by.id());
        let actor = by_id.as_str();
        let Some(invoice_id) = invoice_id else {
            let unmatched = matching::unmatch_row(env.store, org, tx_id, actor, env.now)
                .await
                .map_err(match_error)?;
            let answer = BankUnmatched {
                reverted: crate::money::shown(
                    unmatched.reverted,
                    unmatched.invoice.as_ref().map(|i| i.currency),
                ),
                invoice: unmatched.invoice.as_ref().map(Invoice::view),
            };
            return Ok((Made::Done, answers::BankMatch::Unmatched(Box::new(answer))));
        };
        LocalId::parse("invoice_id", invoice_id).map_err(|_| Refused::not_found("invoice"))?;
        let asked = (actor, confirm_unconfirmed);
        let matched = matching::match_row(env.store, org, tx_id, invoice_id, asked, env.now)
            .await
            .map_err(match_error)?;
        let currency = matched.invoice.as_ref().map(|i| i.currency);
        let answer = BankMatched {
            duplicate: matched.duplicate,
            applied: crate::money::shown(matched.applied, currency),
            invoice: matched.invoice.as_ref().map(Invoice::view),
            previous_invoice: matched.previous.as_ref().map(Invoice::view),
            by: actor.to_owned(),
            at: crate::time::format(env.now),
        };
        Ok((Made::Done, answers::BankMatch::Matched(Box::new(answer))))
    }
}

/// Money onto the prepaid wallet.
#[derive(Debug)]
pub struct TopUp {
    pub amount: AmountText,
    pub currency: String,
}

/// A top-up of the prepaid wallet, once per request key.
impl Command for TopUp {
    type Answer = ToppedUp;
    const NAME: &'static str = "top_up";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByEffect;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        key: &RequestKey,
    ) -> Ran<ToppedUp> {
        let (amount, currency) = (&self.amount, self.currency.as_str());
        use crate::ledger::{self, Price, TOPUP_MAX};
        let key = key.identity()?;
        let currency = Currency::parse(currency)
            .map_err(|e| Refused::invalid("invalid_currency", e.to_string()))?;
        let amount = amount.in_currency("amount", currency)?;
        if amount > rust_decimal::Decimal::from(TOPUP_MAX) {
            return Err(Refused::invalid(
                "invalid_amount",
                format!("a top-up is at most {TOPUP_MAX}"),
            ));
        }
        let answer = |topped: &Written<ledger::TopUp>| (Made::Done, ToppedUp::of(topped));
        let decision = ledger::topup::topping(by.org(), &key, Price { amount, currency });
        let (written, made, topped) = env.answered(decision, answer, Refused::from).await?;
        let event = crate::ids::EventKey::new("topup", key.as_str());
        not_reused(env.store, by.org(), Kind::Wallet, &event, &written, env.now).await?;
        Ok((made, topped))
    }

    fn found_done(answer: &ToppedUp) -> bool {
        answer.is_repeat()
    }
}

/// A request keyed by its `Idempotency-Key` that came again with another body: a review item
/// for a person, and the conflict the caller is refused. `Ok` for a new request or a true repeat.
async fn not_reused<T>(
    store: &crate::store::Store,
    org: &crate::ids::OrgId,
    kind: Kind,
    key: &crate::ids::EventKey,
    written: &Written<T>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), Refused> {
    let Written::Conflict { mismatch, .. } = written else {
        return Ok(());
    };
    let mut item = ReviewItem::mismatch(org, kind, key, mismatch, now, json!({}));
    item.reason = Reason::IdempotencyKeyReused;
    item.put(store).await?;
    Err(super::idempotency_key_reused())
}
