//! Invoices: the balance that payments move, conditioned on `version`.

use crate::ids::{LocalId, OrgId};
use crate::money::Currency;
use crate::store::item::{n, Builder, Read};
use crate::store::{Cond, Decision, Index, Item, Plan, Seen, Step, Store, StoreError, Update};
use crate::time;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InvoiceStatus {
    Draft,
    Open,
    PartiallyPaid,
    Paid,
    Void,
}

impl InvoiceStatus {
    /// A closed invoice takes no more money: a payment for it is stored with applied 0.
    pub fn is_closed(self) -> bool {
        matches!(self, Self::Paid | Self::Void)
    }
}

/// The people and records an invoice belongs to; consequences of its payments go to them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links {
    pub owner: Option<String>,
    pub contact_id: Option<String>,
    pub deal_id: Option<String>,
    pub company_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoice {
    pub org: OrgId,
    pub id: LocalId,
    pub number: String,
    pub currency: Currency,
    pub gross: Decimal,
    pub paid: Decimal,
    /// What its credit notes took off the gross (never more than the gross).
    pub credited: Decimal,
    pub status: InvoiceStatus,
    pub version: u64,
    pub links: Links,
    pub created_at: DateTime<Utc>,
}

/// What the CRM asks for when it creates an invoice.
#[derive(Clone, Debug)]
pub struct NewInvoice {
    pub currency: Currency,
    pub gross: Decimal,
    pub status: InvoiceStatus,
    pub links: Links,
}

pub fn invoice_pk(org: &OrgId, id: &str) -> String {
    org.pk(&format!("INVOICE#{id}"))
}

impl Invoice {
    /// What is still to pay: the gross less its credit notes and its payments.
    pub fn open(&self) -> Decimal {
        (self.net() - self.paid).max(Decimal::ZERO)
    }

    /// The gross less what its credit notes took off: what the customer owes in all.
    pub fn net(&self) -> Decimal {
        self.gross - self.credited
    }

    pub fn pk(&self) -> String {
        invoice_pk(&self.org, self.id.as_str())
    }

    pub fn to_item(&self) -> Item {
        Builder::new(&self.pk(), "invoice", self.org.as_str())
            .str("id", self.id.as_str())
            .str("number", &self.number)
            .str("currency", self.currency.as_str())
            .num("gross", self.gross)
            .num("paid", self.paid)
            .num("credited", self.credited)
            .tag("status", &self.status)
            .num("version", self.version)
            .opt_str("owner", self.links.owner.clone())
            .opt_str("contact_id", self.links.contact_id.clone())
            .opt_str("deal_id", self.links.deal_id.clone())
            .opt_str("company_id", self.links.company_id.clone())
            .time("created_at", self.created_at)
            .keys_list(
                &list_pk(&self.org),
                &format!("{}#{}", time::format(self.created_at), self.number),
            )
            .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |detail: &str| StoreError::Malformed {
            pk: item.opt_str("pk").unwrap_or_default().to_owned(),
            detail: detail.to_owned(),
        };
        Ok(Self {
            org: OrgId::parse(item.str_of("org")?).map_err(|e| bad(&e.to_string()))?,
            id: LocalId::parse("id", item.str_of("id")?).map_err(|e| bad(&e.to_string()))?,
            number: item.str_of("number")?.to_owned(),
            currency: Currency::parse(item.str_of("currency")?).map_err(|e| bad(&e.to_string()))?,
            gross: item.dec_of("gross")?,
            paid: item.dec_of("paid")?,
            // Stored before credit notes: none.
            credited: match item.get("credited") {
                Some(_) => item.dec_of("credited")?,
                None => Decimal::ZERO,
            },
            status: item.tag_of("status")?,
            version: item.u64_of("version")?,
            links: Links {
                owner: item.opt_str("owner").map(str::to_owned),
                contact_id: item.opt_str("contact_id").map(str::to_owned),
                deal_id: item.opt_str("deal_id").map(str::to_owned),
                company_id: item.opt_str("company_id").map(str::to_owned),
            },
            created_at: item.time_of("created_at")?,
        })
    }

