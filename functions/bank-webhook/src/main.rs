#![forbid(unsafe_code)]
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    firmspace::telemetry::init("bank-webhook");
    let app = bank_webhook::from_env().await?;
    firmspace::serve::run(|req| app.handle(req)).await
}
