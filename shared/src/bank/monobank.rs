//! monobank's personal API: statement rows (`GET /personal/statement/{account}/{from}/{to}`, at
//! most 500 a page newest first, one call per 60 s per token, a range of at most 31 days + 1 hour)
//! and the personal webhook's `StatementItem`. Amounts come in minor units with a numeric
//! currency code.

use super::BankRow;
use crate::money::Currency;
use chrono::{DateTime, TimeZone, Utc};
use rust_decimal::Decimal;
use serde::Deserialize;

/// The longest range one statement call may ask for: 31 days and an hour.
pub const RANGE_MAX_SECS: i64 = 31 * 24 * 3600 + 3600;
/// A full page: ask again with `to` = the last row's time.
pub const PAGE: usize = 500;
pub use crate::egress::MONOBANK_API as API;

/// A statement row as monobank sends it (`id`, `time`, `amount` in minor units signed,
/// `currencyCode` numeric, ...).
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatementItem {
    pub id: String,
    pub time: i64,
    #[serde(default)]
    pub description: String,
    pub amount: i64,
    /// The amount in the operation's own currency (minor units, signed): `amount` when the
    /// operation was in the account's currency.
    #[serde(default)]
    pub operation_amount: Option<i64>,
    pub currency_code: u16,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub counter_name: Option<String>,
}

impl StatementItem {
    /// The row, checked: its amount exact in its currency's minor units. An operation in
    /// another currency than the account's (`operationAmount` is not `amount`) is a person's:
    /// monobank documents `currencyCode` as the account's currency and sends the operation's,
    /// so which currency `amount` is in cannot be read off the row, and money is never booked
    /// in a guessed currency.
    pub fn row(self) -> Result<BankRow, String> {
        if self.operation_amount.is_some_and(|op| op != self.amount) {
            return Err(format!(
                "an operation in another currency (operationAmount {} beside amount {}, \
                 currencyCode {}): which currency the amount is in is left to a person",
                self.operation_amount.unwrap_or_default(),
                self.amount,
                self.currency_code
            ));
        }
        let currency = Currency::from_numeric(self.currency_code).map_err(|_| {
            format!(
                "currencyCode: {} is not an ISO 4217 currency",
                self.currency_code
            )
        })?;
        let time: DateTime<Utc> = Utc
            .timestamp_opt(self.time, 0)
            .single()
            .ok_or("time: not a unix time")?;
        BankRow {
            id: self.id,
            time,
            amount: Decimal::new(self.amount, currency.exponent()),
            currency,
            description: self.description,
            counterparty: self.counter_name.filter(|c| !c.is_empty()),
            reference: self.comment.filter(|c| !c.is_empty()),
        }
        .checked()
    }
}

/// The personal webhook's body: `{"type": "StatementItem", "data": {"account", "statementItem"}}`
/// (`StatementPush`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(as = StatementPush)]
pub struct Pushed {
    #[serde(rename = "type")]
    #[schema(example = "StatementItem")]
    pub kind: String,
    pub data: Option<PushedData>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = StatementData)]
pub struct PushedData {
    pub account: String,
    pub statement_item: StatementItem,
}

/// Why the client's accounts could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountsError {
    /// monobank refused the token (401, 403): the integrator's mistake.
    Refused(u16),
    /// 429, a 5xx or no answer: a retry later can help.
    Unavailable(String),
    /// An answer that is not the client's information, or a client without accounts.
    Unreadable(String),
}

/// The client's accounts, `GET {base}/personal/client-info` with the token: their ids, in
/// monobank's order (its default account first).
pub async fn accounts(
    http: &reqwest::Client,
    base: &str,
    token: &secrecy::SecretString,
    timeout: std::time::Duration,
) -> Result<Vec<String>, AccountsError> {
    use secrecy::ExposeSecret;
    #[derive(Deserialize)]
    struct ClientInfo {
        accounts: Vec<Account>,
    }
    #[derive(Deserialize)]
    struct Account {
        id: String,
    }
    let url = format!("{}/personal/client-info", base.trim_end_matches('/'));
    let answer = http
        .get(url)
        .header("X-Token", token.expose_secret())
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| {
            AccountsError::Unavailable(format!("monobank unreachable: {}", e.without_url()))
        })?;
    let status = answer.status().as_u16();
    match status {
        200..=299 => {}
        401 | 403 => return Err(AccountsError::Refused(status)),
        _ => {
            return Err(AccountsError::Unavailable(format!(
                "monobank answered {status}"
            )))
        }
    }
    let body = answer.bytes().await.map_err(|e| {
        AccountsError::Unavailable(format!("reading client-info: {}", e.without_url()))
    })?;
    let info: ClientInfo = serde_json::from_slice(&body).map_err(|e| {
        AccountsError::Unreadable(format!(
            "not client-info: {}",
            crate::fields::plain(&e.to_string())
        ))
    })?;
    let ids: Vec<String> = info.accounts.into_iter().map(|a| a.id).collect();
    match ids.is_empty() {
        true => Err(AccountsError::Unreadable(
            "the client has no account".into(),
        )),
        false => Ok(ids),
    }
}