    /// The invoice as every answer shows it.
    pub fn view(&self) -> InvoiceView {
        InvoiceView {
            id: self.id.as_str().to_owned(),
            number: self.number.clone(),
            currency: self.currency.as_str(),
            gross: self.currency.show(self.gross),
            paid: self.currency.show(self.paid),
            credited: self.currency.show(self.credited),
            open: self.currency.show(self.open()),
            status: self.status,
            version: self.version,
            owner: self.links.owner.clone(),
            contact_id: self.links.contact_id.clone(),
            deal_id: self.links.deal_id.clone(),
            company_id: self.links.company_id.clone(),
            created_at: time::format(self.created_at),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("an invoice's view serialises")
    }
}

/// An invoice as every answer shows it: the type the answers are made of and the OpenAPI
/// document describes (`Invoice`), so the two cannot drift. Amounts are strings in major units
/// with the currency's digits.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Invoice)]
pub struct InvoiceView {
    #[schema(example = "inv_0123456789abcdef")]
    pub id: String,
    #[schema(example = "INV-00001")]
    pub number: String,
    #[schema(example = "UAH")]
    pub currency: &'static str,
    #[schema(example = "100.00")]
    pub gross: String,
    pub paid: String,
    /// What its credit notes took off the gross.
    pub credited: String,
    /// The gross less what is credited and what is paid.
    pub open: String,
    pub status: InvoiceStatus,
    /// Moves with every payment applied and every credit note.
    pub version: u64,
    pub owner: Option<String>,
    pub contact_id: Option<String>,
    pub deal_id: Option<String>,
    pub company_id: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// The item that finds an invoice by its number (`INV-00042`), written with the invoice.
fn number_pk(org: &OrgId, number: &str) -> String {
    org.pk(&format!("INVOICE_NUMBER#{number}"))
}

/// The invoices these numbers name (a number no invoice has is left out), in one read.
pub async fn by_numbers(
    store: &Store,
    org: &OrgId,
    numbers: &[String],
) -> Result<Vec<Invoice>, StoreError> {
    if numbers.is_empty() {
        return Ok(Vec::new());
    }
    let pks: Vec<String> = numbers.iter().map(|n| number_pk(org, n)).collect();
    let pointers: Vec<Item> = store.get_many(&pks).await?.into_iter().flatten().collect();
    store
        .named_by(&pointers, "invoice_id", |id| invoice_pk(org, id))
        .await?
        .iter()
        .map(Invoice::from_item)
        .collect()
}

/// Creates an invoice with the organisation's next number (`INV-00001`, ...). The counter moves
/// and the invoice is written in one transaction, so a write that fails uses up no number; two
/// creations at once read the same counter, one wins, the other reads again.
pub async fn create(
    store: &Store,
    org: &OrgId,
    new: NewInvoice,
    now: DateTime<Utc>,
) -> Result<Invoice, StoreError> {
    Ok(store
        .write(&mut creating(org, new), now)
        .await?
        .into_value())
}

/// A new invoice's decision (its id made now), for a caller that writes it with more (a
/// request's record).
pub fn creating(
    org: &OrgId,
    new: NewInvoice,
) -> impl Decision<Out = Invoice, Error = StoreError> + '_ {
    Create {
        org,
        new,
        id: LocalId::generate("inv_"),
    }
}

/// An invoice's creation: the counter read, the next number taken in the same transaction.
struct Create<'a> {
    org: &'a OrgId,
    new: NewInvoice,
    id: LocalId,
}

impl Decision for Create<'_> {
    type Out = Invoice;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        vec![self.org.pk("COUNTER#invoice")]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Invoice>, StoreError> {
        let org = self.org;
        let (number, count) = take_number(org, &org.pk("COUNTER#invoice"), seen.get(0))?;
        let invoice = Invoice {
            org: org.clone(),
            id: self.id.clone(),
            number: format!("INV-{number:05}"),
            currency: self.new.currency,
            gross: self.new.gross,
            paid: Decimal::ZERO,
            credited: Decimal::ZERO,
            status: self.new.status,
            version: 0,
            links: self.new.links.clone(),
            created_at: now,
        };
        let by_number = Builder::new(
            &number_pk(org, &invoice.number),
            "invoice_number",
            org.as_str(),
        )
        .str("invoice_id", invoice.id.as_str())
        .build();
        let steps = vec![
            count,
            Step::PutNew(invoice.to_item()),
            Step::PutNew(by_number),
        ];
        Ok(Plan::Write {
            steps,
            out: invoice,
        })
    }
}

