//! What an acquiring webhook says, read from its (already verified) body. Pure: no I/O, no clock.

use crate::ids::{ExternalId, IdError};
use crate::money::{parse_amount, Currency, MoneyError};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("body is not the provider's JSON: {0}")]
    Json(String),
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error(transparent)]
    Id(#[from] IdError),
}

/// A paid (or reversed) payment as the provider reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paid {
    pub external_id: ExternalId,
    pub invoice_ref: Option<String>,
    pub amount: Option<Decimal>,
    pub currency: Option<Currency>,
    pub at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookEvent {
    /// A status before paid (or one we do not book): acknowledged, nothing written.
    Ignored(String),
    Paid(Paid),
    /// The payment with this external id was taken back.
    Reversed(Paid),
}

fn json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ParseError> {
    serde_json::from_slice(body).map_err(|e| ParseError::Json(e.to_string()))
}

fn external_id(given: Option<&str>, body: &[u8]) -> Result<ExternalId, ParseError> {
    match given {
        Some(id) => Ok(ExternalId::parse("payment_id", id)?),
        None => Ok(ExternalId::of_body(body)),
    }
}

#[derive(Deserialize)]
struct StandardBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: StandardData,
}

#[derive(Deserialize, Default)]
struct StandardData {
    payment_id: Option<String>,
    invoice_id: Option<String>,
    amount: Option<Value>,
    currency: Option<String>,
}

/// Standard Webhooks payment payload: `payment.succeeded` books, other types are ignored.
pub fn standard(body: &[u8], at: Option<DateTime<Utc>>) -> Result<WebhookEvent, ParseError> {
    let parsed: StandardBody = json(body)?;
    if parsed.kind != "payment.succeeded" {
        return Ok(WebhookEvent::Ignored(parsed.kind));
    }
    let d = parsed.data;
    let amount = match d.amount {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(parse_amount(&s)?),
        Some(_) => return Err(MoneyError::BadAmount.into()),
    };
    Ok(WebhookEvent::Paid(Paid {
        external_id: external_id(d.payment_id.as_deref(), body)?,
        invoice_ref: d.invoice_id,
        amount,
        currency: d.currency.as_deref().map(Currency::parse).transpose()?,
        at,
    }))
}

#[derive(Deserialize)]
struct StripeBody {
    #[serde(rename = "type")]
    kind: String,
    created: Option<i64>,
    data: StripeData,
}

#[derive(Deserialize)]
struct StripeData {
    object: StripeIntent,
}

#[derive(Deserialize)]
struct StripeIntent {
    id: Option<String>,
    amount_received: Option<i64>,
    currency: Option<String>,
    #[serde(default)]
    metadata: std::collections::HashMap<String, Value>,
}

