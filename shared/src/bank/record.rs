//! Storing rows once, and reading them back.

use super::{list_pk, tx_pk, BankTx};
use crate::ids::OrgId;
use crate::store::{PutNew, Store, StoreError};
use futures::stream::{self, StreamExt};

/// How storing one row ended.
#[derive(Clone, Debug)]
pub enum Stored {
    New,
    /// The row was stored before (by any way it arrives): the stored row.
    Duplicate(Box<BankTx>),
}

/// Stores a row once: one conditional put on its key.
pub async fn store_row(store: &Store, tx: &BankTx) -> Result<Stored, StoreError> {
    match store.put_new(tx.to_item()).await? {
        PutNew::Created => Ok(Stored::New),
        PutNew::Existing(item) => Ok(Stored::Duplicate(Box::new(BankTx::from_item(&item)?))),
    }
}

/// Stores many rows, `concurrency` at a time: `(imported, duplicates)`. The first failure is
/// returned after the rows under way have finished; rows stored before it stay stored, and a
/// retry of the whole set finds them as duplicates.
pub async fn store_rows(
    store: &Store,
    txs: &[BankTx],
    concurrency: usize,
) -> Result<(usize, usize), StoreError> {
    let results: Vec<Result<Stored, StoreError>> = stream::iter(txs)
        .map(|tx| store_row(store, tx))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let (mut imported, mut duplicates) = (0, 0);
    for result in results {
        match result? {
            Stored::New => imported += 1,
            Stored::Duplicate(_) => duplicates += 1,
        }
    }
    Ok((imported, duplicates))
}

/// One row by its API id.
pub async fn get(store: &Store, org: &OrgId, tx_id: &str) -> Result<Option<BankTx>, StoreError> {
    store
        .get(&tx_pk(org, tx_id))
        .await?
        .map(|item| BankTx::from_item(&item))
        .transpose()
}

/// One page of an integration's rows, newest first, and the cursor of the next page.
pub async fn list(
    store: &Store,
    org: &OrgId,
    integration_id: &str,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<BankTx>, Option<String>), StoreError> {
    let (items, next) = store
        .page(&list_pk(org, integration_id), true, limit, cursor)
        .await?;
    let rows = items
        .iter()
        .map(BankTx::from_item)
        .collect::<Result<_, _>>()?;
    Ok((rows, next))
}
