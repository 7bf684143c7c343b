//! Every outbound HTTP call leaves through here: the messengers' APIs, monobank's personal API,
//! automation's targets. One client constructor (rustls with the AWS-LC provider), and one guard:
//! no redirects, and a resolver that connects only to public addresses (loopback only on the
//! local and test stages), so a new caller cannot skip it.

pub mod outbound;
pub mod targets;

pub use outbound::OutboundTarget;

use std::sync::Arc;
use std::time::Duration;

/// An HTTP client for outgoing calls. It uses the same rustls and aws-lc-rs crypto as the AWS SDK,
/// so the functions carry one TLS stack.
pub fn client(builder: reqwest::ClientBuilder) -> reqwest::Client {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Already installed by someone else is fine: any installed provider serves.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
    builder.build().expect("the TLS backend initialises")
}

/// A client held to the guard: no redirects, public addresses only (loopback where allowed).
pub fn guarded(allow_loopback: bool) -> reqwest::Client {
    client(
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // A connection never made is certainly no delivery (a connect error, retried),
            // where the request's whole timeout would leave it unclear.
            .connect_timeout(CONNECT_WITHIN)
            .dns_resolver(Arc::new(targets::PublicOnly { allow_loopback })),
    )
}

/// How long a connection to a target or a provider may take to be made.
pub const CONNECT_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// monobank's personal API (statements).
pub const MONOBANK_API: &str = "https://api.monobank.ua";

/// Where the messengers' APIs are, and the client that calls them: no redirects, and every
/// connection to a public address (loopback only on the local and test stages).
#[derive(Clone, Debug)]
pub struct Apis {
    pub http: reqwest::Client,
    pub telegram: String,
    pub whatsapp: String,
    /// monobank's personal API (statements).
    pub monobank: String,
    pub allow_loopback: bool,
    /// Each call to a messenger's API.
    pub timeout: Duration,
    /// All downloads of one delivery together: what is left after it is recorded as not
    /// fetched, so the message is stored before the function's own timeout.
    pub download_budget: Duration,
}

pub const TELEGRAM_API: &str = "https://api.telegram.org";
pub const WHATSAPP_API: &str = "https://graph.facebook.com/v21.0";

impl Apis {
    pub fn new(telegram: &str, whatsapp: &str, allow_loopback: bool, timeout: Duration) -> Self {
        Self {
            http: guarded(allow_loopback),
            telegram: telegram.trim_end_matches('/').to_owned(),
            whatsapp: whatsapp.trim_end_matches('/').to_owned(),
            monobank: MONOBANK_API.to_owned(),
            allow_loopback,
            timeout,
            download_budget: Duration::from_secs(18),
        }
    }

    /// From `TELEGRAM_API_URL`, `WHATSAPP_API_URL` (the public APIs when unset) and
    /// `CHANNEL_TIMEOUT_MS` (default 10000) and `DOWNLOAD_BUDGET_MS` (default 18000).
    pub fn from_env(allow_loopback: bool) -> Result<Self, crate::config::ConfigError> {
        use crate::config::{parse_var, var};
        let mut apis = Self::new(
            &var("TELEGRAM_API_URL").unwrap_or_else(|| TELEGRAM_API.into()),
            &var("WHATSAPP_API_URL").unwrap_or_else(|| WHATSAPP_API.into()),
            allow_loopback,
            Duration::from_millis(parse_var("CHANNEL_TIMEOUT_MS", 10_000)?),
        );
        apis.download_budget = Duration::from_millis(parse_var("DOWNLOAD_BUDGET_MS", 18_000)?);
        if let Some(monobank) = var("MONOBANK_PERSONAL_API_URL") {
            apis.monobank = monobank.trim_end_matches('/').to_owned();
        }
        Ok(apis)
    }
}
