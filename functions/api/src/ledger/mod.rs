//! The prepaid wallet, its top-ups, finance's ledger export and the SMS inbox.

pub mod schemas;

use crate::paging;
use crate::route::{
    doc, Answer, Asked, FromRoute, In, Method, Op, OrgOp, Param, Route, IDEMPOTENCY_KEY,
};
use crate::Ctx;
use chrono::{DateTime, Utc};
use firmspace::commands::crm::RefundLedgerLine;
use firmspace::commands::money::TopUp;
use firmspace::http::{self, json_response, page_response, query, ApiError};
use firmspace::ledger::{export, inbox, wallet, LedgerLine};
use firmspace::store::lists::EventKind;
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Deserialize;
use utoipa::ToSchema;

/// A top-up: `amount` in major units, positive, at most 1000000 and the currency's fraction
/// digits, a decimal string or a JSON number (read from its JSON text, never through a float).
#[derive(Deserialize, ToSchema)]
pub struct NewTopUp {
    #[schema(inline)]
    amount: firmspace::commands::AmountText,
    /// ISO 4217; the wallet's first top-up sets its currency.
    #[schema(example = "USD")]
    currency: String,
}

/// `POST /api/wallet/topups`: once per `Idempotency-Key`.
impl FromRoute for TopUp {
    const SPENDS: Option<EventKind> = Some(EventKind::Sms);

