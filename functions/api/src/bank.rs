//! Bank integrations, CSV uploads and the rows: the CRM's side of the bank.

use crate::Ctx;
use firmspace::bank::csv::{self, FILE_MAX};
use firmspace::bank::files;
use firmspace::bank::import::Request;
use firmspace::bank::providers::BankProvider;
use firmspace::bank::UPLOAD_CONCURRENCY as CONCURRENCY;
use firmspace::bank::{self, Arrival, BankTx};
use firmspace::commands::{Command, RequestKey};
use firmspace::http::{body_bytes, json_response, query, ApiError};
use firmspace::ids::IntegrationId;
use firmspace::integrations::{self};
use firmspace::review::Kind;
use firmspace::store::item::Read;
use firmspace::store::Item;
use firmspace::store::Store;
use firmspace::webhook::answer::tell;
use lambda_http::{Body, Response};
use serde_json::{json, Value};

#[derive(serde::Deserialize, utoipa::ToSchema)]
pub struct MatchBody {
    /// The invoice to pay with the row (`inv_...`), open and in the row's currency.
    invoice_id: String,
}

/// `POST /api/bank/transactions/{tx_id}/match`.
pub async fn match_row(
    store: &Store,
    ctx: &Ctx<'_>,
    tx_id: &str,
) -> Result<Response<Body>, ApiError> {
    let body: MatchBody = firmspace::http::parse_json(body_bytes(ctx.req))?;
    let command = Command::MatchBankRow {
        tx_id: tx_id.to_owned(),
        invoice_id: Some(body.invoice_id),
    };
    let done = ctx.perform(store, RequestKey::State, command).await?;
    Ok(json_response(done.status, &done.answer))
}

/// `DELETE /api/bank/transactions/{tx_id}/match`.
pub async fn unmatch_row(
    store: &Store,
    ctx: &Ctx<'_>,
    tx_id: &str,
) -> Result<Response<Body>, ApiError> {
    let command = Command::MatchBankRow {
        tx_id: tx_id.to_owned(),
        invoice_id: None,
    };
    let done = ctx.perform(store, RequestKey::State, command).await?;
    Ok(json_response(done.status, &done.answer))
}

/// The organisation's bank integration `raw` as stored, its secrets left sealed (the api may
/// seal secrets but never open them), or 404.
async fn integration(
    store: &Store,
    ctx: &Ctx<'_>,
    raw: &str,
) -> Result<(IntegrationId, BankProvider, Item), ApiError> {
    let id = IntegrationId::parse(raw)
        .ok()
        .filter(|id| id.org == ctx.org)
        .ok_or_else(|| ApiError::not_found("integration"))?;
    let item = integrations::clear_item(store, &id)
        .await?
        .filter(|item| item.opt_str("integration_kind") == Some("bank"))
        .ok_or_else(|| ApiError::not_found("integration"))?;
    let provider = item.tag_of::<BankProvider>("provider")?;
    Ok((id, provider, item))
}

/// `POST /api/integrations/{id}/csv`: the whole file checked first (any bad row refuses it,
/// nothing written), then every row stored once.
pub async fn upload(
    store: &Store,
    settings: &crate::Settings,
    ctx: &Ctx<'_>,
    id: &str,
) -> Result<Response<Body>, ApiError> {
    let bytes = body_bytes(ctx.req);
    if bytes.len() > FILE_MAX {
        return Err(ApiError::new(
            413,
            "payload_too_large",
            "a CSV file is at most 5 MiB",
        ));
    }
    let (integration, provider, _) = integration(store, ctx, id).await?;
    if provider != BankProvider::Csv {
        return Err(ApiError::new(
            409,
            "not_a_csv_integration",
            "files are uploaded to a csv bank integration",
        ));
    }
    let rows = match csv::parse(bytes) {
        Ok(rows) => rows,
        Err(errors) => {
            let body = json!({
                "error": "invalid_csv",
                "detail": format!("{} line(s) refused; nothing was imported", errors.len()),
                "rows": errors,
            });
            return Ok(json_response(400, &body));
        }
    };
    if rows.len() > files::ROWS_AT_ONCE {
        return large(store, settings, ctx, &integration.id, (bytes, rows.len())).await;
    }
    let txs: Vec<BankTx> = rows
        .into_iter()
        .map(|row| BankTx::new(&ctx.org, &integration.id, "csv", row, Arrival::Csv, ctx.now))
        .collect();
    let rows = bank::store_rows(store, &txs, CONCURRENCY).await?;
    let context = json!({"integration_id": integration.id});
    let recorded = firmspace::webhook::Recorded {
        batch: Some(json!({
            "rows": txs.len(),
            "imported": rows.imported(),
            "duplicates": rows.duplicates(),
            "conflicts": rows.conflicts(),
        })),
        events: rows.written,
        stored_more: false,
        review_more: false,
    };
    let told = tell(store, &ctx.org, Kind::Bank, &recorded, context, ctx.now).await?;
    Ok(json_response(200, &told.answer))
}

