//! What a stored event item implies, decided from the item alone, read through the same type
//! that wrote it. Pure. An event item that cannot be read is an error, never zero consequences.

use super::Consequence;
use crate::payments::event::{self, PaymentEvent};
use crate::store::item::Read;
use crate::store::{Item, StoreError};

/// Event kinds the stream hands to the fan-out (the event source mapping filters on these): to
/// derive their consequences and to count them.
pub const EVENT_KINDS: &[&str] = &[
    event::KIND,
    crate::messages::KIND,
    crate::calls::KIND,
    crate::bank::KIND,
    crate::bank::CONFIRMATION,
    crate::leads::KIND,
    crate::payments::credit::KIND,
    // No consequences of its own (an incoming SMS's are its message's), but counted.
    crate::ledger::ACK_KIND,
    // An assistant's reply to send: queued for the automation worker; no event, not counted.
    crate::consequences::ASSISTED_KIND,
];

/// The consequences of one newly stored item; items that are not events yield none.
pub fn consequences(item: &Item) -> Result<Vec<Consequence>, StoreError> {
    match item.opt_str("kind") {
        Some(event::KIND) => Ok(PaymentEvent::from_item(item)?.consequences()),
        Some(crate::calls::KIND) => Ok(crate::calls::Call::from_item(item)?.consequences()),
        Some(crate::leads::KIND) => Ok(crate::leads::Lead::from_item(item)?.consequences()),
        Some(crate::payments::credit::KIND) => {
            Ok(crate::payments::credit::CreditNote::from_item(item)?.consequences())
        }
        Some(crate::bank::KIND) => Ok(crate::bank::BankTx::from_item(item)?.consequences()),
        // A pushed credit the statement has shown: now its match.
        Some(crate::bank::CONFIRMATION) => {
            let org = crate::ids::OrgId::parse(item.str_of("org")?)
                .map_err(|e| crate::store::item::malformed(item, &e.to_string()))?;
            Ok(vec![crate::consequences::BankCredit {
                org,
                tx_id: item.str_of("tx_id")?.to_owned(),
                at: item.time_of("at")?,
            }
            .into()])
        }
        Some(crate::messages::KIND) => {
            Ok(crate::messages::Message::from_item(item)?.consequences())
        }
        Some(crate::consequences::ASSISTED_KIND) => {
            let reply = crate::consequences::AssistedReply::from_item(item)?;
            Ok(vec![crate::consequences::Consequence::Assisted(reply)])
        }
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::{Fired, Trigger};
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
                "notification:payment:stripe:pi_1",
                "lookalike:payment:stripe:pi_1"
            ]
        );
    }

    #[test]
    fn the_payment_that_closes_the_invoice_also_triggers_invoice_paid() {
        let out = consequences(&sample(true).to_item()).unwrap();
        assert!(out.iter().any(|c| matches!(
            c,
            Consequence::Trigger(Fired {
                trigger: Trigger::InvoicePaid,
                ..
            })
        )));
        assert!(out
            .iter()
            .any(|c| matches!(c, Consequence::Notification(n) if n.recipient.is_none())));
    }

    #[test]
    fn every_payment_that_closes_an_invoice_fires_the_same_invoice_paid_key() {
        let fired_key = |event: &crate::payments::event::PaymentEvent| {
            consequences(&event.to_item())
                .unwrap()
                .into_iter()
                .find_map(|c| match c {
                    Consequence::Trigger(f) => Some(f.event_key),
                    _ => None,
                })
                .expect("invoice.paid")
        };
        let first = sample(true);
        // Paid, reversed, paid again: another payment closes the same invoice.
        let mut again = sample(true);
        again.external_id = crate::ids::ExternalId::parse("id", "pi_2").unwrap();
        assert_ne!(first.key(), again.key());
        assert_eq!(fired_key(&first), fired_key(&again));
        assert_eq!(fired_key(&first).as_str(), "invoice:inv_1:paid");
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
