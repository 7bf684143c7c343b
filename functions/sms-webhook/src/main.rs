#![forbid(unsafe_code)]
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    firmspace::telemetry::init("sms-webhook");
    let app = sms_webhook::from_env().await?;
    firmspace::serve::run(|req| app.handle(req)).await
}