/// A checked file of more than 5,000 rows: kept in the bucket and stored by the import worker;
/// 202 with the import and where to follow it. The same file again is the same import.
async fn large(
    store: &Store,
    settings: &crate::Settings,
    ctx: &Ctx<'_>,
    integration: &str,
    file: (&[u8], usize),
) -> Result<Response<Body>, ApiError> {
    let unavailable = |why: &str| {
        tracing::warn!(%why, "a large file could not be taken");
        ApiError::new(
            503,
            "imports_unavailable",
            "a file of more than 5000 rows is stored by the import worker, which cannot take it now; retry",
        )
    };
    let (Some(bucket), Some(queue)) = (settings.uploads.as_ref(), settings.imports.as_ref()) else {
        return Err(unavailable("no bucket or import queue is configured"));
    };
    let (import, new) = files::start(store, bucket, &ctx.org, integration, file, ctx.now)
        .await
        .map_err(|e| match e {
            files::FileError::Store(e) => e.into(),
            files::FileError::Bucket(why) => unavailable(&why),
        })?;
    if new || import.state() == "queued" {
        let request = Request::File {
            org: ctx.org.clone(),
            import_id: import.id.clone(),
        };
        queue
            .send(&request)
            .await
            .map_err(|why| unavailable(&why))?;
    }
    let mut answer = import.to_json();
    answer["duplicate"] = json!(!new);
    answer["status_url"] = json!(format!("/api/imports/{}", import.id));
    Ok(json_response(202, &answer))
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
    Ok(json_response(200, &import.to_json()))
}

/// `POST /api/integrations/{id}/import`: 202 `{"started": true}` when the request is queued,
/// `{"started": false, "reason": "running"}` while a run holds the statement window.
pub async fn start_import(
    store: &Store,
    imports: Option<&firmspace::bank::import::Requests>,
    ctx: &Ctx<'_>,
    id: &str,
) -> Result<Response<Body>, ApiError> {
    let (integration, provider, item) = integration(store, ctx, id).await?;
    if provider != BankProvider::Monobank {
        return Err(ApiError::new(
            409,
            "not_a_monobank_integration",
            "statements are imported for a monobank bank integration",
        ));
    }
    let digest = item.str_of("token_digest")?;
    if firmspace::bank::import::is_running(store, digest, ctx.now).await? {
        return Ok(json_response(
            202,
            &json!({"started": false, "reason": "running"}),
        ));
    }
    let imports = imports.ok_or_else(|| {
        ApiError::new(503, "imports_unavailable", "no import queue is configured")
    })?;
    let request = Request::Statement {
        integration_id: integration.clone(),
    };
    imports.send(&request).await.map_err(|why| {
        tracing::warn!(%why, "import request not queued");
        ApiError::new(
            503,
            "imports_unavailable",
            "the import could not be queued; retry",
        )
    })?;
    Ok(json_response(202, &json!({"started": true})))
}

/// `GET /api/bank/transactions?integration_id=...&limit=&cursor=`: newest first, a page at a time.
pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let raw = query(ctx.req, "integration_id").ok_or_else(|| {
        ApiError::bad_request("missing_integration_id", "integration_id is required")
    })?;
    let (integration, _, _) = integration(store, ctx, &raw).await?;
    let limit = crate::paging::limit(ctx.req, 50, 200)?;
    let cursor = query(ctx.req, "cursor");
    let (rows, next) = bank::list(store, &ctx.org, &integration.id, limit, cursor.as_deref())
        .await
        .map_err(|e| crate::paging::read_error(e, cursor.as_deref()))?;
    // The rows carry the integration's digest only; the caller named the integration.
    let items: Vec<Value> = rows
        .iter()
        .map(|row| {
            let mut shown = row.to_json();
            shown["integration_id"] = json!(raw);
            shown
        })
        .collect();
    let mut answer = json!({ "items": items });
    if let Some(next) = next {
        answer["cursor"] = json!(next);
    }
    Ok(json_response(200, &answer))
}
