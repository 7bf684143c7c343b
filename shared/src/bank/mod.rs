//! Bank: statement rows, each stored once under (integration, account, the bank's own row id),
//! whichever way it arrives (monobank's personal webhook, the scheduled statement import, a CSV
//! upload). The row's item is written with `attribute_not_exists`, so no "load the known ids and
//! filter" step is needed for correctness; overlapping imports and repeated uploads are harmless.

pub mod csv;
pub mod files;
pub mod import;
pub mod matching;
pub mod monobank;
pub mod providers;
mod record;
pub mod requests;

pub use record::{
    confirm, get, list, store_row, store_rows, BankRowAnswer, Rows, Stored, CONFIRMATION,
};

use crate::fields::{printable, KEY_MAX, NAME_MAX, TITLE_MAX};
use crate::ids::{integration_digest, OrgId};
use crate::money::Currency;
use crate::store::item::{Builder, Read};
use crate::store::lists::EventKind;
use crate::store::{Item, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Rows stored at once by a CSV upload and by a statement page.
pub const UPLOAD_CONCURRENCY: usize = 48;

/// The stored item's `kind`: one of the event kinds the stream hands to the fan-out.
pub const KIND: &str = "bank_tx";

/// One statement row as the bank gives it, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankRow {
    /// The bank's own id of the row (monobank's `id`, the CSV `id` column).
    pub id: String,
    pub time: DateTime<Utc>,
    /// Signed, in major units: a credit is above zero, a debit below.
    pub amount: Decimal,
    pub currency: Currency,
    pub description: String,
    pub counterparty: Option<String>,
    /// A payment reference or comment the payer wrote (monobank's `comment`).
    pub reference: Option<String>,
}

impl BankRow {
    /// The row with its texts made printable and its fields held to their limits.
    pub fn checked(mut self) -> Result<Self, String> {
        crate::fields::reference("id", &self.id, KEY_MAX).map_err(|e| e.to_string())?;
        if self.amount.is_zero() {
            return Err("amount: must not be zero".into());
        }
        self.currency
            .check(self.amount)
            .map_err(|e| format!("amount: {e}"))?;
        let cut =
            |text: String, max: usize| -> String { printable(text).chars().take(max).collect() };
        self.description = cut(self.description, TITLE_MAX);
        self.counterparty = self.counterparty.map(|c| cut(c, NAME_MAX));
        self.reference = self.reference.map(|r| cut(r, TITLE_MAX));
        Ok(self)
    }

    pub fn is_credit(&self) -> bool {
        self.amount > Decimal::ZERO
    }
}

/// How a row arrived (the first time; later arrivals are duplicates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    Webhook,
    Import,
    Csv,
}

/// The row's match to an invoice, kept on the row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    pub invoice_id: String,
    pub applied: Decimal,
    /// The external id of the `bank` payment that made it (`{tx_id}:{seq}`).
    pub ext: String,
}

/// A stored bank row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankTx {
    pub org: OrgId,
    /// The integration's digest (`IntegrationId::digest`): a monobank integration's id is the
    /// credential of its webhook, so no row carries it.
    pub integration: String,
    pub account: String,
    pub row: BankRow,
    pub via: Arrival,
    pub stored_at: DateTime<Utc>,
    /// The current match; set by matching, never by the row's arrival.
    pub matched: Option<Match>,
    /// How many times the row was matched or unmatched: each change is conditioned on it.
    pub match_seq: u64,
    /// When a statement the bank answered (the import, or a file a key uploaded) showed the
    /// row. A pushed row is unconfirmed until then: its only credential is a URL, so it is
    /// stored and shown but pays nothing (`consequences`) until the statement has it.
    pub confirmed_at: Option<DateTime<Utc>>,
}

/// A row's `tx_id` in the API (the bank's own id is its `id`): derived from its key (integration, account, the bank's id), so every
/// arrival of the row names the same item.
pub fn tx_id(org: &OrgId, integration_id: &str, account: &str, row_id: &str) -> String {
    tx_id_of(org, &integration_digest(integration_id), account, row_id)
}

fn tx_id_of(org: &OrgId, integration: &str, account: &str, row_id: &str) -> String {
    let digest = hex::encode(Sha256::digest(format!(
        "{org}|{integration}|{account}|{row_id}"
    )));
    format!("btx_{}", &digest[..24])
}

