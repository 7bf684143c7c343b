//! Stripe: `payment_intent.succeeded` books `amount_received` (minor units) under the intent id.

use super::{json, Paid, ParseError, WebhookEvent};
use crate::ids::ExternalId;
use crate::money::{Currency, MoneyError};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

#[derive(Deserialize)]
struct Body {
    #[serde(rename = "type")]
    kind: String,
    created: Option<i64>,
    /// Whether the event happened in live mode (Stripe sends it on every event).
    livemode: Option<bool>,
    data: Data,
}

#[derive(Deserialize)]
struct Data {
    object: Intent,
}

#[derive(Deserialize)]
struct Intent {
    id: Option<String>,
    amount_received: Option<i64>,
    currency: Option<String>,
    #[serde(default)]
    metadata: HashMap<String, Value>,
}

/// Stripe's minor units where they differ from ISO 4217 (stripe.com/docs/currencies): ISK is sent
/// with two decimals that are always `00`, MGA is zero-decimal at Stripe.
fn exponent(currency: &Currency) -> u32 {
    match currency.as_str() {
        "ISK" => 2,
        "MGA" => 0,
        _ => currency.exponent(),
    }
}

/// A verified event of an integration (`live`: its API key is a live one, so a test-mode
/// event is no money: ignored).
pub fn parse(body: &[u8], live: bool) -> Result<WebhookEvent, ParseError> {
    let parsed: Body = json(body)?;
    if live && parsed.livemode == Some(false) {
        return Ok(WebhookEvent::Ignored("test_mode".into()));
    }
    if parsed.kind != "payment_intent.succeeded" {
        return Ok(WebhookEvent::Ignored(parsed.kind));
    }
    let intent = parsed.data.object;
    let currency = intent
        .currency
        .as_deref()
        .map(Currency::parse)
        .transpose()?;
    let amount = match (intent.amount_received, &currency) {
        (Some(minor), Some(c)) => Some(c.from_minor_in(minor, exponent(c))?),
        (Some(_), None) => return Err(MoneyError::BadCurrency.into()),
        (None, _) => None,
    };
    let external_id = match intent.id.as_deref() {
        Some(id) => ExternalId::parse("payment_intent", id)?,
        None => ExternalId::of_body(body),
    };
    Ok(WebhookEvent::Paid(Paid {
        external_id,
        invoice_ref: super::invoice_ref(
            intent
                .metadata
                .get("invoice_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
        )?,
        amount,
        currency,
        at: parsed.created.and_then(crate::time::from_unix),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(minor: i64, currency: &str) -> Result<Option<rust_decimal::Decimal>, ParseError> {
        let body = format!(
            r#"{{"type":"payment_intent.succeeded","data":{{"object":{{"id":"pi_x","amount_received":{minor},"currency":"{currency}"}}}}}}"#
        );
        parse(body.as_bytes(), false).map(|e| match e {
            WebhookEvent::Paid(p) => p.amount,
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn stripes_own_minor_units_differ_from_iso_for_isk_and_mga() {
        use rust_decimal_macros::dec;
        assert_eq!(amount(50_000, "isk").unwrap(), Some(dec!(500)));
        assert!(amount(50_050, "isk").is_err(), "ISK decimals are always 00");
        assert_eq!(amount(5_000, "mga").unwrap(), Some(dec!(5000)));
        assert_eq!(amount(500, "jpy").unwrap(), Some(dec!(500)));
        assert_eq!(amount(4_200, "uah").unwrap(), Some(dec!(42)));
    }
    use rust_decimal_macros::dec;

    #[test]
    fn an_intent_books_minor_units_under_its_intent_id() {
        let body = br#"{"id":"evt_1","type":"payment_intent.succeeded","created":1700000000,"data":{"object":{"id":"pi_1","amount_received":4000,"currency":"uah","metadata":{"invoice_id":"inv_9"}}}}"#;
        let WebhookEvent::Paid(p) = parse(body, false).unwrap() else {
            panic!("expected paid")
        };
        assert_eq!(
            (p.external_id.as_str(), p.amount, p.invoice_ref.as_deref()),
            ("pi_1", Some(dec!(40.00)), Some("inv_9"))
        );
    }
}
