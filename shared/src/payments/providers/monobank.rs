//! monobank acquiring: the merchant's key, and the webhook's statuses. `success` books,
//! `reversed` takes back, every other status is ignored.

use super::{json, Paid, ParseError, WebhookEvent};
use crate::ids::{ExternalId, IntegrationId};
use crate::integrations::integration_pk;
use crate::money::Currency;
use crate::store::item::s;
use crate::store::{Cond, Store, StoreError, Update};
use chrono::{DateTime, Utc};
use serde::Deserialize;

pub use crate::integrations::payments::Merchant;

impl Merchant {
    /// Keeps a key fetched from monobank for the integration `id`.
    pub async fn keep_key(
        store: &Store,
        id: &IntegrationId,
        public_key: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let update = Update::new()
            .set("public_key", s(public_key))
            .set("key_fetched_at", s(crate::time::format(now)))
            .when(Cond::Exists);
        store.update_if(&integration_pk(id), &update).await
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    invoice_id: Option<String>,
    status: String,
    amount: Option<i64>,
    final_amount: Option<i64>,
    ccy: Option<u16>,
    reference: Option<String>,
    modified_date: Option<DateTime<Utc>>,
}

pub fn parse(body: &[u8]) -> Result<WebhookEvent, ParseError> {
    let parsed: Body = json(body)?;
    let reversed = match parsed.status.as_str() {
        "success" => false,
        "reversed" => true,
        other => return Ok(WebhookEvent::Ignored(other.to_owned())),
    };
    let currency = Currency::from_numeric(parsed.ccy.unwrap_or(980))?;
    let minor = if reversed {
        parsed.amount
    } else {
        parsed.final_amount.or(parsed.amount)
    };
    let amount = minor.map(|m| currency.from_minor(m)).transpose()?;
    let external_id = match parsed.invoice_id.as_deref() {
        Some(id) => ExternalId::parse("invoiceId", id)?,
        None => ExternalId::of_body(body),
    };
    let paid = Paid {
        external_id,
        invoice_ref: super::invoice_ref(parsed.reference)?,
        amount,
        currency: Some(currency),
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
    use rust_decimal_macros::dec;

    #[test]
    fn success_is_paid_in_hryvnia() {
        let body = br#"{"invoiceId":"p2_9ZgpZVsl3","status":"success","amount":4200,"ccy":980,"reference":"inv_1","modifiedDate":"2026-12-01T10:00:00Z"}"#;
        let WebhookEvent::Paid(p) = parse(body).unwrap() else {
            panic!("expected paid")
        };
        assert_eq!(p.external_id.as_str(), "p2_9ZgpZVsl3");
        assert_eq!(p.amount, Some(dec!(42.00)));
        assert_eq!(p.currency.unwrap().as_str(), "UAH");
        assert_eq!(p.invoice_ref.as_deref(), Some("inv_1"));
    }

    #[test]
    fn statuses_before_success_are_ignored() {
        for status in ["created", "processing", "hold", "failure", "expired"] {
            let body =
                format!(r#"{{"invoiceId":"p1","status":"{status}","amount":100,"ccy":980}}"#);
            assert_eq!(
                parse(body.as_bytes()),
                Ok(WebhookEvent::Ignored(status.into()))
            );
        }
    }

    #[test]
    fn reversed_names_the_payment_it_takes_back() {
        let body = br#"{"invoiceId":"p1","status":"reversed","amount":100,"ccy":980}"#;
        assert!(
            matches!(parse(body), Ok(WebhookEvent::Reversed(p)) if p.external_id.as_str() == "p1")
        );
    }
}