/// A statement row that could not be read: its id (the row's, else a digest of the row), its
/// time when it has one, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub id: String,
    pub time: Option<i64>,
    pub why: String,
}

/// A page of the statement, read row by row: each row or why it cannot be read (one bad row is
/// its own, the others are stored), and whether another page is to be asked for. Only a body
/// that is no list at all is refused whole.
pub fn page(body: &[u8]) -> Result<(Vec<Result<StatementItem, Unreadable>>, bool), String> {
    let rows: Vec<serde_json::Value> = serde_json::from_slice(body)
        .map_err(|e| format!("not a statement: {}", crate::fields::plain(&e.to_string())))?;
    let full = rows.len() >= PAGE;
    Ok((rows.into_iter().map(read_row).collect(), full))
}

fn read_row(raw: serde_json::Value) -> Result<StatementItem, Unreadable> {
    let id = match raw.get("id").and_then(serde_json::Value::as_str) {
        Some(id) if !id.is_empty() && id.len() <= crate::fields::KEY_MAX => id.to_owned(),
        _ => crate::ids::ExternalId::of_body(raw.to_string().as_bytes()).to_string(),
    };
    let time = raw.get("time").and_then(serde_json::Value::as_i64);
    serde_json::from_value(raw).map_err(|e| Unreadable {
        id,
        time,
        why: format!(
            "not a statement row: {}",
            crate::fields::plain(&e.to_string())
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_in_kopiyky_becomes_an_exact_signed_amount() {
        let item: StatementItem = serde_json::from_str(
            r#"{"id":"ZuHWzqkKGVo=","time":1554466347,"description":"Payment INV-00042","mcc":7997,
                "originalMcc":7997,"hold":false,"amount":-95000,"operationAmount":-95000,"currencyCode":980,
                "commissionRate":0,"cashbackAmount":19000,"balance":10050000,"comment":"for the order",
                "receiptId":"XXXX-XXXX","counterEdrpou":"3096889974","counterIban":"UA89...","counterName":"TOV"}"#,
        )
        .unwrap();
        let row = item.row().unwrap();
        assert_eq!(row.amount.to_string(), "-950.00");
        assert_eq!(row.currency.as_str(), "UAH");
        assert_eq!(row.reference.as_deref(), Some("for the order"));
        assert_eq!(row.counterparty.as_deref(), Some("TOV"));
        assert_eq!(row.time.timestamp(), 1554466347);
    }

    #[test]
    fn a_page_is_read_row_by_row_and_a_bad_row_is_its_own() {
        let body = br#"[{"id":"a","time":10,"amount":100,"currencyCode":980},
                        {"id":"b","time":9,"amount":"lots","currencyCode":980},
                        {"time":8}]"#;
        let (rows, full) = page(body).unwrap();
        assert!(!full);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].as_ref().unwrap().id, "a");
        let bad = rows[1].as_ref().unwrap_err();
        assert_eq!((bad.id.as_str(), bad.time), ("b", Some(9)));
        assert!(bad.why.starts_with("not a statement row"), "{}", bad.why);
        assert_eq!(rows[2].as_ref().unwrap_err().time, Some(8));
        assert!(page(b"{\"error\": 1}").is_err(), "no list at all");
    }

    #[test]
    fn an_unknown_currency_or_a_zero_amount_is_refused() {
        let item = |amount: i64, code: u16| StatementItem {
            id: "r".into(),
            time: 1,
            description: String::new(),
            amount,
            operation_amount: Some(amount),
            currency_code: code,
            comment: None,
            counter_name: None,
        };
        assert!(item(100, 999).row().is_err());
        assert!(item(0, 980).row().is_err());
        assert!(
            item(100, 392).row().is_ok(),
            "JPY has no minor units: 100 yen"
        );
        // A 9.80 USD purchase on a UAH card: -439.34 is UAH, though currencyCode says USD.
        let abroad = StatementItem {
            operation_amount: Some(-980),
            ..item(-43934, 840)
        };
        let why = abroad.row().unwrap_err();
        assert!(why.contains("another currency"), "{why}");
        let unsaid = StatementItem {
            operation_amount: None,
            ..item(4000, 980)
        };
        assert_eq!(
            unsaid.row().unwrap().amount,
            rust_decimal::Decimal::new(4000, 2)
        );
    }
}
