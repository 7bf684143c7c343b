//! The automatic match of a stored credit row: the one open invoice of its currency that it
//! names, or a review item for a person; never over what a person did.

use super::{apply, row, BankTx, MatchError};
use crate::ids::OrgId;
use crate::payments::invoice::{self, Invoice};
use crate::payments::InvoiceStatus;
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::{Store, StoreError};
use chrono::{DateTime, Utc};
use serde_json::json;

/// The review reason of a credit row no single open invoice claims.
pub const UNMATCHED: Reason = Reason::UnmatchedBankRow;

/// Invoice numbers (`INV-00042`) a text names, each once, in order.
pub fn invoice_numbers(text: &str) -> Vec<String> {
    let upper = text.to_ascii_uppercase();
    let bytes = upper.as_bytes();
    let mut found: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(at) = upper[i..].find("INV-") {
        let start = i + at;
        let digits_from = start + 4;
        let digits = bytes[digits_from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if digits >= 5 && before_ok {
            let number = &upper[start..digits_from + digits];
            if !found.iter().any(|f| f == number) {
                found.push(number.to_owned());
            }
        }
        i = digits_from;
    }
    found
}

/// What the automatic match of a stored row did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auto {
    /// A debit, or a row matched already (by a person, or by an earlier delivery).
    Nothing,
    Matched {
        invoice_id: String,
    },
    /// No open invoice in the row's currency, or more than one: a review item for a person.
    Unmatched {
        candidates: usize,
    },
}

/// The invoice numbers a row's texts name, and the open invoices of its currency among them.
async fn candidates(store: &Store, tx: &BankTx) -> Result<(Vec<String>, Vec<Invoice>), StoreError> {
    let r = &tx.row;
    let text = [
        Some(&r.description),
        r.reference.as_ref(),
        r.counterparty.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(String::as_str)
    .collect::<Vec<_>>()
    .join(" ");
    let numbers = invoice_numbers(&text);
    let open = invoice::by_numbers(store, &tx.org, &numbers)
        .await?
        .into_iter()
        .filter(|inv| {
            inv.currency == r.currency
                && matches!(
                    inv.status,
                    InvoiceStatus::Open | InvoiceStatus::PartiallyPaid
                )
        })
        .collect();
    Ok((numbers, open))
}

/// Matches a newly stored credit row to the one open invoice of its currency that its
/// description, reference or counterparty names; otherwise files `unmatched_bank_row`.
pub async fn auto_match(
    store: &Store,
    org: &OrgId,
    tx_id: &str,
    now: DateTime<Utc>,
) -> Result<Auto, MatchError> {
    let tx = row(store, org, tx_id).await?;
    // Only a row nobody has matched or unmatched yet: the machine never overrides a person,
    // also when its message comes again after a person acted.
    if !tx.row.is_credit() || tx.match_seq != 0 {
        return Ok(Auto::Nothing);
    }
    // A pushed row pays only once a statement has shown it (its confirmation sends it again).
    if tx.confirmed_at.is_none() {
        return Ok(Auto::Nothing);
    }
    let r = &tx.row;
    let (numbers, open) = candidates(store, &tx).await?;
    if let [only] = open.as_slice() {
        return Ok(
            match apply(store, &tx, only.id.as_str(), "bank", now).await? {
                Some(_) => Auto::Matched {
                    invoice_id: only.id.as_str().to_owned(),
                },
                // A person matched it meanwhile.
                None => Auto::Nothing,
            },
        );
    }
    ReviewItem {
        org: org.clone(),
        kind: Kind::Bank,
        reason: UNMATCHED,
        key: tx_id.to_owned(),
        at: now,
        detail: json!({
            "tx_id": tx_id,
            "amount": r.currency.show(r.amount),
            "currency": r.currency.as_str(),
            "description": r.description,
            "reference": r.reference,
            "invoice_numbers": numbers,
            "open_invoices": open.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
        }),
    }
    .put(store)
    .await?;
    Ok(Auto::Unmatched {
        candidates: open.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invoice_numbers_are_found_whole_and_once() {
        assert_eq!(
            invoice_numbers("Payment for inv-00042, thanks"),
            ["INV-00042"]
        );
        assert_eq!(
            invoice_numbers("INV-00042 INV-00043 and INV-00042 again"),
            ["INV-00042", "INV-00043"]
        );
        assert!(invoice_numbers("XINV-00042 INV-42 INV-").is_empty());
        assert_eq!(invoice_numbers("INV-000420"), ["INV-000420"]);
    }
}
