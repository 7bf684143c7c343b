//! AWS client construction, once per process.

use aws_config::BehaviorVersion;

/// Loads the shared SDK config; an endpoint URL points every client at the local emulator.
pub async fn sdk_config(endpoint_url: Option<&str>) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(url) = endpoint_url {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

pub async fn dynamodb(endpoint_url: Option<&str>) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&sdk_config(endpoint_url).await)
}

pub async fn sqs(endpoint_url: Option<&str>) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&sdk_config(endpoint_url).await)
}
