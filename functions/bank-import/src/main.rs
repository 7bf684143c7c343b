#![forbid(unsafe_code)]
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    firmspace::telemetry::init("bank-import");
    let app = bank_import::App::from_env().await?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| app.handle(event))).await
}