/// Stripe: `payment_intent.succeeded` books `amount_received` (minor units).
pub fn stripe(body: &[u8]) -> Result<WebhookEvent, ParseError> {
    let parsed: StripeBody = json(body)?;
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
        (Some(minor), Some(c)) if minor > 0 => Some(c.from_minor(minor)),
        (Some(_), _) => return Err(MoneyError::BadAmount.into()),
        (None, _) => None,
    };
    Ok(WebhookEvent::Paid(Paid {
        external_id: external_id(intent.id.as_deref(), body)?,
        invoice_ref: intent
            .metadata
            .get("invoice_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        amount,
        currency,
        at: parsed.created.and_then(|t| DateTime::from_timestamp(t, 0)),
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MonobankBody {
    invoice_id: Option<String>,
    status: String,
    amount: Option<i64>,
    final_amount: Option<i64>,
    ccy: Option<u16>,
    reference: Option<String>,
    modified_date: Option<DateTime<Utc>>,
}

/// monobank acquiring: `success` books, `reversed` takes back, every other status is ignored.
pub fn monobank(body: &[u8]) -> Result<WebhookEvent, ParseError> {
    let parsed: MonobankBody = json(body)?;
    let reversed = match parsed.status.as_str() {
        "success" => false,
        "reversed" => true,
        other => return Ok(WebhookEvent::Ignored(other.to_owned())),
    };
    let currency = parsed.ccy.map(Currency::from_numeric).transpose()?;
    let minor = if reversed {
        parsed.amount
    } else {
        parsed.final_amount.or(parsed.amount)
    };
    let amount = match (minor, &currency) {
        (Some(m), Some(c)) if m > 0 => Some(c.from_minor(m)),
        (Some(m), None) if m > 0 => Some(Currency::from_numeric(980)?.from_minor(m)),
        (Some(_), _) => return Err(MoneyError::BadAmount.into()),
        (None, _) => None,
    };
    let paid = Paid {
        external_id: external_id(parsed.invoice_id.as_deref(), body)?,
        invoice_ref: parsed.reference,
        amount,
        currency,
        at: parsed.modified_date,
    };
    Ok(if reversed {
        WebhookEvent::Reversed(paid)
    } else {
        WebhookEvent::Paid(paid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rust_decimal_macros::dec;

    #[test]
    fn monobank_success_is_paid_in_hryvnia() {
        let body = br#"{"invoiceId":"p2_9ZgpZVsl3","status":"success","amount":4200,"ccy":980,"reference":"inv_1","modifiedDate":"2026-12-01T10:00:00Z"}"#;
        let WebhookEvent::Paid(p) = monobank(body).unwrap() else {
            panic!("expected paid")
        };
        assert_eq!(p.external_id.as_str(), "p2_9ZgpZVsl3");
        assert_eq!(p.amount, Some(dec!(42.00)));
        assert_eq!(p.currency.unwrap().as_str(), "UAH");
        assert_eq!(p.invoice_ref.as_deref(), Some("inv_1"));
    }

    #[test]
    fn monobank_statuses_before_success_are_ignored() {
        for status in ["created", "processing", "hold", "failure", "expired"] {
            let body =
                format!(r#"{{"invoiceId":"p1","status":"{status}","amount":100,"ccy":980}}"#);
            assert_eq!(
                monobank(body.as_bytes()),
                Ok(WebhookEvent::Ignored(status.into()))
            );
        }
    }

    #[test]
    fn monobank_reversed_names_the_payment_it_takes_back() {
        let body = br#"{"invoiceId":"p1","status":"reversed","amount":100,"ccy":980}"#;
        assert!(
            matches!(monobank(body), Ok(WebhookEvent::Reversed(p)) if p.external_id.as_str() == "p1")
        );
    }

    #[test]
    fn stripe_intent_books_minor_units_with_its_intent_id() {
        let body = br#"{"id":"evt_1","type":"payment_intent.succeeded","created":1700000000,"data":{"object":{"id":"pi_1","amount_received":4000,"currency":"uah","metadata":{"invoice_id":"inv_9"}}}}"#;
        let WebhookEvent::Paid(p) = stripe(body).unwrap() else {
            panic!("expected paid")
        };
        assert_eq!(
            (p.external_id.as_str(), p.amount, p.invoice_ref.as_deref()),
            ("pi_1", Some(dec!(40.00)), Some("inv_9"))
        );
    }

    #[test]
    fn standard_without_payment_id_is_keyed_by_its_body() {
        let body = br#"{"type":"payment.succeeded","data":{"invoice_id":"inv_1","amount":"40.00","currency":"UAH"}}"#;
        let WebhookEvent::Paid(p) = standard(body, None).unwrap() else {
            panic!("expected paid")
        };
        assert_eq!(p.external_id, ExternalId::of_body(body));
        assert_eq!(p.amount, Some(dec!(40.00)));
    }

    #[test]
    fn standard_rejects_numeric_and_negative_amounts() {
        for amount in ["40.5", "\"-1\"", "\"abc\""] {
            let body = format!(
                r#"{{"type":"payment.succeeded","data":{{"payment_id":"p","amount":{amount}}}}}"#
            );
            assert!(standard(body.as_bytes(), None).is_err(), "{amount}");
        }
        assert_eq!(
            standard(br#"{"type":"payment.processing","data":{}}"#, None),
            Ok(WebhookEvent::Ignored("payment.processing".into()))
        );
    }

    proptest! {
        #[test]
        fn parsers_never_panic_on_arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = standard(&body, None);
            let _ = stripe(&body);
            let _ = monobank(&body);
        }

        #[test]
        fn standard_amounts_round_trip(cents in 1u64..1_000_000_000) {
            let amount = Decimal::new(cents as i64, 2);
            let body = format!(r#"{{"type":"payment.succeeded","data":{{"payment_id":"p","amount":"{amount}"}}}}"#);
            let parsed = standard(body.as_bytes(), None).unwrap();
            prop_assert!(matches!(parsed, WebhookEvent::Paid(p) if p.amount == Some(amount)));
        }
    }
}
