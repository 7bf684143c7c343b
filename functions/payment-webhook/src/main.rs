#![forbid(unsafe_code)]

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    firmspace::telemetry::init();
    let app = payment_webhook::App::from_env().await?;
    lambda_http::run(lambda_http::service_fn(|req| app.handle(req))).await
}
