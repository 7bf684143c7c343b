//! An invoice as a person or an assistant reads it: the invoice with its payments and its
//! credit notes (`GET /api/invoices/{id}` and the `read_invoice` tool answer this one type).

use super::credit::{self, CreditNote, CreditNoteView};
use super::event::PaymentLineView;
use super::invoice::{self, InvoiceView};
use super::register::list_for_invoice;
use super::PaymentEvent;
use crate::ids::OrgId;
use crate::store::{Store, StoreError};
use serde::Serialize;
use utoipa::ToSchema;

/// An invoice with its payments and its credit notes.
#[derive(Serialize, ToSchema)]
pub struct InvoiceDetail {
    #[serde(flatten)]
    invoice: InvoiceView,
    payments: Vec<PaymentLineView>,
    /// Oldest first.
    credit_notes: Vec<CreditNoteView>,
}

/// The invoice `id` of `org` with its payments and credit notes; `None` when there is none.
pub async fn detail(
    store: &Store,
    org: &OrgId,
    id: &str,
) -> Result<Option<InvoiceDetail>, StoreError> {
    let Some(found) = invoice::get(store, org, id).await? else {
        return Ok(None);
    };
    let payments = list_for_invoice(store, org, id).await?;
    let notes = credit::list_for_invoice(store, org, id).await?;
    Ok(Some(InvoiceDetail {
        invoice: found.view(),
        payments: payments.iter().map(PaymentEvent::view).collect(),
        credit_notes: notes.iter().map(CreditNote::view).collect(),
    }))
}
