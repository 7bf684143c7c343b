//! A bank integration's settings (monobank's token asked for its accounts) and what its
//! integrator is told.

use super::NewIntegration;
use crate::bank::providers::{upload_url, webhook_url, BankProvider, BankSettings};
use crate::commands::answers::IntegrationCreated;
use crate::commands::Refused;
use crate::fields::{self, NAME_MAX, SECRET_MAX};
use crate::integrations::Integration;
use crate::store::item::parse_tag;
use secrecy::SecretString;
use serde_json::json;

/// A bank integration's settings from the fields of `POST /api/integrations`: monobank with its
/// `token` and `account` (default `0`), or `csv` with a `name`.
pub async fn settings(
    body: &NewIntegration,
    allows_loopback: bool,
) -> Result<BankSettings, Refused> {
    match body.provider.as_deref().and_then(parse_tag::<BankProvider>) {
        Some(BankProvider::Monobank) => {
            let token = body.token.as_deref().ok_or_else(|| {
                Refused::invalid(
                    "missing_field",
                    "monobank needs token (the personal X-Token)",
                )
            })?;
            let account = body.account.as_deref().unwrap_or("0");
            fields::reference("account", account, fields::REF_MAX)?;
            let api_url = super::stand_in_url(body, allows_loopback)?;
            let token = SecretString::from(fields::secret("token", token, SECRET_MAX)?.to_owned());
            // The token is asked for its accounts whatever the account named: a token monobank
            // refuses makes no integration. `0` is monobank's name for the default account in
            // a statement call, while a push names the real id: resolved once, here, so every
            // later comparison is exact; a named one must be the token's.
            let accounts = token_accounts(&token, api_url.as_deref(), allows_loopback).await?;
            let account =
                match account {
                    "0" => accounts.into_iter().next().unwrap_or_default(),
                    named if accounts.iter().any(|a| a == named) => named.to_owned(),
                    _ => return Err(Refused::invalid(
                        "unknown_account",
                        "the account is not one of the token's (monobank's client info lists them)",
                    )),
                };
            Ok(BankSettings::Monobank {
                token,
                account,
                api_url,
            })
        }
        Some(BankProvider::Csv) => {
            let name = body.name.as_deref().unwrap_or("CSV import");
            Ok(BankSettings::Csv {
                name: fields::name("name", name, NAME_MAX)?.to_owned(),
            })
        }
        None => Err(Refused::invalid(
            "invalid_provider",
            "a bank integration's provider is monobank or csv",
        )),
    }
}

/// The client's accounts, its default first, asked with the token.
async fn token_accounts(
    token: &SecretString,
    api_url: Option<&str>,
    allows_loopback: bool,
) -> Result<Vec<String>, Refused> {
    use crate::bank::monobank::{accounts, AccountsError, API};
    let http = crate::egress::guarded(allows_loopback);
    let base = api_url.unwrap_or(API);
    match accounts(&http, base, token, std::time::Duration::from_secs(5)).await {
        Ok(ids) => Ok(ids),
        Err(AccountsError::Refused(status)) => Err(Refused::invalid(
            "invalid_token",
            format!("monobank refused the token ({status}) when asked for its accounts"),
        )),
        Err(AccountsError::Unreadable(why)) => Err(Refused::invalid("no_account", why)),
        Err(AccountsError::Unavailable(why)) => {
            tracing::warn!(%why, "monobank's accounts could not be read");
            Err(Refused::unavailable("unavailable",
                "monobank could not be asked for the token's accounts now (it allows one call a minute); retry later",
            ))
        }
    }
}

/// What the integrator is told: monobank's webhook URL (its id is the secret), or where to
/// upload files.
pub fn describe(
    integration: &Integration,
    b: &BankSettings,
    public_url: &str,
) -> IntegrationCreated {
    let provider = Some(json!(b.provider()));
    match b {
        BankSettings::Monobank { account, .. } => IntegrationCreated {
            provider,
            account: Some(account.clone()),
            webhook_url: Some(webhook_url(public_url, &integration.id)),
            signature: Some(
                "none: the webhook URL is the secret (128 random bits); keep it private".to_owned(),
            ),
            ..IntegrationCreated::default()
        },
        BankSettings::Csv { name } => IntegrationCreated {
            provider,
            name: Some(name.clone()),
            upload_url: Some(upload_url(public_url, &integration.id)),
            ..IntegrationCreated::default()
        },
    }
}
