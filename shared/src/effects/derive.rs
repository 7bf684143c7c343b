//! What a stored event item implies, decided from the item alone. Pure.

use super::Consequence;
use crate::money;
use crate::store::item::Read;
use crate::store::Item;
use serde_json::json;

/// Event kinds the stream hands to the fan-out (the event source mapping filters on these).
pub const EVENT_KINDS: &[&str] = &["payment_event", "message", "call", "bank_tx", "ledger_line"];

/// The consequences of one newly stored item; items that are not events yield none.
pub fn consequences(item: &Item) -> Vec<Consequence> {
    match item.opt_str("kind") {
        Some("payment_event") => payment(item).unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn payment(item: &Item) -> Option<Vec<Consequence>> {
    let org = item.opt_str("org")?.to_owned();
    let source = item.opt_str("source")?;
    let external_id = item.opt_str("external_id")?;
    // Unmatched money has no invoice to tell anyone about; its review item is the consequence.
    let number = item.opt_str("invoice_number")?;
    let at = item.opt_str("at")?.to_owned();
    let applied = item.opt_dec("applied")?;
    let currency = item.opt_str("currency").unwrap_or_default();
    let status = item.opt_str("invoice_status").unwrap_or_default();
    let outcome = item.opt_str("outcome").unwrap_or_default();
    let event_key = format!("payment:{source}:{external_id}");
    let text = match outcome {
        "reversed" => format!(
            "Payment of {} {currency} for {number} was reversed; invoice is {status}",
            money::display(-applied)
        ),
        _ => format!(
            "Payment for {number} via {source}: {} {currency} received, {} applied; invoice is {status}",
            money::display(item.opt_dec("received").unwrap_or(applied)),
            money::display(applied)
        ),
    };
    let mut out = Vec::new();
    for (entity_kind, attr) in [
        ("contact", "contact_id"),
        ("deal", "deal_id"),
        ("company", "company_id"),
    ] {
        if let Some(entity_id) = item.opt_str(attr) {
            out.push(Consequence::Activity {
                org: org.clone(),
                entity_kind: entity_kind.into(),
                entity_id: entity_id.into(),
                key: format!("invoice:{source}:{external_id}"),
                kind: "payment".into(),
                text: text.clone(),
                at: at.clone(),
            });
        }
    }
    out.push(Consequence::Notification {
        org: org.clone(),
        key: event_key.clone(),
        recipient: item.opt_str("owner").map(str::to_owned),
        text: text.clone(),
        at: at.clone(),
    });
    if item.bool_of("closed_invoice") {
        out.push(Consequence::Trigger {
            org,
            trigger: "invoice.paid".into(),
            event_key,
            at,
            context: json!({
                "invoice_id": item.opt_str("invoice_id"),
                "invoice_number": number,
                "contact_id": item.opt_str("contact_id"),
                "owner": item.opt_str("owner"),
            }),
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::{b, n, s};

    fn payment_item(closed: bool, owner: Option<&str>) -> Item {
        let mut item: Item = [
            ("kind", s("payment_event")),
            ("org", s("o0123456789ab")),
            ("source", s("standard")),
            ("external_id", s("pay_1")),
            ("invoice_id", s("inv_1")),
            ("invoice_number", s("INV-00001")),
            ("at", s("2026-12-02T10:00:00.000Z")),
            ("applied", n("40")),
            ("received", n("40")),
            ("currency", s("UAH")),
            (
                "invoice_status",
                s(if closed { "paid" } else { "partially_paid" }),
            ),
            ("closed_invoice", b(closed)),
            ("contact_id", s("c1")),
            ("deal_id", s("d1")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        if let Some(o) = owner {
            item.insert("owner".into(), s(o));
        }
        item
    }

    #[test]
    fn a_payment_yields_activity_per_linked_entity_and_one_notification() {
        let out = consequences(&payment_item(false, Some("u1")));
        assert_eq!(out.len(), 3);
        let keys: Vec<String> = out.iter().map(Consequence::key).collect();
        assert_eq!(
            keys,
            [
                "activity:contact:c1:invoice:standard:pay_1",
                "activity:deal:d1:invoice:standard:pay_1",
                "notification:payment:standard:pay_1"
            ]
        );
        assert!(
            matches!(&out[2], Consequence::Notification { recipient: Some(r), .. } if r == "u1")
        );
    }

    #[test]
    fn the_payment_that_closes_the_invoice_also_triggers_invoice_paid() {
        let out = consequences(&payment_item(true, None));
        assert!(
            matches!(out.last(), Some(Consequence::Trigger { trigger, .. }) if trigger == "invoice.paid")
        );
        assert!(out.iter().any(|c| matches!(
            c,
            Consequence::Notification {
                recipient: None,
                ..
            }
        )));
    }

    #[test]
    fn unmatched_payments_and_non_events_yield_nothing() {
        let mut item = payment_item(true, None);
        item.remove("invoice_number");
        assert!(consequences(&item).is_empty());
        let mut other = payment_item(true, None);
        other.insert("kind".into(), s("notification"));
        assert!(consequences(&other).is_empty());
    }
}
