//! Logging set-up: JSON in Lambda (`AWS_LAMBDA_LOG_FORMAT=JSON`), plain text elsewhere.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once; later calls are ignored.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .without_time();
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}
