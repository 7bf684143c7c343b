//! What a stored event item implies, decided from the item alone, read through the same type
//! that wrote it. Pure. An event item that cannot be read is an error, never zero consequences.

use super::{ActivityLine, Consequence, EntityKind, Fired, Notification, Trigger};
use crate::money;
use crate::payments::event::{self, PaymentEvent};
use crate::payments::Outcome;
use crate::store::item::Read;
use crate::store::{Item, StoreError};
use serde_json::json;

/// Event kinds the stream hands to the fan-out (the event source mapping filters on these).
pub const EVENT_KINDS: &[&str] = &[event::KIND, "message", "call", "bank_tx", "ledger_line"];

/// The consequences of one newly stored item; items that are not events yield none.
pub fn consequences(item: &Item) -> Result<Vec<Consequence>, StoreError> {
    match item.opt_str("kind") {
        Some(event::KIND) => Ok(payment(&PaymentEvent::from_item(item)?)),
        _ => Ok(Vec::new()),
    }
}

fn payment(event: &PaymentEvent) -> Vec<Consequence> {
    // Unmatched money has no invoice to tell anyone about; its review item is the consequence.
    let Some(invoice) = &event.invoice else {
        return Vec::new();
    };
    let key = event.key();
    let currency = event.currency.as_ref().map_or("", |c| c.as_str());
    let status = crate::store::item::tag_name(&invoice.status);
    let text = match event.outcome {
        Outcome::Reversed => format!(
            "Payment of {} {currency} for {} was reversed; invoice is {status}",
            money::display(-event.applied),
            invoice.number
        ),
        _ => format!(
            "Payment for {} via {}: {} {currency} received, {} applied; invoice is {status}",
            invoice.number,
            event.source,
            money::display(event.received.unwrap_or(event.applied)),
            money::display(event.applied)
        ),
    };
    let links = &invoice.links;
    let mut out: Vec<Consequence> = [
        (EntityKind::Contact, &links.contact_id),
        (EntityKind::Deal, &links.deal_id),
        (EntityKind::Company, &links.company_id),
    ]
    .into_iter()
    .filter_map(|(entity_kind, id)| Some((entity_kind, id.clone()?)))
    .map(|(entity_kind, entity_id)| {
        ActivityLine {
            org: event.org.clone(),
            entity_kind,
            entity_id,
            key: format!("invoice:{}", key.id()),
            kind: "payment".into(),
            text: text.clone(),
            at: event.at,
        }
        .into()
    })
    .collect();
    out.push(
        Notification {
            org: event.org.clone(),
            key: key.clone(),
            recipient: links.owner.clone(),
            text,
            at: event.at,
        }
        .into(),
    );
    if invoice.closed_now {
        out.push(
            Fired {
                org: event.org.clone(),
                trigger: Trigger::InvoicePaid,
                event_key: key,
                at: event.at,
                context: json!({
                    "invoice_id": event.invoice_id,
                    "invoice_number": invoice.number,
                    "contact_id": links.contact_id,
                    "owner": links.owner,
                }),
            }
            .into(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payments::event::tests::sample;
    use crate::store::item::s;

    #[test]
    fn a_payment_yields_activity_per_linked_entity_and_one_notification() {
        let out = consequences(&sample(false).to_item()).unwrap();
        let keys: Vec<String> = out.iter().map(Consequence::key).collect();
        assert_eq!(
            keys,
            [
                "activity:contact:c1:invoice:stripe:pi_1",
                "activity:deal:d1:invoice:stripe:pi_1",
                "notification:payment:stripe:pi_1"
            ]
        );
    }

    #[test]
    fn the_payment_that_closes_the_invoice_also_triggers_invoice_paid() {
        let out = consequences(&sample(true).to_item()).unwrap();
        assert!(matches!(
            out.last(),
            Some(Consequence::Trigger(Fired {
                trigger: Trigger::InvoicePaid,
                ..
            }))
        ));
        assert!(out
            .iter()
            .any(|c| matches!(c, Consequence::Notification(n) if n.recipient.is_none())));
    }

    #[test]
    fn a_malformed_event_item_is_an_error_and_other_items_yield_nothing() {
        let mut broken = sample(true).to_item();
        broken.remove("org");
        assert!(consequences(&broken).is_err());
        let mut other = sample(true).to_item();
        other.insert("kind".into(), s("notification"));
        assert!(consequences(&other).unwrap().is_empty());
    }
}
