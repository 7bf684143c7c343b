//! Credit notes and void: `POST /api/invoices/{id}/credit-notes` once per `Idempotency-Key`, and
//! `POST /api/invoices/{id}/void` for a draft; both performed by `firmspace::commands`.

use crate::route::{
    doc, path, Answer, Asked, FromRoute, Method, Op, OrgOp, Route, IDEMPOTENCY_KEY, INVOICE_ID,
    NO_INVOICE,
};
use firmspace::commands::money::{CreateCreditNote, VoidInvoice};
use firmspace::http::ApiError;

/// A credit note on the invoice: 201 with the note the first time, 200 with the stored note for
/// the same key and body, 409 for the same key with another body.
impl FromRoute for CreateCreditNote {
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/invoices/{id}/credit-notes",
                op: Op::Org(OrgOp::CreditInvoice),
                summary: "Issue a credit note (CN-00001, ...) on an invoice, once per `Idempotency-Key`",
                params: &[path("id", "the invoice's id (`inv_...`)"), IDEMPOTENCY_KEY],
                body: Some(doc::<firmspace::commands::CreditInput>),
                ok: &[
                    (201, "issued"),
                    (200, "the same key and body again: the stored note (`duplicate: true`)"),
                ],
                answer: Answer::Performed,
                errors: &[
                    (
                        400,
                        "`missing_idempotency_key`, `invalid_idempotency_key`, `malformed`, \
                         `invalid_amount` (not a positive amount in the invoice's currency, or not the \
                         lines' sum), `invalid_field` (`reason`, a line's `description`: 1-500 \
                         characters; at most 100 `lines`)",
                    ),
                    NO_INVOICE,
                    (
                        409,
                        "`credit_exceeds_invoice` (more than is left to credit), `not_issued` (a draft \
                         or void invoice), `idempotency_key_reused`",
                    ),
                ],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            invoice_id: asked.param("id").to_owned(),
            note: asked.body()?,
        })
    }
}

/// A draft invoice voided; a void one again gets the same answer (`duplicate: true`).
impl FromRoute for VoidInvoice {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/invoices/{id}/void",
        op: Op::Org(OrgOp::VoidInvoice),
        summary: "Void a draft invoice: it takes no payment from now on (idempotent)",
        params: INVOICE_ID,
        body: None,
        ok: &[(200, "void now, or void already (`duplicate: true`)")],
        answer: Answer::Performed,
        errors: &[
            NO_INVOICE,
            (
                409,
                "`not_draft`: an issued invoice is corrected by a credit note",
            ),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            invoice_id: asked.param("id").to_owned(),
        })
    }
}
