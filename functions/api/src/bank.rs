//! Bank integrations, CSV uploads and the rows: the CRM's side of the bank.

use crate::route::{doc, path, Answer, Asked, FromRoute, Method, Op, OrgOp, Route, MALFORMED, OK};
use crate::Ctx;
use firmspace::bank::files;
use firmspace::bank::{self, BankTxView};
use firmspace::commands::answers::StatementUploaded;
use firmspace::commands::money::MatchBankRow;
use firmspace::commands::statements::bank_integration;
use firmspace::commands::statements::{StartImport, UploadStatement};
use firmspace::http::{body_bytes, page_response, query, typed_response, ApiError};
use firmspace::store::lists::EventKind;
use firmspace::store::Store;
use lambda_http::{Body, Response};

#[derive(serde::Deserialize, utoipa::ToSchema)]
pub struct MatchBody {
    /// The invoice to pay with the row (`inv_...`), open and in the row's currency.
    invoice_id: String,
    /// Match a row the bank's statement has not confirmed yet (409 `row_unconfirmed` without).
    #[serde(default)]
    confirm_unconfirmed: bool,
}

/// `POST /api/bank/transactions/{tx_id}/match` (the invoice in the body), and its undoing,
/// `DELETE` of the same path.
impl FromRoute for MatchBankRow {
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/bank/transactions/{tx_id}/match",
                op: Op::Org(OrgOp::MatchBankTx),
                summary: "Match a credit row to an invoice (a re-match takes the money back from the old one first)",
                params: &[path("tx_id", "the row's `tx_id` (`btx_...`)")],
                body: Some(doc::<MatchBody>),
                ok: &[(200, "matched; `duplicate: true` when it was matched to this invoice already")],
                answer: Answer::One(doc::<firmspace::commands::answers::BankMatched>),
                errors: &[
                    MALFORMED,
                    (404, "`not_found`: no such row or invoice in this organisation"),
                    (409, "`not_a_credit`, `currency_mismatch`"),
                    (503, "`contended`: the row kept changing; retry"),
                ],
            },
            Route {
                method: Method::Delete,
                path: "/api/bank/transactions/{tx_id}/match",
                op: Op::Org(OrgOp::UnmatchBankTx),
                summary: "Unmatch a row: its money taken back from the invoice",
                params: &[path("tx_id", "the row's `tx_id` (`btx_...`)")],
                body: None,
                ok: OK,
                answer: Answer::One(doc::<firmspace::commands::answers::BankUnmatched>),
                errors: &[
                    (404, "`not_found`: no such row in this organisation"),
                    (409, "`not_matched`"),
                    (503, "`contended`: the row kept changing; retry"),
                ],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let tx_id = asked.param("tx_id").to_owned();
        if asked.op == OrgOp::UnmatchBankTx {
            return Ok(Self {
                tx_id,
                invoice_id: None,
                confirm_unconfirmed: false,
            });
        }
        let body: MatchBody = asked.body()?;
        Ok(Self {
            tx_id,
            invoice_id: Some(body.invoice_id),
            confirm_unconfirmed: body.confirm_unconfirmed,
        })
    }
}

/// `POST /api/integrations/{id}/csv`: the whole file checked first (any bad row refuses it,
/// nothing written), then every row stored once.
impl FromRoute for UploadStatement {
    const SPENDS: Option<EventKind> = Some(EventKind::BankRow);

    /// A file's rows stored now, one new at least (a large file queued stores them later).
    fn stored_now(answer: &StatementUploaded) -> bool {
        matches!(answer, StatementUploaded::Imported(file) if file.imported > 0)
    }
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/integrations/{id}/csv",
                op: Op::Org(OrgOp::UploadCsv),
                summary: "A bank's CSV export (Content-Type: text/csv, at most 5 MiB): every row stored once",
                params: &[path("id", "the csv bank integration's id")],
                body: None,
                ok: &[
                    (200, "up to 5,000 rows: stored now"),
                    (
                        202,
                        "more than 5,000 rows: checked whole, then stored by the import worker; the answer \
                         is the import (`FileAccepted`: as `GET /api/imports/{import_id}` shows it, with \
                         `status_url`, and `duplicate` for the same file again)",
                    ),
                ],
                answer: Answer::Performed,
                errors: &[
                    (
                        400,
                        "`invalid_csv` with `rows`: [{`line`, `error`}] (the header is line 1); nothing is written",
                    ),
                    (404, "`not_found`: no such bank integration in this organisation"),
                    (409, "`not_a_csv_integration`"),
                    (413, "`payload_too_large`: over 5 MiB"),
                ],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            integration_id: asked.param("id").to_owned(),
            file: body_bytes(asked.req).to_vec(),
        })
    }
}

/// `GET /api/imports/{id}`: a large file's import as it stands.
pub async fn file_import(
    store: &Store,
    ctx: &Ctx<'_>,
    id: &str,
) -> Result<Response<Body>, ApiError> {
    let import = files::get(store, &ctx.org, id)
        .await?
        .ok_or_else(|| ApiError::not_found("import"))?;
    Ok(typed_response(200, &import.view()))
}

/// `POST /api/integrations/{id}/import`: 202 `{"started": true}` when the request is queued,
/// `{"started": false, "reason": "running"}` while a run holds the statement window.
impl FromRoute for StartImport {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/integrations/{id}/import",
        op: Op::Org(OrgOp::StartImport),
        summary: "Import a monobank statement now (the schedule does every 5 minutes)",
        params: &[path("id", "the monobank bank integration's id")],
        body: None,
        ok: &[(
            202,
            "`started: true`, or `started: false, reason: running` while a run holds the window",
        )],
        answer: Answer::Performed,
        errors: &[
            (
                404,
                "`not_found`: no such bank integration in this organisation",
            ),
            (409, "`not_a_monobank_integration`"),
            (
                503,
                "`imports_unavailable`: the request could not be queued; retry",
            ),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            integration_id: asked.param("id").to_owned(),
        })
    }
}

/// `GET /api/bank/transactions?integration_id=...&limit=&cursor=`: newest first, a page at a time.
pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let raw = query(ctx.req, "integration_id").ok_or_else(|| {
        ApiError::bad_request("missing_integration_id", "integration_id is required")
    })?;
    let (integration, _, _) = bank_integration(store, &ctx.org, &raw).await?;
    let limit = crate::paging::limit(ctx.req, 50, 200)?;
    let cursor = query(ctx.req, "cursor");
    let (rows, next) = bank::list(store, &ctx.org, &integration.id, limit, cursor.as_deref())
        .await
        .map_err(|e| crate::paging::read_error(e, cursor.as_deref()))?;
    // The rows carry the integration's digest only; the caller named the integration.
    let items = rows
        .iter()
        .map(|row| BankTxView {
            integration_id: Some(raw.clone()),
            ..row.view()
        })
        .collect();
    Ok(page_response(items, next))
}
