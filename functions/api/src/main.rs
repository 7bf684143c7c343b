#![forbid(unsafe_code)]
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    firmspace::telemetry::init("api");
    let app = api::App::from_env().await?;
    lambda_http::run(lambda_http::service_fn(|req| app.handle(req))).await
}