pub(crate) fn tx_pk(org: &OrgId, tx_id: &str) -> String {
    org.pk(&format!("BANKTX#{}", crate::ids::key_part(tx_id)))
}

/// The list of an integration's rows, by the integration's digest.
pub(crate) fn list_pk(org: &OrgId, integration_id: &str) -> String {
    org.pk(&format!("BANKTXS#{}", integration_digest(integration_id)))
}

impl BankTx {
    pub fn new(
        org: &OrgId,
        integration_id: &str,
        account: &str,
        row: BankRow,
        via: Arrival,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            org: org.clone(),
            integration: integration_digest(integration_id),
            account: account.to_owned(),
            row,
            via,
            stored_at: now,
            matched: None,
            match_seq: 0,
            confirmed_at: match via {
                Arrival::Webhook => None,
                Arrival::Import | Arrival::Csv => Some(now),
            },
        }
    }

    pub fn id(&self) -> String {
        tx_id_of(&self.org, &self.integration, &self.account, &self.row.id)
    }

    pub fn pk(&self) -> String {
        tx_pk(&self.org, &self.id())
    }

    /// The row's event key, `bank_tx:{tx_id}`.
    pub fn key(&self) -> crate::ids::EventKey {
        crate::ids::EventKey::new(KIND, &self.id())
    }

    /// What the row says: the same bank id with another time, amount, currency, description,
    /// counterparty, reference or account is another row, not a repeat. The texts count: the
    /// automatic match reads them, so a pushed row whose texts differ from the statement's is a
    /// conflict for a person, and only the statement's texts decide an invoice.
    pub fn fingerprint(&self) -> String {
        let r = &self.row;
        let canonical = format!(
            "{}|{}|{}|{}|{}|{}|{}",
            time::format(r.time),
            r.amount.normalize(),
            r.currency.as_str(),
            r.description,
            r.counterparty.as_deref().unwrap_or_default(),
            r.reference.as_deref().unwrap_or_default(),
            self.account
        );
        hex::encode(Sha256::digest(canonical))[..32].to_owned()
    }

    pub fn to_item(&self) -> Item {
        let r = &self.row;
        let id = self.id();
        Builder::new(&self.pk(), KIND, self.org.as_str())
            .str("tx_id", &id)
            .str("integration", &self.integration)
            .str("account", &self.account)
            .str("row_id", &r.id)
            .time("time", r.time)
            .num("amount", r.amount)
            .str("currency", r.currency.as_str())
            .str("description", &r.description)
            .opt_str("counterparty", r.counterparty.clone())
            .opt_str("reference", r.reference.clone())
            .tag("via", &self.via)
            .time("stored_at", self.stored_at)
            .num("match_seq", self.match_seq)
            .opt_str("confirmed_at", self.confirmed_at.map(time::format))
            .list(
                &self.org.pk(&format!("BANKTXS#{}", self.integration)),
                &format!("{}#{id}", time::format(r.time)),
            )
            .on_events(&self.org, EventKind::BankRow, (self.stored_at, &id))
            .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |detail: String| StoreError::Malformed {
            pk: item.opt_str("pk").unwrap_or_default().to_owned(),
            detail,
        };
        let org = OrgId::parse(item.str_of("org")?).map_err(|e| bad(e.to_string()))?;
        let currency = Currency::parse(item.str_of("currency")?).map_err(|e| bad(e.to_string()))?;
        let matched = match item.opt_str("match_invoice") {
            Some(invoice_id) => Some(Match {
                invoice_id: invoice_id.to_owned(),
                applied: item.dec_of("match_applied")?,
                ext: item.str_of("match_ext")?.to_owned(),
            }),
            None => None,
        };
        Ok(Self {
            org,
            integration: item.str_of("integration")?.to_owned(),
            account: item.str_of("account")?.to_owned(),
            row: BankRow {
                id: item.str_of("row_id")?.to_owned(),
                time: item.time_of("time")?,
                amount: item.dec_of("amount")?,
                currency,
                description: item.str_of("description")?.to_owned(),
                counterparty: item.opt_str("counterparty").map(str::to_owned),
                reference: item.opt_str("reference").map(str::to_owned),
            },
            via: item.tag_of("via")?,
            stored_at: item.time_of("stored_at")?,
            matched,
            match_seq: item.u64_of("match_seq").unwrap_or(0),
            // A row a statement brought is confirmed by its arrival, also when stored before
            // rows carried the time.
            confirmed_at: item.opt_time("confirmed_at").or_else(|| {
                (item.opt_str("via") != Some("webhook"))
                    .then(|| item.opt_time("stored_at"))
                    .flatten()
            }),
        })
    }

    /// A confirmed credit is matched to the invoice it names (through the matching queue); a
    /// debit, and a pushed credit the statement has not shown yet, have no consequence (its
    /// confirmation brings it: `record::confirm`).
    pub fn consequences(&self) -> Vec<crate::consequences::Consequence> {
        if !self.row.is_credit() || self.confirmed_at.is_none() {
            return Vec::new();
        }
        vec![crate::consequences::BankCredit {
            org: self.org.clone(),
            tx_id: self.id(),
            at: self.stored_at,
        }
        .into()]
    }

    /// The row as the API shows it.
    pub fn view(&self) -> BankTxView {
        let r = &self.row;
        BankTxView {
            id: r.id.clone(),
            tx_id: self.id(),
            integration: self.integration.clone(),
            integration_id: None,
            account: self.account.clone(),
            time: time::format(r.time),
            amount: r.currency.show(r.amount),
            currency: r.currency.as_str(),
            description: r.description.clone(),
            counterparty: r.counterparty.clone(),
            reference: r.reference.clone(),
            via: self.via,
            confirmed: self.confirmed_at.is_some(),
            matched: self.matched.as_ref().map(|m| BankMatchView {
                invoice_id: m.invoice_id.clone(),
                applied: r.currency.show(m.applied),
            }),
        }
    }
}

