//! monobank signs every merchant's webhooks with the same key: a valid `X-Sign` proves monobank
//! sent the body, not that the invoice is this merchant's. With the integration's `X-Token`, a
//! new `success` is confirmed against the merchant's own invoice status
//! (`GET /api/merchant/invoice/status?invoiceId=...`) before it books money: an invoice monobank
//! does not know for this merchant, or one whose status, amount or reference differ, is stored
//! with applied 0 for a person to look at. Without a token the signature is what is trusted.

use firmspace::money::Currency;
use firmspace::payments::{Confirm, Confirmation, PaymentInput};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer about one invoice is reused: copies of a delivery (or a sender replaying
/// a genuine body) cannot make us ask monobank with the merchant's token at their rate.
pub const ANSWER_TTL: Duration = Duration::from_secs(60);

/// monobank's recent answers in this warm function, by integration and invoice.
pub type Answers = Mutex<HashMap<String, (Instant, Confirmation)>>;

/// Asks monobank with one merchant's token.
pub struct Confirmer<'a> {
    pub http: &'a reqwest::Client,
    pub base_url: &'a str,
    pub token: &'a SecretString,
    pub integration: &'a str,
    pub answers: &'a Answers,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    status: String,
    amount: Option<i64>,
    final_amount: Option<i64>,
    ccy: Option<u16>,
    reference: Option<String>,
}

impl Confirm for Confirmer<'_> {
    async fn confirm(&self, input: &PaymentInput) -> Confirmation {
        let asked = format!("{}:{}", self.integration, input.external_id);
        let recent = |answers: &HashMap<String, (Instant, Confirmation)>| {
            answers
                .get(&asked)
                .filter(|(at, _)| at.elapsed() < ANSWER_TTL)
                .map(|(_, answer)| answer.clone())
        };
        if let Some(answer) = recent(&self.answers.lock().unwrap_or_else(|p| p.into_inner())) {
            return answer;
        }
        let answer = self.ask(input).await;
        // Only final answers are kept: "ask again later" must ask again.
        if !matches!(answer, Confirmation::Unavailable(_)) {
            let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
            answers.retain(|_, (at, _)| at.elapsed() < ANSWER_TTL);
            answers.insert(asked, (Instant::now(), answer.clone()));
        }
        answer
    }
}

impl Confirmer<'_> {
    async fn ask(&self, input: &PaymentInput) -> Confirmation {
        let id = input.external_id.as_str();
        let sent = self
            .http
            .get(format!("{}/api/merchant/invoice/status", self.base_url))
            .query(&[("invoiceId", id)])
            .header("X-Token", self.token.expose_secret())
            .timeout(std::time::Duration::from_secs(3))
            .send()
            .await;
        let res = match sent {
            Ok(res) => res,
            Err(e) => {
                return Confirmation::Unavailable(format!(
                    "monobank unreachable: {}",
                    e.without_url()
                ))
            }
        };
        let code = res.status();
        if code.is_server_error() || code.as_u16() == 429 {
            return Confirmation::Unavailable(format!("monobank answered {code}"));
        }
        if !code.is_success() {
            return Confirmation::Refused(format!(
                "monobank answered {code} for invoice {id} with this merchant's token"
            ));
        }
        match res.json::<Status>().await {
            Ok(status) => compare(input, &status),
            Err(_) => {
                Confirmation::Unavailable("monobank's answer was not its invoice status".into())
            }
        }
    }
}

/// Whether monobank's own record says what the webhook says.
fn compare(input: &PaymentInput, status: &Status) -> Confirmation {
    match status.status.as_str() {
        "success" | "reversed" => {}
        // Not final yet on monobank's side: ask again when monobank delivers again.
        "created" | "processing" | "hold" => {
            return Confirmation::Unavailable(format!(
                "monobank says the invoice is {}",
                status.status
            ))
        }
        other => return Confirmation::Refused(format!("monobank says the invoice is {other}")),
    }
    if let (Some(theirs), Some(ours)) = (&status.reference, &input.invoice_ref) {
        if theirs != ours {
            return Confirmation::Refused("monobank's reference is another invoice".into());
        }
    }
    let minor = status.final_amount.or(status.amount);
    let amount = match (minor, status.ccy) {
        (Some(minor), Some(ccy)) => Currency::from_numeric(ccy)
            .and_then(|c| c.from_minor(minor))
            .ok(),
        _ => None,
    };
    if input.amount.is_some() && amount != input.amount {
        return Confirmation::Refused("monobank's amount differs from the webhook's".into());
    }
    Confirmation::Confirmed
}

#[cfg(test)]
mod tests {
    use super::*;
    use firmspace::ids::{ExternalId, OrgId};
    use firmspace::payments::Source;
    use rust_decimal::Decimal;

    fn input() -> PaymentInput {
        PaymentInput {
            org: OrgId::parse("o0123456789ab").unwrap(),
            invoice_ref: Some("inv_1".into()),
            source: Source::Monobank,
            external_id: ExternalId::parse("invoiceId", "p_1").unwrap(),
            amount: Some(Decimal::from(42)),
            currency: Some(Currency::parse("UAH").unwrap()),
            at: chrono::DateTime::UNIX_EPOCH,
            actor: "test".into(),
            reverses: None,
            reversible: true,
            via: None,
        }
    }

    fn status(state: &str, final_amount: i64, reference: &str) -> Status {
        Status {
            status: state.into(),
            amount: Some(final_amount),
            final_amount: Some(final_amount),
            ccy: Some(980),
            reference: Some(reference.into()),
        }
    }

    #[test]
    fn only_the_merchants_own_paid_invoice_with_the_same_amount_and_reference_confirms() {
        assert_eq!(
            compare(&input(), &status("success", 4200, "inv_1")),
            Confirmation::Confirmed
        );
        assert_eq!(
            compare(&input(), &status("reversed", 4200, "inv_1")),
            Confirmation::Confirmed
        );
        assert!(matches!(
            compare(&input(), &status("processing", 4200, "inv_1")),
            Confirmation::Unavailable(_)
        ));
        for (state, amount, reference) in [
            ("failure", 4200, "inv_1"),
            ("expired", 4200, "inv_1"),
            ("success", 100, "inv_1"),
            ("success", 4200, "inv_2"),
        ] {
            assert!(
                matches!(
                    compare(&input(), &status(state, amount, reference)),
                    Confirmation::Refused(_)
                ),
                "{state} {amount} {reference}"
            );
        }
    }
}
