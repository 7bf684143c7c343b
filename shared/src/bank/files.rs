//! A CSV file of more than [`ROWS_AT_ONCE`] rows: checked whole at upload like any file, then
//! kept in the bucket and stored by the import worker [`PAGE`] rows a step, with a cursor (how
//! many rows are stored) on the file's import item, moved by a conditional write after each step.
//! The upload answers 202 at once with the import's id; `GET /api/imports/{id}` tells its progress.
//!
//! The import's id is the digest of (organisation, integration, file): the same file uploaded
//! again is the same import, answered with its progress, never a second one.

use super::{store_rows, Arrival, BankTx, Rows};
use crate::ids::OrgId;
use crate::store::item::{n, s, Builder, Read};
use crate::store::{Cond, Item, Store, StoreError, Update};
use aws_sdk_s3::primitives::ByteStream;
use chrono::{DateTime, Utc};
use serde_json::json;
use sha2::{Digest, Sha256};

/// Rows a file may have to be stored within its upload's request; beyond, the worker stores it.
pub const ROWS_AT_ONCE: usize = 5000;
/// Rows the worker stores in one step, before it moves the cursor.
pub const PAGE: usize = 1000;

/// Where large files wait for the worker: the attachments bucket, under `imports/`.
#[derive(Clone, Debug)]
pub struct Bucket {
    pub s3: aws_sdk_s3::Client,
    pub name: String,
}

impl Bucket {
    async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), String> {
        self.s3
            .put_object()
            .bucket(&self.name)
            .key(key)
            .content_type("text/csv")
            .body(ByteStream::from(bytes.to_vec()))
            .send()
            .await
            .map(drop)
            .map_err(|e| format!("{}", aws_sdk_s3::error::DisplayErrorContext(e)))
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, String> {
        let out = self
            .s3
            .get_object()
            .bucket(&self.name)
            .key(key)
            .send()
            .await
            .map_err(|e| format!("{}", aws_sdk_s3::error::DisplayErrorContext(e)))?;
        let bytes = out.body.collect().await.map_err(|e| e.to_string())?;
        Ok(bytes.into_bytes().to_vec())
    }
}

/// Where a file import stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileImport {
    pub org: OrgId,
    pub id: String,
    pub integration_id: String,
    /// Rows in the file, and rows stored so far (the cursor): the first `stored` are stored.
    pub rows: usize,
    pub stored: usize,
    pub imported: usize,
    pub duplicates: usize,
    pub conflicts: usize,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A file of more than 5,000 rows, stored by the import worker a page at a time (`FileImport`).
/// Where a file's import stands (a document's type).
#[derive(utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum FileImportState {
    Queued,
    Running,
    Done,
}

#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = FileImport)]
pub struct FileImportView {
    /// `imp_...`: the digest of the organisation, the integration and the file.
    pub import_id: String,
    pub integration_id: String,
    /// `queued`, `running` or `done`.
    #[schema(value_type = FileImportState)]
    pub state: &'static str,
    pub rows: usize,
    /// Rows stored so far (the cursor): `imported` + `duplicates` + `conflicts`.
    pub stored: usize,
    pub imported: usize,
    pub duplicates: usize,
    pub conflicts: usize,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// The import of this file into this integration: `imp_` and 24 hex digits of their digest.
pub fn import_id(org: &OrgId, integration_id: &str, file: &[u8]) -> String {
    let mut digest = Sha256::new();
    digest.update(format!("{org}|{integration_id}|").as_bytes());
    digest.update(file);
    format!("imp_{}", &hex::encode(digest.finalize())[..24])
}

fn pk(org: &OrgId, id: &str) -> String {
    org.pk(&format!("IMPORT#{id}"))
}

fn object_key(org: &OrgId, id: &str) -> String {
    format!("imports/{org}/{id}.csv")
}

/// How long a running import may go without a step before it is taken as stopped: longer than
/// its queue's five receives of a step can take (6 minutes each), so its message reached the
/// DLQ, or was lost.
const STALLED: chrono::Duration = chrono::Duration::minutes(35);

impl FileImport {
    /// Whether its next step must be asked for again: queued, or running with no step for
    /// longer than a step's message can be away (`STALLED`). Asked once more, a step moves the
    /// cursor only from where it stands, so two chains store nothing twice.
    pub fn wants_a_step(&self, now: DateTime<Utc>) -> bool {
        match self.state() {
            "queued" => true,
            "running" => now - self.updated_at > STALLED,
            _ => false,
        }
    }