/// A bank statement row, stored once (`BankTransaction`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = BankTransaction)]
pub struct BankTxView {
    /// The bank's own id of the row (monobank's `id`, the CSV `id` column).
    pub id: String,
    /// Our id of the row, derived from (integration, account, `id`): what the match routes take.
    #[schema(example = "btx_0123456789abcdef01234567")]
    pub tx_id: String,
    /// The integration's digest: a monobank integration's id is its webhook's credential, so
    /// a row never carries it.
    pub integration: String,
    /// The integration's id, where the caller named it (the transactions list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration_id: Option<String>,
    pub account: String,
    /// RFC 3339, UTC.
    pub time: String,
    /// Signed, major units: a credit is above zero.
    #[schema(example = "40.00")]
    pub amount: String,
    pub currency: &'static str,
    pub description: String,
    pub counterparty: Option<String>,
    pub reference: Option<String>,
    /// How the row first arrived.
    pub via: Arrival,
    /// Whether a statement the bank answered (an import, an uploaded file) showed the row; a
    /// pushed row pays nothing until then.
    pub confirmed: bool,
    #[serde(rename = "match")]
    pub matched: Option<BankMatchView>,
}

/// A bank row's match to an invoice.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = BankMatch)]
pub struct BankMatchView {
    pub invoice_id: String,
    pub applied: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_texts_are_part_of_what_it_says() {
        let org = OrgId::generate();
        let row = |counterparty: &str, reference: &str| BankRow {
            id: "tx1".into(),
            time: crate::time::parse("2026-12-06T10:00:00Z").unwrap(),
            amount: rust_decimal_macros::dec!(40.00),
            currency: crate::money::Currency::parse("UAH").unwrap(),
            description: "Transfer".into(),
            counterparty: Some(counterparty.into()),
            reference: Some(reference.into()),
        };
        let tx = |r| BankTx::new(&org, "o1_ab", "0", r, Arrival::Webhook, Utc::now());
        let pushed = tx(row("Olena", "INV-00001"));
        assert_eq!(
            pushed.fingerprint(),
            tx(row("Olena", "INV-00001")).fingerprint()
        );
        assert_ne!(
            pushed.fingerprint(),
            tx(row("Olena", "INV-00002")).fingerprint()
        );
        assert_ne!(
            pushed.fingerprint(),
            tx(row("Someone", "INV-00001")).fingerprint()
        );
    }
}
