//! The carrier's body: `{"type": "sms.sent" | "sms.received" | "sms.delivered" | "sms.failed",
//! "data": {"message_id", "from", "to", "text"?, "segments"?, "price"?, "currency"?}}`. Read
//! once, every field held to its limit; a type we do not book is ignored.

use super::{Price, SmsEvent, SmsType, PRICE_MAX, SEGMENTS_MAX, TEXT_MAX};
use crate::fields::{printable, reference, KEY_MAX, REF_MAX};
use crate::money::{parse_amount, Currency};
use crate::signature::Parsed;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// A carrier event: `sms.sent`, `sms.received`, `sms.delivered` or `sms.failed`; other types
/// are answered `ignored` (`SmsPayload`).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = SmsPayload)]
pub struct Body {
    #[serde(rename = "type")]
    #[schema(example = "sms.sent", max_length = 255)]
    kind: String,
    /// Required for the types we book.
    #[schema(value_type = Option<Data>)]
    data: Option<serde_json::Value>,
}

/// What a carrier event says of its message (`SmsData`).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = SmsData)]
pub struct Data {
    /// The carrier's message id (1-255 bytes, no white space or `#`): what lines are keyed by.
    #[schema(min_length = 1, max_length = 255)]
    message_id: String,
    /// 1-128 bytes.
    #[schema(min_length = 1, max_length = 128)]
    from: String,
    #[schema(min_length = 1, max_length = 128)]
    to: String,
    /// At most 1600 characters.
    #[schema(max_length = 1600)]
    text: Option<String>,
    /// 1 to 255.
    #[schema(minimum = 1, maximum = 255)]
    segments: Option<u32>,
    /// Major units, at most 1000; "0" is no charge. Requires `currency`.
    #[schema(example = "0.05", max_length = 32)]
    price: Option<String>,
    #[schema(example = "USD", min_length = 3, max_length = 3)]
    currency: Option<String>,
}

/// A verified delivery's event: `event_id` is its signed `webhook-id`, `at` its signed time.
pub fn parse(
    integration_id: &str,
    event_id: &str,
    body: &[u8],
    at: DateTime<Utc>,
) -> Result<Parsed<SmsEvent>, String> {
    let parsed: Body = serde_json::from_slice(body).map_err(|e| format!("body: {e}"))?;
    let Some(kind) = crate::store::item::parse_tag::<SmsType>(&parsed.kind) else {
        return Ok(Parsed::Ignored(parsed.kind.chars().take(REF_MAX).collect()));
    };
    let data: Data = serde_json::from_value(parsed.data.ok_or("data is missing")?)
        .map_err(|e| format!("data: {e}"))?;
    reference("webhook-id", event_id, KEY_MAX).map_err(|e| e.to_string())?;
    reference("data.message_id", &data.message_id, KEY_MAX).map_err(|e| e.to_string())?;
    reference("data.from", &data.from, REF_MAX).map_err(|e| e.to_string())?;
    reference("data.to", &data.to, REF_MAX).map_err(|e| e.to_string())?;
    let text = data.text.map(printable);
    if text.as_ref().is_some_and(|t| t.chars().count() > TEXT_MAX) {
        return Err(format!("data.text: must be at most {TEXT_MAX} characters"));
    }
    if data.segments.is_some_and(|s| s == 0 || s > SEGMENTS_MAX) {
        return Err(format!("data.segments: 1 to {SEGMENTS_MAX}"));
    }
    let price = price(data.price.as_deref(), data.currency.as_deref())?;
    let free = data.price.is_some() && price.is_none();
    let fingerprint = hex::encode(Sha256::digest(body))[..32].to_owned();
    Ok(Parsed::Event(SmsEvent {
        integration_id: integration_id.to_owned(),
        event_id: event_id.to_owned(),
        kind,
        message_id: data.message_id,
        from: data.from,
        to: data.to,
        text,
        segments: data.segments,
        price,
        free,
        at,
        fingerprint,
    }))
}

