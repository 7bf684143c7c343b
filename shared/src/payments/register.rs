//! `register_payment`: the only code that books money. One `TransactWriteItems` puts the event
//! under its key (`attribute_not_exists(pk)`) and moves the invoice conditioned on the version it
//! read; a review item rides in the same transaction when a person must look.

use super::invoice::{self, at_str, payments_list_pk, Invoice};
use super::record::{self, PaymentRecord};
use super::rules::{decide, Outcome, Related};
use super::{payment_pk, reversal_id, PaymentInput, Source};
use crate::ids::OrgId;
use crate::store::item::{n, s, Read};
use crate::store::{Item, Store, StoreError};
use aws_sdk_dynamodb::types::{
    Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use std::time::Duration;
use thiserror::Error;

/// Attempts before giving up on a contended invoice (each loser of a race re-reads and retries).
const MAX_ATTEMPTS: u32 = 40;

#[derive(Debug, Error)]
pub enum PaymentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("invoice stayed contended for {MAX_ATTEMPTS} attempts")]
    Contended,
}

#[derive(Clone, Debug)]
pub enum Registered {
    Booked {
        record: PaymentRecord,
        invoice: Option<Invoice>,
    },
    Duplicate {
        stored: PaymentRecord,
        invoice: Option<Invoice>,
    },
}

enum Failure {
    Duplicate(Option<Item>),
    Retry,
    Other(StoreError),
}

fn classify(
    err: aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError,
    >,
) -> Failure {
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError as E;
    match err.as_service_error() {
        Some(E::TransactionCanceledException(cancel)) => {
            let reasons = cancel.cancellation_reasons();
            let event = reasons.first();
            if event.and_then(|r| r.code()) == Some("ConditionalCheckFailed") {
                return Failure::Duplicate(event.and_then(|r| r.item()).cloned());
            }
            // A moved version or a conflicting transaction: re-read and try again.
            Failure::Retry
        }
        Some(E::TransactionInProgressException(_)) => Failure::Retry,
        _ => Failure::Other(StoreError::sdk(err)),
    }
}

fn backoff(attempt: u32) -> Duration {
    let cap = 5u64.saturating_mul(1 << attempt.min(6)).min(200);
    let jitter = u64::from(u16::from_le_bytes(crate::ids::random_bytes::<2>()));
    Duration::from_millis(cap / 2 + jitter % (cap / 2 + 1))
}

/// Books one arrival of money. A second arrival of the same (source, external id) returns
/// `Duplicate` and writes nothing; a concurrent twin that loses the race is a duplicate too.
#[tracing::instrument(skip_all, fields(event_key = %input.event_key()))]
pub async fn register_payment(
    store: &Store,
    input: &PaymentInput,
) -> Result<Registered, PaymentError> {
    let related = related(store, input).await?;
    for attempt in 0..MAX_ATTEMPTS {
        let before = match input.invoice_ref.as_deref() {
            Some(id) => invoice::get(store, &input.org, id).await?,
            None => None,
        };
        let decision = decide(before.as_ref(), input, related);
        let after = before.as_ref().map(|inv| match decision.change {
            Some(change) => Invoice {
                paid: change.paid,
                status: change.status,
                version: inv.version + 1,
                ..inv.clone()
            },
            None => inv.clone(),
        });
        let answer = record::answer(&decision, after.as_ref());
        let event = record::event_item(input, &decision, before.as_ref(), after.as_ref(), &answer);
        let record = PaymentRecord::from_item(&event)?;
        let mut items = vec![TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(&store.table)
                    .set_item(Some(event))
                    .condition_expression("attribute_not_exists(pk)")
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .build()
                    .expect("table and item are set"),
            )
            .build()];
        if let (Some(inv), Some(change)) = (&before, decision.change) {
            items.push(
                TransactWriteItem::builder()
                    .update(
                        Update::builder()
                            .table_name(&store.table)
                            .set_key(Some(Store::key(&inv.pk())))
                            .update_expression(
                                "SET paid = :paid, #st = :st, version = :next, updated_at = :at",
                            )
                            .condition_expression("version = :v")
                            .expression_attribute_names("#st", "status")
                            .expression_attribute_values(":paid", n(change.paid))
                            .expression_attribute_values(":st", s(change.status.as_str()))
                            .expression_attribute_values(":next", n(inv.version + 1))
                            .expression_attribute_values(":v", n(inv.version))
                            .expression_attribute_values(":at", s(at_str(input.at)))
                            .build()
                            .expect("table, key and expression are set"),
                    )
                    .build(),
            );
        }
        if let Some(review) = record::review_for(input, &decision) {
            items.push(store.put_new_step(review.to_item()));
        }
        let sent = store
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        match sent {
            Ok(_) => {
                if decision.outcome != Outcome::Applied {
                    tracing::info!(outcome = decision.outcome.as_str(), "payment stored");
                }
                return Ok(Registered::Booked {
                    record,
                    invoice: after,
                });
            }
            Err(err) => match classify(err) {
                Failure::Duplicate(old) => {
                    let old =
                        match old {
                            Some(item) => item,
                            None => store.get(&input.pk()).await?.ok_or_else(|| {
                                StoreError::Malformed {
                                    pk: input.pk(),
                                    detail: "duplicate reported but no item stored".into(),
                                }
                            })?,
                        };
                    return Ok(Registered::Duplicate {
                        stored: PaymentRecord::from_item(&old)?,
                        invoice: before,
                    });
                }
                Failure::Retry => {
                    tracing::debug!(attempt, "invoice moved; retrying");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Failure::Other(err) => return Err(err.into()),
            },
        }
    }
    Err(PaymentError::Contended)
}

/// For a reversal, what its payment applied; for a payment from a provider that reverses
/// (monobank), whether its reversal came first.
async fn related(store: &Store, input: &PaymentInput) -> Result<Related, StoreError> {
    match &input.reverses {
        Some(original) => Ok(store
            .get(&payment_pk(&input.org, input.source, original))
            .await?
            .map(|item| item.dec_of("applied"))
            .transpose()?
            .map_or(Related::Nothing, |applied| Related::Original { applied })),
        None if input.source == Source::Monobank => {
            let reversal = reversal_id(&input.external_id);
            let stored = store
                .get(&payment_pk(&input.org, input.source, &reversal))
                .await?;
            Ok(if stored.is_some() {
                Related::Reversal
            } else {
                Related::Nothing
            })
        }
        None => Ok(Related::Nothing),
    }
}

/// The payments booked on an invoice, oldest first.
pub async fn list_for_invoice(
    store: &Store,
    org: &OrgId,
    invoice_id: &str,
) -> Result<Vec<PaymentRecord>, StoreError> {
    store
        .list(&payments_list_pk(org, invoice_id), false, 1000)
        .await?
        .iter()
        .map(PaymentRecord::from_item)
        .collect()
}