    pub fn state(&self) -> &'static str {
        match (self.stored, self.stored >= self.rows) {
            (_, true) => "done",
            (0, false) => "queued",
            _ => "running",
        }
    }

    /// The import as the API shows it.
    pub fn view(&self) -> FileImportView {
        FileImportView {
            import_id: self.id.clone(),
            integration_id: self.integration_id.clone(),
            state: self.state(),
            rows: self.rows,
            stored: self.stored,
            imported: self.imported,
            duplicates: self.duplicates,
            conflicts: self.conflicts,
            created_at: crate::time::format(self.created_at),
            updated_at: crate::time::format(self.updated_at),
        }
    }

    fn to_item(&self) -> Item {
        Builder::new(&pk(&self.org, &self.id), "file_import", self.org.as_str())
            .str("import_id", &self.id)
            .str("integration_id", &self.integration_id)
            .num("rows", self.rows)
            .num("stored", self.stored)
            .num("imported", self.imported)
            .num("duplicates", self.duplicates)
            .num("conflicts", self.conflicts)
            .time("created_at", self.created_at)
            .time("updated_at", self.updated_at)
            .build()
    }

    fn from_item(item: &Item) -> Result<Self, StoreError> {
        let org = OrgId::parse(item.str_of("org")?)
            .map_err(|e| crate::store::item::malformed(item, &e.to_string()))?;
        let count = |name: &str| item.u64_of(name).map(|v| v as usize);
        Ok(Self {
            org,
            id: item.str_of("import_id")?.to_owned(),
            integration_id: item.str_of("integration_id")?.to_owned(),
            rows: count("rows")?,
            stored: count("stored")?,
            imported: count("imported")?,
            duplicates: count("duplicates")?,
            conflicts: count("conflicts")?,
            created_at: item.time_of("created_at")?,
            updated_at: item.time_of("updated_at")?,
        })
    }
}

/// Why a file import could not be started or go on.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The bucket could not be written or read now: a retry can help.
    #[error("the file store: {0}")]
    Bucket(String),
}

/// Starts the import of a checked file of `rows` rows: the file into the bucket, then its import
/// item. A file imported before answers its import as it stands (`false`: not new).
pub async fn start(
    store: &Store,
    bucket: &Bucket,
    org: &OrgId,
    integration_id: &str,
    (file, rows): (&[u8], usize),
    now: DateTime<Utc>,
) -> Result<(FileImport, bool), FileError> {
    let id = import_id(org, integration_id, file);
    if let Some(item) = store.get(&pk(org, &id)).await? {
        return Ok((FileImport::from_item(&item)?, false));
    }
    bucket
        .put(&object_key(org, &id), file)
        .await
        .map_err(FileError::Bucket)?;
    let import = FileImport {
        org: org.clone(),
        id,
        integration_id: integration_id.to_owned(),
        rows,
        stored: 0,
        imported: 0,
        duplicates: 0,
        conflicts: 0,
        created_at: now,
        updated_at: now,
    };
    match store.put_new(import.to_item()).await? {
        crate::store::PutNew::Created => Ok((import, true)),
        // The same file, uploaded at the same moment: that upload's import.
        crate::store::PutNew::Existing(item) => Ok((FileImport::from_item(&item)?, false)),
    }
}

/// The organisation's import `id`, if there is one.
pub async fn get(store: &Store, org: &OrgId, id: &str) -> Result<Option<FileImport>, StoreError> {
    if !id.starts_with("imp_") || id.len() != 28 || !id[4..].bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Ok(None);
    }
    store
        .get(&pk(org, id))
        .await?
        .as_ref()
        .map(FileImport::from_item)
        .transpose()
}

