//! Transactions of put-if-new, conditional update and condition-check steps: all happen or
//! none, and a refusal says which step and what held its key.

use super::{Item, Store, StoreError, Update};
use aws_sdk_dynamodb::types::{
    ConditionCheck, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};

/// One step of a transaction.
#[derive(Clone, Debug)]
pub enum Step {
    /// Put the item only if its key is new.
    PutNew(Item),
    /// Update an existing item under a condition.
    Update { pk: String, update: Update },
    /// Hold the transaction to what was read: the item is (still) absent.
    Absent(String),
    /// Hold the transaction to what was read: the item is (still) there.
    Present(String),
    /// Delete the item, only while it is there (a mark whose work is done, taken once).
    Delete(String),
}

impl Step {
    /// The key of the item the step writes or checks.
    pub fn pk(&self) -> Option<&str> {
        match self {
            Self::PutNew(item) => match item.get("pk") {
                Some(aws_sdk_dynamodb::types::AttributeValue::S(pk)) => Some(pk),
                _ => None,
            },
            Self::Update { pk, .. } | Self::Absent(pk) | Self::Present(pk) | Self::Delete(pk) => {
                Some(pk)
            }
        }
    }
}

/// How a transaction ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Transacted {
    Done,
    /// The condition of step `step` failed; for a put, the item that holds the key.
    Refused {
        step: usize,
        existing: Option<Item>,
    },
    /// Another transaction touched the same items: read again and retry.
    Contended,
}

impl Store {
    /// Writes the steps all or none, the cheapest way: a lone put-if-new is one conditional
    /// `PutItem` and a lone update one conditional `UpdateItem` (half the write capacity of a
    /// transaction, the same answer: a lost condition is step 0 refused), anything more one
    /// `TransactWriteItems`.
    pub async fn commit(&self, steps: Vec<Step>) -> Result<Transacted, StoreError> {
        let item = match <[Step; 1]>::try_from(steps) {
            Ok([Step::PutNew(item)]) => item,
            Ok([Step::Update { pk, update }]) => return self.commit_update(&pk, &update).await,
            Ok([other]) => return self.transact(vec![other]).await,
            Err(steps) => return self.transact(steps).await,
        };
        Ok(match self.put_new(item).await {
            Ok(super::PutNew::Created) => Transacted::Done,
            Ok(super::PutNew::Existing(item)) => Transacted::Refused {
                step: 0,
                existing: Some(item).filter(|i| !i.is_empty()),
            },
            // A transaction held the key meanwhile: read again, as a transaction would.
            Err(e) if e.code() == Some("TransactionConflictException") => Transacted::Contended,
            Err(StoreError::Contended { .. }) => Transacted::Contended,
            Err(e) => return Err(e),
        })
    }

    /// A lone update: one conditional `UpdateItem`. No update is counted (`counters` counts
    /// puts), so nothing is lost by leaving the transaction.
    async fn commit_update(&self, pk: &str, update: &Update) -> Result<Transacted, StoreError> {
        Ok(match self.update_if(pk, update).await {
            Ok(true) => Transacted::Done,
            Ok(false) => Transacted::Refused {
                step: 0,
                existing: None,
            },
            Err(e) if e.code() == Some("TransactionConflictException") => Transacted::Contended,
            Err(StoreError::Contended { .. }) => Transacted::Contended,
            Err(e) => Err(e)?,
        })
    }

    /// Runs the steps as one `TransactWriteItems`: all happen or none. Puts of counted items
    /// carry their counts (`counters::with_counts`).
    pub async fn transact(&self, steps: Vec<Step>) -> Result<Transacted, StoreError> {
        match super::counters::with_counts(&steps) {
            Some(counted) => {
                self.transact_counted(super::counters::merged(counted))
                    .await
            }
            None => self.send(super::counters::merged(steps)).await,
        }
    }

    /// `transact` of steps that hold to their own conditions, sent again while another
    /// transaction holds one of their items (a counter another event adds to): the same steps
    /// again decide the same or are refused. `Contended` once the write's rounds ran out. The
    /// one retry of a state change written without a read (a resolution, a row's confirmation).
    pub async fn transact_held(&self, steps: Vec<Step>) -> Result<Transacted, StoreError> {
        let steps = super::counters::with_counts(&steps).unwrap_or(steps);
        self.transact_counted(super::counters::merged(steps)).await
    }

    /// A transaction that adds to counters: another event of the organisation may hold a
    /// counter item for a moment, so a contended one is sent again, in the write's rounds. Only
    /// the counters are shared; every other step holds to what was read, so sending the same
    /// steps again decides the same or is refused.
    pub async fn transact_counted(&self, steps: Vec<Step>) -> Result<Transacted, StoreError> {
        let mut rounds = super::write::Rounds::new();
        while rounds.next().await {
            match self.send(steps.clone()).await? {
                Transacted::Contended => continue,
                ended => return Ok(ended),
            }
        }
        Ok(Transacted::Contended)
    }

    async fn send(&self, steps: Vec<Step>) -> Result<Transacted, StoreError> {
        let items = steps.into_iter().map(|s| self.step(s)).collect();
        let sent = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError as E;
        let err = match sent {
            Ok(_) => return Ok(Transacted::Done),
            Err(err) => err,
        };
        match err.as_service_error() {
            Some(E::TransactionCanceledException(cancel)) => {
                // A step DynamoDB refuses as it is (an item past its size, a key it cannot
                // take) fails every time: our own defect, not a contention to try again.
                let invalid = cancel.cancellation_reasons().iter().position(|r| {
                    matches!(
                        r.code(),
                        Some("ValidationError" | "ItemCollectionSizeLimitExceeded")
                    )
                });
                if let Some(step) = invalid {
                    let code = cancel.cancellation_reasons()[step]
                        .code()
                        .unwrap_or_default();
                    // Which step and why: its key is not kept on the path every event takes.
                    return Err(StoreError::Malformed {
                        pk: format!("transaction step {step}"),
                        detail: format!("DynamoDB refused it: {code}"),
                    });
                }
                let refused = cancel
                    .cancellation_reasons()
                    .iter()
                    .position(|r| r.code() == Some("ConditionalCheckFailed"));
                Ok(match refused {
                    Some(step) => Transacted::Refused {
                        step,
                        // An emulator may send an empty holder: none, so the caller reads it.
                        existing: cancel.cancellation_reasons()[step]
                            .item()
                            .filter(|item| !item.is_empty())
                            .cloned(),
                    },
                    None => Transacted::Contended,
                })
            }
            Some(E::TransactionInProgressException(_)) => Ok(Transacted::Contended),
            _ => Err(StoreError::sdk(err)),
        }
    }

    fn step(&self, step: Step) -> TransactWriteItem {
        let check = |pk: String, condition: &str| {
            ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(Self::key(&pk)))
                .condition_expression(condition)
                .build()
                .expect("table, key and condition are set")
        };
        let builder = TransactWriteItem::builder();
        match step {
            Step::PutNew(item) => builder.put(
                Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression("attribute_not_exists(pk)")
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .build()
                    .expect("table and item are set"),
            ),
            Step::Update { pk, update } => builder.update(update.transact_step(&self.table, &pk)),
            Step::Absent(pk) => builder.condition_check(check(pk, "attribute_not_exists(pk)")),
            Step::Present(pk) => builder.condition_check(check(pk, "attribute_exists(pk)")),
            Step::Delete(pk) => builder.delete(
                aws_sdk_dynamodb::types::Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(Self::key(&pk)))
                    .condition_expression("attribute_exists(pk)")
                    .build()
                    .expect("table, key and condition are set"),
            ),
        }
        .build()
    }
}
