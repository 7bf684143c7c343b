//! Standard Webhooks payment payload: `payment.succeeded` books, other types are ignored.

use super::{json, Paid, ParseError, WebhookEvent};
use crate::ids::ExternalId;
use crate::money::{parse_amount, Currency, MoneyError};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

/// A Standard Webhooks payment event; `payment.succeeded` books, any other type is ignored.
/// Stripe and monobank send their own event bodies (`StandardPayment`).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = StandardPayment)]
pub struct Body {
    #[serde(rename = "type")]
    #[schema(example = "payment.succeeded")]
    kind: String,
    #[serde(default)]
    data: Data,
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[schema(as = StandardPaymentData)]
pub struct Data {
    /// The payment's identity; without it the `webhook-id`, else a hash of the body.
    #[schema(max_length = 255)]
    payment_id: Option<String>,
    #[schema(max_length = 255)]
    invoice_id: Option<String>,
    /// Major units (`"40.00"`); without it the invoice's open amount is applied.
    #[schema(value_type = Option<String>, example = "40.00", max_length = 32)]
    amount: Option<Value>,
    #[schema(example = "UAH", min_length = 3, max_length = 3)]
    currency: Option<String>,
}

/// The payment's identity: `data.payment_id`, else the signed `webhook-id` (the spec's
/// idempotency key, the same on every retry of the sender), else the body's hash.
fn identity(
    payment_id: Option<&str>,
    webhook_id: Option<&str>,
    body: &[u8],
) -> Result<ExternalId, ParseError> {
    Ok(match (payment_id, webhook_id) {
        (Some(id), _) => ExternalId::parse("payment_id", id)?,
        (None, Some(id)) => ExternalId::parse("webhook-id", id)?,
        (None, None) => ExternalId::of_body(body),
    })
}

/// `webhook_id` and `at` are what the verifier proved: the signed id and timestamp.
pub fn parse(
    body: &[u8],
    webhook_id: Option<&str>,
    at: Option<DateTime<Utc>>,
) -> Result<WebhookEvent, ParseError> {
    let parsed: Body = json(body)?;
    if parsed.kind != "payment.succeeded" {
        return Ok(WebhookEvent::Ignored(parsed.kind));
    }
    let d = parsed.data;
    let amount = match d.amount {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(parse_amount(&s)?),
        Some(_) => return Err(MoneyError::BadAmount.into()),
    };
    let currency = d.currency.as_deref().map(Currency::parse).transpose()?;
    if let (Some(amount), Some(currency)) = (amount, currency) {
        currency.check(amount)?;
    }
    Ok(WebhookEvent::Paid(Paid {
        external_id: identity(d.payment_id.as_deref(), webhook_id, body)?,
        invoice_ref: super::invoice_ref(d.invoice_id)?,
        amount,
        currency,
        at,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rust_decimal::Decimal;
    use rust_decimal_macros::dec;

    fn paid(event: WebhookEvent) -> Paid {
        match event {
            WebhookEvent::Paid(p) => p,
            other => panic!("expected paid, got {other:?}"),
        }
    }

    #[test]
    fn without_payment_id_the_signed_webhook_id_is_the_identity() {
        let body = br#"{"type":"payment.succeeded","data":{"invoice_id":"inv_1","amount":"40.00","currency":"UAH"}}"#;
        let p = paid(parse(body, Some("msg_2Kx"), None).unwrap());
        assert_eq!(p.external_id.as_str(), "msg_2Kx");
        assert_eq!(p.amount, Some(dec!(40.00)));
        let reserialised = br#"{"data":{"currency":"UAH","amount":"40.00","invoice_id":"inv_1"},"type":"payment.succeeded"}"#;
        assert_eq!(
            paid(parse(reserialised, Some("msg_2Kx"), None).unwrap()).external_id,
            p.external_id
        );
    }

    #[test]
    fn payment_id_wins_and_the_body_hash_is_the_last_resort() {
        let body = br#"{"type":"payment.succeeded","data":{"payment_id":"pay_1"}}"#;
        assert_eq!(
            paid(parse(body, Some("msg_1"), None).unwrap())
                .external_id
                .as_str(),
            "pay_1"
        );
        let bare = br#"{"type":"payment.succeeded","data":{"invoice_id":"inv_1"}}"#;
        assert_eq!(
            paid(parse(bare, None, None).unwrap()).external_id,
            ExternalId::of_body(bare)
        );
    }

    #[test]
    fn numeric_negative_and_garbage_amounts_are_refused() {
        for amount in ["40.5", "\"-1\"", "\"abc\""] {
            let body = format!(
                r#"{{"type":"payment.succeeded","data":{{"payment_id":"p","amount":{amount}}}}}"#
            );
            assert!(parse(body.as_bytes(), None, None).is_err(), "{amount}");
        }
        assert_eq!(
            parse(br#"{"type":"payment.processing","data":{}}"#, None, None),
            Ok(WebhookEvent::Ignored("payment.processing".into()))
        );
    }

    proptest! {
        #[test]
        fn amounts_round_trip(cents in 1u64..1_000_000_000) {
            let amount = Decimal::new(cents as i64, 2);
            let body = format!(r#"{{"type":"payment.succeeded","data":{{"payment_id":"p","amount":"{amount}"}}}}"#);
            let parsed = parse(body.as_bytes(), None, None).unwrap();
            prop_assert!(matches!(parsed, WebhookEvent::Paid(p) if p.amount == Some(amount)));
        }
    }
}
