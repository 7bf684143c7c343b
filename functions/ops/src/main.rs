#![forbid(unsafe_code)]
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    firmspace::telemetry::init("ops");
    let app = ops::App::from_env().await?;
    firmspace::serve::run(|req| app.handle(req)).await
}