/// A price in major units with its currency (required with a price); "0" is no charge.
fn price(raw: Option<&str>, currency: Option<&str>) -> Result<Option<Price>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let free = !raw.is_empty()
        && raw.len() <= 32
        && raw.bytes().all(|b| b == b'0' || b == b'.')
        && raw.bytes().filter(|b| *b == b'.').count() <= 1
        && !raw.starts_with('.')
        && !raw.ends_with('.');
    if free {
        return Ok(None);
    }
    let currency = currency.ok_or("data.currency is required with data.price")?;
    let currency = Currency::parse(currency).map_err(|e| format!("data.currency: {e}"))?;
    // A carrier prices a segment in fractions of a cent too (`0.0075` USD): its price keeps
    // its digits, up to the four any amount may have, and is never rounded.
    let amount = parse_amount(raw).map_err(|e| format!("data.price: {e}"))?;
    if amount > Decimal::from(PRICE_MAX) {
        return Err(format!("data.price: at most {PRICE_MAX}"));
    }
    Ok(Some(Price { amount, currency }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(body: serde_json::Value) -> Result<Parsed<SmsEvent>, String> {
        parse("in_1", "msg_1", body.to_string().as_bytes(), Utc::now())
    }

    fn sent(data: serde_json::Value) -> Result<Parsed<SmsEvent>, String> {
        event(json!({"type": "sms.sent", "data": data}))
    }

    #[test]
    fn a_priced_sent_event_reads_exactly() {
        let Ok(Parsed::Event(e)) = sent(
            json!({"message_id": "m1", "from": "+15550001111", "to": "+15550002222", "text": "hi", "segments": 2, "price": "0.05", "currency": "usd"}),
        ) else {
            panic!("a priced sent event reads")
        };
        assert_eq!(
            (
                e.kind,
                e.message_id.as_str(),
                e.event_id.as_str(),
                e.segments
            ),
            (SmsType::Sent, "m1", "msg_1", Some(2))
        );
        let price = e.price.expect("priced");
        assert_eq!(
            (price.amount, price.currency.as_str()),
            (Decimal::new(5, 2), "USD")
        );
        assert_eq!(e.key().as_str(), "sms:in_1:msg_1");
    }

    #[test]
    fn prices_are_exact_in_their_currency_and_within_the_limit() {
        let priced = |price: &str, currency: &str| {
            sent(
                json!({"message_id": "m1", "from": "a", "to": "b", "price": price, "currency": currency}),
            )
        };
        let Ok(Parsed::Event(e)) = priced("0.05", "USD") else {
            panic!("a price in cents reads")
        };
        assert_eq!(e.price.unwrap().amount, Decimal::new(5, 2));
        let Ok(Parsed::Event(sub_cent)) = priced("0.0075", "USD") else {
            panic!("a price in fractions of a cent reads")
        };
        assert_eq!(sub_cent.price.unwrap().amount, Decimal::new(75, 4));
        assert!(priced("0.00755", "USD").unwrap_err().contains("data.price"));
        assert!(priced("-1", "USD").is_err());
        assert!(priced("1000.01", "USD").unwrap_err().contains("at most"));
        assert!(priced("1", "XAU").unwrap_err().contains("data.currency"));
        let Ok(Parsed::Event(free)) = priced("0.00", "USD") else {
            panic!("a zero price is no charge")
        };
        assert_eq!((free.price, free.free), (None, true));
        let Ok(Parsed::Event(unpriced)) = sent(json!({"message_id": "m1", "from": "a", "to": "b"}))
        else {
            panic!("an unpriced event is kept")
        };
        assert!(!unpriced.free, "no price is not a free one");
        let no_currency =
            sent(json!({"message_id": "m1", "from": "a", "to": "b", "price": "1.00"}));
        assert!(no_currency.unwrap_err().contains("currency is required"));
    }

    #[test]
    fn every_field_is_held_to_its_limit() {
        let long = "x".repeat(TEXT_MAX + 1);
        for (data, field) in [
            (
                json!({"message_id": "m 1", "from": "a", "to": "b"}),
                "message_id",
            ),
            (json!({"message_id": "m1", "from": "", "to": "b"}), "from"),
            (json!({"message_id": "m1", "from": "a", "to": "b#c"}), "to"),
            (
                json!({"message_id": "m1", "from": "a", "to": "b", "text": long}),
                "text",
            ),
            (
                json!({"message_id": "m1", "from": "a", "to": "b", "segments": 0}),
                "segments",
            ),
        ] {
            let err = sent(data).unwrap_err();
            assert!(err.contains(field), "{err}");
        }
        assert!(event(json!({"type": "sms.sent"}))
            .unwrap_err()
            .contains("data"));
    }

    #[test]
    fn a_type_we_do_not_book_is_ignored_and_every_type_we_book_reads() {
        assert_eq!(
            event(json!({"type": "sms.queued", "data": {}})).unwrap(),
            Parsed::Ignored("sms.queued".into())
        );
        for (name, kind) in [
            ("sms.sent", SmsType::Sent),
            ("sms.received", SmsType::Received),
            ("sms.delivered", SmsType::Delivered),
            ("sms.failed", SmsType::Failed),
        ] {
            let Ok(Parsed::Event(e)) =
                event(json!({"type": name, "data": {"message_id": "m1", "from": "a", "to": "b"}}))
            else {
                panic!("{name}")
            };
            assert_eq!(e.kind, kind);
        }
    }
}
