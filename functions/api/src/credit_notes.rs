//! Credit notes and void: `POST /api/invoices/{id}/credit-notes` once per `Idempotency-Key`, and
//! `POST /api/invoices/{id}/void` for a draft; both performed by `firmspace::commands`.

use crate::route::{Asked, FromRoute};
use firmspace::commands::money::{CreateCreditNote, VoidInvoice};
use firmspace::http::ApiError;

/// A credit note on the invoice: 201 with the note the first time, 200 with the stored note for
/// the same key and body, 409 for the same key with another body.
impl FromRoute for CreateCreditNote {
    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            invoice_id: asked.param("id").to_owned(),
            note: asked.body()?,
        })
    }
}

/// A draft invoice voided; a void one again gets the same answer (`duplicate: true`).
impl FromRoute for VoidInvoice {
    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            invoice_id: asked.param("id").to_owned(),
        })
    }
}
