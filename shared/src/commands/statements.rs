//! A bank's statements asked for by a person: a CSV file uploaded (checked whole, then every
//! row stored once; a large file kept for the import worker), a monobank import started now.

use super::answers::{self, CsvImported, FileAccepted, ImportStarted};
use super::{Actor, Env};
use crate::bank::csv::{self, FILE_MAX};
use crate::bank::files;
use crate::bank::import::Request;
use crate::bank::providers::BankProvider;
use crate::bank::UPLOAD_CONCURRENCY as CONCURRENCY;
use crate::bank::{self, Arrival, BankTx};
use crate::commands::{Command, Once, Ran, Replies, RequestKey};
use crate::commands::{Made, Refused};
use crate::delivery::tell;
use crate::ids::{IntegrationId, OrgId};
use crate::integrations;
use crate::orgs::Scope;
use crate::review::Kind;
use crate::store::item::Read;
use crate::store::{Item, Store};
use serde_json::json;

/// Where statements go beyond the table: large files' bucket and the import worker's queue
/// (the api's; without them a large file or an import now is 503).
#[derive(Clone, Copy, Default)]
pub struct Imports<'a> {
    pub uploads: Option<&'a files::Bucket>,
    pub requests: Option<&'a crate::bank::import::Requests>,
}

/// The organisation's bank integration `raw` as stored, its secrets left sealed (the api may
/// seal secrets but never open them), or 404.
pub async fn bank_integration(
    store: &Store,
    org: &OrgId,
    raw: &str,
) -> Result<(IntegrationId, BankProvider, Item), Refused> {
    let id = IntegrationId::parse(raw)
        .ok()
        .filter(|id| id.org == *org)
        .ok_or_else(|| Refused::not_found("integration"))?;
    let item = integrations::clear_item(store, &id)
        .await?
        .filter(|item| item.opt_str("integration_kind") == Some("bank"))
        .ok_or_else(|| Refused::not_found("integration"))?;
    let provider = item.tag_of::<BankProvider>("provider")?;
    Ok((id, provider, item))
}

/// A bank's CSV file, uploaded to its csv integration.
#[derive(Debug)]
pub struct UploadStatement {
    pub integration_id: String,
    pub file: Vec<u8>,
}

/// `POST /api/integrations/{id}/csv`: the whole file checked first (any bad row refuses it,
/// nothing written), then every row stored once.
impl Command for UploadStatement {
    type Answer = answers::StatementUploaded;
    const NAME: &'static str = "upload_statement";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<answers::StatementUploaded> {
        let (id, bytes) = (self.integration_id.as_str(), self.file.as_slice());
        let (store, org, now) = (env.store, by.org(), env.now);
        if bytes.len() > FILE_MAX {
            return Err(Refused::too_large(
                "payload_too_large",
                "a CSV file is at most 5 MiB",
            ));
        }
        let (integration, provider, _) = bank_integration(store, org, id).await?;
        if provider != BankProvider::Csv {
            return Err(Refused::conflict(
                "not_a_csv_integration",
                "files are uploaded to a csv bank integration",
            ));
        }
        let rows = match csv::parse(bytes) {
            Ok(rows) => rows,
            Err(errors) => {
                let detail = format!("{} line(s) refused; nothing was imported", errors.len());
                let refused = Refused::invalid("invalid_csv", detail).with("rows", json!(errors));
                return Err(refused);
            }
        };
        if rows.len() > files::ROWS_AT_ONCE {
            return large(env, org, &integration.id, (bytes, rows.len())).await;
        }
        let txs: Vec<BankTx> = rows
            .into_iter()
            .map(|row| BankTx::new(org, &integration.id, "csv", row, Arrival::Csv, now))
            .collect();
        let rows = bank::store_rows(store, &txs, CONCURRENCY).await?;
        let context = json!({"integration_id": integration.id});
        let imported = CsvImported {
            rows: txs.len(),
            imported: rows.imported(),
            duplicates: rows.duplicates(),
            conflicts: rows.conflicts(),
        };
        // The batch's answer is the file's, whatever its rows: `tell` files the conflicts.
        let recorded = crate::delivery::Recorded {
            batch: Some(answers::json(&imported)),
            events: rows.written,
            stored_more: false,
            review_more: false,
        };
        tell(store, org, Kind::Bank, &recorded, context, now).await?;
        Ok((Made::Done, answers::StatementUploaded::Imported(imported)))
    }
}

/// A checked file of more than 5,000 rows: kept in the bucket and stored by the import worker;
/// 202 with the import and where to follow it. The same file again is the same import.
async fn large<R>(
    env: &Env<'_, R>,
    org: &OrgId,
    integration: &str,
    file: (&[u8], usize),
) -> Result<(Made, answers::StatementUploaded), Refused> {
    let unavailable = |why: &str| {
        tracing::warn!(%why, "a large file could not be taken");
        Refused::unavailable("imports_unavailable",
            "a file of more than 5000 rows is stored by the import worker, which cannot take it now; retry",
        )
    };
    let (Some(bucket), Some(queue)) = (env.imports.uploads, env.imports.requests) else {
        return Err(unavailable("no bucket or import queue is configured"));
    };
    let (import, new) = files::start(env.store, bucket, org, integration, file, env.now)
        .await
        .map_err(|e| match e {
            files::FileError::Store(e) => e.into(),
            files::FileError::Bucket(why) => unavailable(&why),
        })?;
    // A file sent again asks for its next step again when none is coming: queued, or stopped
    // (its step's message reached the DLQ, or was lost).
    if new || import.wants_a_step(env.now) {
        let request = Request::File {
            org: org.clone(),
            import_id: import.id.clone(),
        };
        queue
            .send(&request)
            .await
            .map_err(|why| unavailable(&why))?;
    }
    let answer = FileAccepted {
        status_url: format!("/api/imports/{}", import.id),
        import: import.view(),
        duplicate: !new,
    };
    Ok((Made::Accepted, answers::StatementUploaded::Accepted(answer)))
}

/// A monobank integration's statement imported now.
#[derive(Debug)]
pub struct StartImport {
    pub integration_id: String,
}

/// `POST /api/integrations/{id}/import`: 202 `{"started": true}` when the request is queued,
/// `{"started": false, "reason": "running"}` while a run holds the statement window.
impl Command for StartImport {
    type Answer = ImportStarted;
    const NAME: &'static str = "start_import";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<ImportStarted> {
        let id = self.integration_id.as_str();
        let store = env.store;
        let (integration, provider, item) = bank_integration(store, by.org(), id).await?;
        if provider != BankProvider::Monobank {
            return Err(Refused::conflict(
                "not_a_monobank_integration",
                "statements are imported for a monobank bank integration",
            ));
        }
        let digest = item.str_of("token_digest")?;
        if crate::bank::import::is_running(store, digest, env.now).await? {
            let answer = ImportStarted {
                started: false,
                reason: Some("running"),
            };
            return Ok((Made::Accepted, answer));
        }
        let imports = env.imports.requests.ok_or_else(|| {
            Refused::unavailable("imports_unavailable", "no import queue is configured")
        })?;
        let request = Request::Statement {
            integration_id: integration.clone(),
        };
        imports.send(&request).await.map_err(|why| {
            tracing::warn!(%why, "import request not queued");
            Refused::unavailable(
                "imports_unavailable",
                "the import could not be queued; retry",
            )
        })?;
        let answer = ImportStarted {
            started: true,
            reason: None,
        };
        Ok((Made::Accepted, answer))
    }
}
