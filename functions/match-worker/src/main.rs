#![forbid(unsafe_code)]
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    firmspace::telemetry::init("match-worker");
    let app = match_worker::from_env().await?;
    lambda_runtime::run(lambda_runtime::service_fn(|event| app.handle(event))).await
}
