//! Credit notes and void: `POST /api/invoices/{id}/credit-notes` once per `Idempotency-Key`, and
//! `POST /api/invoices/{id}/void` for a draft; both performed by `firmspace::commands`.

use crate::Ctx;
use firmspace::commands::{CreditInput, RequestKey};
use firmspace::http::{body_bytes, parse_json, ApiError};
use firmspace::store::Store;
use lambda_http::{Body, Response};

/// Issues a credit note on the invoice: 201 with the note the first time, 200 with the stored
/// note for the same key and body, 409 for the same key with another body.
pub async fn create(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let key = crate::invoices::idempotency_key(ctx)?;
    let note: CreditInput = parse_json(body_bytes(ctx.req))?;
    let command = firmspace::commands::money::CreateCreditNote {
        invoice_id: id.to_owned(),
        note,
    };
    let key = RequestKey::Header(key.as_str().to_owned());
    ctx.answer(store, key, command).await
}

/// Voids a draft invoice; a void one again gets the same answer (`duplicate: true`).
pub async fn void(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let command = firmspace::commands::money::VoidInvoice {
        invoice_id: id.to_owned(),
    };
    ctx.answer(store, RequestKey::None, command).await
}