/// One step of the import: the next [`PAGE`] rows of the file stored once each, then the cursor
/// moved past them, on the condition that it is where this step found it (a concurrent step
/// that moved it first wins; rows stored twice are duplicates). The rows as they were stored,
/// and the import after the step.
pub async fn step(
    store: &Store,
    bucket: &Bucket,
    import: &FileImport,
    concurrency: usize,
    now: DateTime<Utc>,
) -> Result<(Rows, FileImport), FileError> {
    let file = bucket
        .get(&object_key(&import.org, &import.id))
        .await
        .map_err(FileError::Bucket)?;
    // The file was checked whole at upload; a row it now refuses would be our defect.
    let rows = super::csv::parse(&file).map_err(|errors| {
        FileError::Store(StoreError::Malformed {
            pk: pk(&import.org, &import.id),
            detail: format!("{} stored line(s) no longer read", errors.len()),
        })
    })?;
    let end = (import.stored + PAGE).min(rows.len());
    let txs: Vec<BankTx> = rows[import.stored.min(end)..end]
        .iter()
        .cloned()
        .map(|row| {
            BankTx::new(
                &import.org,
                &import.integration_id,
                "csv",
                row,
                Arrival::Csv,
                now,
            )
        })
        .collect();
    let written = store_rows(store, &txs, concurrency).await?;
    let context = json!({"import_id": import.id});
    let kind = crate::review::Kind::Bank;
    crate::review::file_conflicts(store, &import.org, kind, &written.written, &context, now)
        .await?;
    let after = FileImport {
        stored: end,
        imported: import.imported + written.imported(),
        duplicates: import.duplicates + written.duplicates(),
        conflicts: import.conflicts + written.conflicts(),
        updated_at: now,
        ..import.clone()
    };
    let moved = advance(store, import, &after).await?;
    Ok((written, moved))
}

/// Moves the import's cursor from where `before` found it to `after`: the import as it is
/// after (a concurrent step's, when that one moved it first).
async fn advance(
    store: &Store,
    before: &FileImport,
    after: &FileImport,
) -> Result<FileImport, StoreError> {
    let update = Update::new()
        .set("stored", n(after.stored))
        .set("imported", n(after.imported))
        .set("duplicates", n(after.duplicates))
        .set("conflicts", n(after.conflicts))
        .set("updated_at", s(crate::time::format(after.updated_at)))
        .when(Cond::Equals("stored".into(), n(before.stored)));
    if store
        .update_if(&pk(&before.org, &before.id), &update)
        .await?
    {
        return Ok(after.clone());
    }
    Ok(get(store, &before.org, &before.id)
        .await?
        .unwrap_or_else(|| after.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_file_is_the_same_import_and_another_is_another() {
        let org = OrgId::generate();
        let a = import_id(&org, "int_1", b"id,date\n1,2026-12-01\n");
        assert_eq!(a, import_id(&org, "int_1", b"id,date\n1,2026-12-01\n"));
        assert_ne!(a, import_id(&org, "int_2", b"id,date\n1,2026-12-01\n"));
        assert_ne!(a, import_id(&org, "int_1", b"id,date\n2,2026-12-01\n"));
        assert_eq!(a.len(), 28);
    }

    #[test]
    fn an_import_is_queued_then_running_then_done() {
        // Stored times keep milliseconds.
        let at = crate::time::parse("2026-12-03T18:00:00.123Z").unwrap();
        let mut import = FileImport {
            org: OrgId::generate(),
            id: "imp_1".into(),
            integration_id: "i".into(),
            rows: 12_000,
            stored: 0,
            imported: 0,
            duplicates: 0,
            conflicts: 0,
            created_at: at,
            updated_at: at,
        };
        assert_eq!(import.state(), "queued");
        assert!(
            import.wants_a_step(at),
            "a queued import's step is asked for"
        );
        import.stored = PAGE;
        assert_eq!(import.state(), "running");
        // Running: its own message carries its next step, until it cannot have for long.
        assert!(!import.wants_a_step(at + chrono::Duration::minutes(30)));
        assert!(import.wants_a_step(at + chrono::Duration::minutes(36)));
        import.stored = 12_000;
        assert_eq!(import.state(), "done");
        assert!(!import.wants_a_step(at + chrono::Duration::days(1)));
        assert_eq!(FileImport::from_item(&import.to_item()).unwrap(), import);
    }
}
