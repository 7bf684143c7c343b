//! Money a payment kept and a person put on an invoice follows that payment: when its provider
//! reverses the payment, the kept money applied elsewhere is taken back too, once (a reversal of
//! the approval's payment, under the key any other reversal of it would take). A reversal that
//! cannot be booked (the approval's payment is not there) is a review item of its own
//! (`reversal_without_payment`), as every reversal of nothing is.

use super::Unkeep;
use crate::payments::{register, reversal_id, PaymentError, PaymentInput, Source};
use crate::review::{decided_id, review_item_pk, APPLYING, KEPT};
use crate::store::item::Read;
use crate::store::Store;

/// Takes back every approval of money the reversed payment kept: how many were booked now.
pub async fn follow(store: &Store, unkeep: &Unkeep) -> Result<usize, PaymentError> {
    let org = &unkeep.org;
    let pks: Vec<String> = KEPT
        .iter()
        .map(|reason| review_item_pk(org, *reason, unkeep.reversed.as_str()))
        .collect();
    let items = store.get_many(&pks).await?;
    let mut reverted = 0;
    for (pk, item) in pks.iter().zip(items) {
        let Some(item) = item else {
            continue;
        };
        let applied =
            item.opt_str("decision") == Some("apply") || item.opt_str(APPLYING) == Some("apply");
        if !applied {
            continue;
        }
        let booked = decided_id(pk);
        let input = PaymentInput {
            org: org.clone(),
            invoice_ref: None,
            external_id: reversal_id(&booked),
            source: Source::Manual,
            amount: None,
            currency: None,
            at: unkeep.at,
            actor: format!("reversal:{}", unkeep.reversed),
            reverses: Some(booked),
            reversible: false,
            via: None,
        };
        let input = register::on_its_payments_invoice(store, input).await?;
        if register::register_payment(store, &input).await?.is_new() {
            reverted += 1;
        }
    }
    Ok(reverted)
}