/// The next number of a gap-free series (invoices, credit notes) from its counter item as read
/// (`None`: the series' first), and the step that takes it: written in the transaction that
/// stores the document, conditioned on the number read, so a failed write uses up no number and
/// two documents at once cannot take the same one.
pub(crate) fn take_number(
    org: &OrgId,
    counter_pk: &str,
    counter: Option<&Item>,
) -> Result<(u64, Step), StoreError> {
    let last = counter.map(|c| c.u64_of("n")).transpose()?;
    let number = last.unwrap_or(0) + 1;
    let step = match last {
        None => Step::PutNew(
            Builder::new(counter_pk, "counter", org.as_str())
                .num("n", number)
                .build(),
        ),
        Some(last) => Step::Update {
            pk: counter_pk.to_owned(),
            update: Update::new()
                .set("n", n(number))
                .when(Cond::Equals("n".into(), n(last))),
        },
    };
    Ok((number, step))
}

impl Links {
    /// One activity line per linked contact, deal and company, keyed `key`.
    pub fn activity(
        &self,
        org: &OrgId,
        key: &str,
        (kind, money): (&str, Option<(String, String, String)>),
        text: &str,
        at: DateTime<Utc>,
    ) -> Vec<crate::consequences::Consequence> {
        use crate::consequences::{ActivityLine, EntityKind};
        [
            (EntityKind::Contact, &self.contact_id),
            (EntityKind::Deal, &self.deal_id),
            (EntityKind::Company, &self.company_id),
        ]
        .into_iter()
        .filter_map(|(entity_kind, id)| Some((entity_kind, id.clone()?)))
        .map(|(entity_kind, entity_id)| {
            ActivityLine {
                org: org.clone(),
                entity_kind,
                entity_id,
                key: key.to_owned(),
                kind: kind.into(),
                text: text.to_owned(),
                at,
                money: money.clone(),
            }
            .into()
        })
        .collect()
    }
}

pub async fn get(store: &Store, org: &OrgId, id: &str) -> Result<Option<Invoice>, StoreError> {
    if LocalId::parse("invoice_id", id).is_err() {
        return Ok(None);
    }
    store
        .get(&invoice_pk(org, id))
        .await?
        .map(|item| Invoice::from_item(&item))
        .transpose()
}

/// The organisation's invoices, newest first.
/// An organisation's invoices, a list of keys alone (`gsi3`): a payment changes an invoice but
/// not its place on the list, so it writes no index entry (on a list of whole items it wrote
/// one each time).
fn list_pk(org: &OrgId) -> String {
    org.pk("INVOICES")
}

pub async fn list(store: &Store, org: &OrgId, limit: i32) -> Result<Vec<Invoice>, StoreError> {
    let list = list_pk(org);
    let (listed, _) = store
        .page_in(Index::Keys, &list, None, true, limit, None)
        .await?;
    let pks: Vec<String> = listed
        .iter()
        .filter_map(|i| i.opt_str("pk").map(str::to_owned))
        .collect();
    let mut items: Vec<Item> = store.get_many(&pks).await?.into_iter().flatten().collect();
    // Invoices made before their list held keys alone are on the first index, whole.
    let legacy = store.list(&list, true, limit).await?;
    let listed: std::collections::HashSet<&str> = pks.iter().map(String::as_str).collect();
    items.extend(
        legacy
            .into_iter()
            .filter(|i| i.opt_str("pk").is_some_and(|pk| !listed.contains(pk))),
    );
    let mut invoices = items
        .iter()
        .map(Invoice::from_item)
        .collect::<Result<Vec<_>, _>>()?;
    invoices.sort_by(|a, b| (b.created_at, &b.number).cmp(&(a.created_at, &a.number)));
    invoices.truncate(usize::try_from(limit).unwrap_or(0));
    Ok(invoices)
}

/// The payments list of an invoice, oldest first.
pub fn payments_list_pk(org: &OrgId, invoice_id: &str) -> String {
    org.pk(&format!("INVOICE#{invoice_id}#PAYMENTS"))
}
