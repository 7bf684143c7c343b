//! A held SMS event as its mark keeps it until the integration resumes: every field the
//! decision reads, as JSON.

use super::{Price, SmsEvent, SmsType};
use crate::money::Currency;
use serde_json::{json, Value};

pub fn to_json(e: &SmsEvent) -> String {
    json!({
        "integration_id": e.integration_id, "event_id": e.event_id, "type": e.kind,
        "message_id": e.message_id, "from": e.from, "to": e.to, "text": e.text,
        "segments": e.segments,
        "price": e.price.map(|p| json!({"amount": p.currency.show(p.amount), "currency": p.currency.as_str()})),
        "free": e.free, "at": crate::time::format(e.at), "fingerprint": e.fingerprint,
    })
    .to_string()
}

/// The event `to_json` kept, or `None` when the text is not one.
pub fn from_json(raw: &str) -> Option<SmsEvent> {
    let v: Value = serde_json::from_str(raw).ok()?;
    let text = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
    let price = match v.get("price") {
        Some(Value::Object(p)) => Some(Price {
            amount: p.get("amount")?.as_str()?.parse().ok()?,
            currency: Currency::parse(p.get("currency")?.as_str()?).ok()?,
        }),
        _ => None,
    };
    Some(SmsEvent {
        integration_id: text("integration_id")?,
        event_id: text("event_id")?,
        kind: serde_json::from_value::<SmsType>(v.get("type")?.clone()).ok()?,
        message_id: text("message_id")?,
        from: text("from")?,
        to: text("to")?,
        text: text("text"),
        segments: v
            .get("segments")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
        price,
        free: v.get("free").and_then(Value::as_bool).unwrap_or(false),
        at: crate::time::parse(&text("at")?)?,
        fingerprint: text("fingerprint")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn a_held_event_reads_back_as_it_was() {
        let event = SmsEvent {
            integration_id: "o1_ab".into(),
            event_id: "msg_1".into(),
            kind: SmsType::Sent,
            message_id: "m1".into(),
            from: "+380441234567".into(),
            to: "+380501234567".into(),
            text: Some("Hello".into()),
            segments: Some(2),
            price: Some(Price {
                amount: dec!(0.05),
                currency: Currency::parse("USD").unwrap(),
            }),
            free: false,
            at: crate::time::parse("2026-12-06T10:00:00.123Z").unwrap(),
            fingerprint: "f".into(),
        };
        assert_eq!(from_json(&to_json(&event)), Some(event));
        assert_eq!(from_json("{}"), None);
    }
}