    fn stored_now(answer: &firmspace::commands::money::ToppedUp) -> bool {
        !answer.is_repeat()
    }
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/wallet/topups",
                op: Op::Org(OrgOp::TopUp),
                summary: "Top up the prepaid wallet, once per Idempotency-Key",
                params: &[IDEMPOTENCY_KEY],
                body: Some(doc::<NewTopUp>),
                ok: &[(
                    200,
                    "booked, or the stored answer to the same key and body (`duplicate: true`)",
                )],
                answer: Answer::Performed,
                errors: &[
                    (
                        400,
                        "`missing_idempotency_key`, `invalid_idempotency_key`, `malformed`, \
                         `invalid_currency`, `invalid_amount` (not positive, over 1000000, or more \
                         fraction digits than the currency has), `currency_mismatch` (the wallet is in \
                         another currency)",
                    ),
                    (
                        409,
                        "`idempotency_key_reused`: the key came with another amount or currency (a \
                         review item is filed)",
                    ),
                ],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: NewTopUp = asked.body()?;
        Ok(Self {
            amount: body.amount,
            currency: body.currency,
        })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRefund {
    /// Why the line is given back: 1 to 500 characters.
    #[schema(example = "charged twice by the carrier")]
    reason: String,
}

/// `POST /api/ledger/{ledger_id}/refund`: a debit line given back once, whatever the request's
/// key (the refund is keyed by the line); the request itself once per `Idempotency-Key`.
impl FromRoute for RefundLedgerLine {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/ledger/{ledger_id}/refund",
        op: Op::Org(OrgOp::RefundLine),
        summary: "Give a debit line back: one refund line per debit at most, the wallet moved once",
        params: &[
            Param {
                name: "ledger_id",
                at: In::Path,
                required: true,
                doc: "the debit line's `ledger_id`, as the export shows it",
            },
            IDEMPOTENCY_KEY,
        ],
        body: Some(doc::<NewRefund>),
        ok: &[(
            200,
            "given back now, or before (`duplicate: true`: by a request under any key, or by the \
                     message's failure)",
        )],
        answer: Answer::Performed,
        errors: &[
            (
                400,
                "`missing_idempotency_key`, `invalid_idempotency_key`, `malformed`, \
                         `invalid_field` (`reason`: 1-500 characters)",
            ),
            (404, "`not_found`: no such ledger line in this organisation"),
            (
                409,
                "`not_a_debit` (a top-up or a refund line), `idempotency_key_reused`",
            ),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: NewRefund = asked.body()?;
        Ok(Self {
            ledger_id: asked.param("ledger_id").to_owned(),
            reason: body.reason,
        })
    }
}

/// `GET /api/wallet`.
pub async fn wallet(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let wallet = wallet::get(store, &ctx.org).await?;
    Ok(json_response(200, &wallet.to_json()))
}

/// `from` and `to` (RFC 3339, turned to UTC): required, `from` before `to`, at most
/// `WINDOW_MAX_DAYS` apart.
fn window(ctx: &Ctx<'_>) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let at = |name: &'static str| {
        let raw = query(ctx.req, name).ok_or_else(|| {
            ApiError::bad_request("missing_window", format!("{name} is required (RFC 3339)"))
        })?;
        firmspace::time::parse(&raw).ok_or_else(|| {
            ApiError::bad_request("invalid_window", format!("{name} is not an RFC 3339 time"))
        })
    };
    let (from, to) = (at("from")?, at("to")?);
    if from >= to || to - from > chrono::Duration::days(export::WINDOW_MAX_DAYS) {
        return Err(ApiError::bad_request(
            "invalid_window",
            format!(
                "from must be before to, at most {} days apart",
                export::WINDOW_MAX_DAYS
            ),
        ));
    }
    Ok((from, to))
}

async fn lines(store: &Store, ctx: &Ctx<'_>, path: &str) -> Result<export::Window, ApiError> {
    let (from, to) = window(ctx)?;
    let limit = paging::limit_of(ctx.req, path)?;
    let cursor = query(ctx.req, "cursor");
    export::window(store, &ctx.org, from, to, limit, cursor.as_deref())
        .await
        .map_err(|e| paging::read_error(e, cursor.as_deref()))
}

/// The most bytes one page of the ledger holds, its JSON or its CSV: what a Lambda answer carries
/// (6 MB, escaped in its envelope) with room to spare. A page cut short by it gives the cursor
/// after its last line.
const BODY_MAX: usize = 4 * 1024 * 1024;

/// `GET /api/ledger?from=&to=`: the lines booked in `[from, to)`, oldest first.
pub async fn ledger_json(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let window = lines(store, ctx, "/api/ledger").await?;
    let mut size = 0;
    let items: Vec<_> = window
        .lines
        .iter()
        .map(LedgerLine::view)
        .take_while(|view| {
            size += serde_json::to_string(view).map_or(0, |t| t.len() + 1);
            size <= BODY_MAX
        })
        .collect();
    let next = window.next_after(items.len());
    Ok(page_response(items, next))
}

/// `GET /api/ledger.csv?from=&to=`: the same lines as CSV; `X-Next-Cursor` when more remain.
pub async fn ledger_csv(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let window = lines(store, ctx, "/api/ledger.csv").await?;
    let (text, held) = export::csv_within(&window.lines, BODY_MAX);
    let next = window.next_after(held);
    let mut response = Response::builder()
        .status(200)
        .header("content-type", "text/csv; charset=utf-8")
        .header(http::NOSNIFF.0, http::NOSNIFF.1)
        .header(http::NO_STORE.0, http::NO_STORE.1)
        .header("content-disposition", "attachment; filename=\"ledger.csv\"");
    if let Some(next) = next {
        response = response.header("x-next-cursor", next);
    }
    Ok(response
        .body(Body::Text(text))
        .expect("status and headers are valid"))
}

/// `GET /api/inbox`: newest first, a page at a time.
pub async fn inbox(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let limit = paging::limit(ctx.req, 50, 200)?;
    let cursor = query(ctx.req, "cursor");
    let (lines, next) = inbox::page(store, &ctx.org, limit, cursor.as_deref())
        .await
        .map_err(|e| paging::read_error(e, cursor.as_deref()))?;
    let items = lines.iter().map(inbox::InboxLine::view).collect();
    Ok(page_response(items, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use firmspace::ids::OrgId;
    use firmspace::ledger::LineKind;
    use firmspace::money::Currency;

    fn line(org: &OrgId, id: &str) -> LedgerLine {
        LedgerLine {
            org: org.clone(),
            ledger_id: id.into(),
            kind: LineKind::Debit,
            amount: rust_decimal::Decimal::new(5, 2),
            currency: Currency::parse("USD").unwrap(),
            event_id: "e".repeat(255),
            integration_id: Some("in_1".into()),
            message_id: Some("m".repeat(255)),
            direction: Some(firmspace::messages::Direction::Outbound),
            inbox_id: Some("inb_1".into()),
            at: Utc::now(),
            applied: true,
            balance_after: rust_decimal::Decimal::ZERO,
        }
    }

    #[test]
    fn a_page_holds_what_a_lambda_answer_carries() {
        let org = OrgId::generate();
        // Ten thousand lines of the longest ids are more than a Lambda answer carries: a page
        // holds what fits.
        let many: Vec<LedgerLine> = (0..10_000)
            .map(|i| line(&org, &format!("led_{i}")))
            .collect();
        let (text, held) = export::csv_within(&many, BODY_MAX);
        assert!(text.len() <= BODY_MAX && held < many.len(), "{held}");
    }
}
