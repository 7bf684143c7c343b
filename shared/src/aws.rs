//! AWS client construction, once per process.

use aws_config::BehaviorVersion;

pub mod meter;

pub use meter::{Meter, Units};

/// The roots of every AWS endpoint's certificate (Amazon Trust Services), in PEM.
const AWS_ROOTS: &str = include_str!("aws-roots.pem");

/// Loads the shared SDK config; an endpoint URL points every client at the local emulator.
///
/// The clients trust only the roots AWS endpoints chain to. The SDK's default trust store is
/// the platform's, read and parsed from disk when the config loads: that was 4 to 8 ms of
/// every cold start here (docs/measurements.md, "Cold start").
pub async fn sdk_config(endpoint_url: Option<&str>) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(https_client());
    if let Some(url) = endpoint_url {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

fn https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{
        rustls_provider::CryptoMode, Provider, TlsContext, TrustStore,
    };
    let roots = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(AWS_ROOTS.as_bytes());
    let tls = TlsContext::builder()
        .with_trust_store(roots)
        .build()
        .expect("a trust store of PEM certificates builds");
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(tls)
        .build_https()
}

pub async fn dynamodb(endpoint_url: Option<&str>) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&sdk_config(endpoint_url).await)
}

/// S3; against a local endpoint with path-style addresses (`{endpoint}/{bucket}/{key}`), since
/// a bucket's host name does not resolve there.
pub fn s3(config: &aws_config::SdkConfig, local: bool) -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::config::Builder::from(config)
        .force_path_style(local)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

pub async fn sqs(endpoint_url: Option<&str>) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&sdk_config(endpoint_url).await)
}

/// Amazon Bedrock's runtime: the automation worker's `ai` action.
pub async fn bedrock(endpoint_url: Option<&str>) -> aws_sdk_bedrockruntime::Client {
    aws_sdk_bedrockruntime::Client::new(&sdk_config(endpoint_url).await)
}

/// The Lambda API: the operator's view pauses a worker by its event source mapping.
pub async fn lambda(endpoint_url: Option<&str>) -> aws_sdk_lambda::Client {
    aws_sdk_lambda::Client::new(&sdk_config(endpoint_url).await)
}

/// An SDK interceptor that records the operation name of every DynamoDB request sent (retries
/// included) and the units each answer reports: tests assert round trips and units with it,
/// `cargo xtask bench` counts them per event.
#[derive(Clone, Debug, Default)]
pub struct CallLog(
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The IAM actions the requests needed (a transaction's, by its items' kinds).
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// Each answered request's operation and units, in order.
    std::sync::Arc<std::sync::Mutex<Vec<(String, Units)>>>,
);

/// The IAM actions one DynamoDB request needs: its operation's, or for a transaction each of its
/// items' (`Put` → `dynamodb:PutItem`, `ConditionCheck` → `dynamodb:ConditionCheckItem`, ...).
fn actions(operation: &str, body: Option<&[u8]>) -> Vec<String> {
    let items = |key: &str| -> Vec<String> {
        let parsed: serde_json::Value = body
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        let mut kinds: Vec<String> = parsed[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item.as_object()?.keys().next().cloned())
            .map(|kind| format!("dynamodb:{kind}Item"))
            .collect();
        kinds.dedup();
        kinds
    };
    match operation {
        "TransactWriteItems" | "TransactGetItems" => items("TransactItems"),
        op if op.starts_with("S3 ") => Vec::new(),
        op => vec![format!("dynamodb:{op}")],
    }
}

impl CallLog {
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.1.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.2.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Each answered request since the last `clear`: its operation and the units it reported.
    pub fn metered(&self) -> Vec<(String, Units)> {
        self.2.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The units of every request since the last `clear`.
    pub fn units(&self) -> Units {
        self.metered().into_iter().map(|(_, u)| u).sum()
    }

    /// Every IAM action the requests since the last `clear` needed (`dynamodb:GetItem`, ...).
    pub fn actions(&self) -> std::collections::BTreeSet<String> {
        self.1.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Operation names since the last `clear`, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A DynamoDB client on `config` that records into this log (the units once a store's
    /// meter asks for them, as every store's does).
    pub fn dynamodb(&self, config: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
        let config = aws_sdk_dynamodb::config::Builder::from(config)
            .interceptor(self.clone())
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }
}

impl CallLog {
    /// An SQS client whose every request is logged (`SendMessageBatch`, ...).
    pub fn sqs(&self, config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
        let config = aws_sdk_sqs::config::Builder::from(config)
            .interceptor(self.clone())
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }

    /// A KMS client whose every request is logged (`Decrypt`, `GenerateDataKey`, ...).
    pub fn kms(&self, config: &aws_config::SdkConfig) -> aws_sdk_kms::Client {
        let config = aws_sdk_kms::config::Builder::from(config)
            .interceptor(self.clone())
            .build();
        aws_sdk_kms::Client::from_conf(config)
    }

    /// An S3 client whose every request is logged (`S3 PUT`, `S3 GET`, ...).
    pub fn s3(&self, config: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
        let config = aws_sdk_s3::config::Builder::from(config)
            .force_path_style(true)
            .interceptor(self.clone())
            .build();
        aws_sdk_s3::Client::from_conf(config)
    }
}

impl aws_sdk_dynamodb::config::Intercept for CallLog {
    fn name(&self) -> &'static str {
        "CallLog"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        // DynamoDB names its operation in `x-amz-target`; S3 (REST) is told by its method.
        let target = meter::operation(context.request());
        let needed = actions(&target, context.request().body().bytes());
        self.1
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(needed);
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(target);
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::AfterDeserializationInterceptorContextRef<
            '_,
        >,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        // The operation the store's `Meter` kept when the attempt was sent.
        let Some((op, units)) = meter::answered(cfg, context.response()) else {
            return Ok(());
        };
        self.2
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((op, units));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::AWS_ROOTS;
    use rustls_pki_types::{pem::PemObject, CertificateDer};

    #[test]
    fn the_aws_roots_are_five_certificates_each_a_root_of_mozillas_store() {
        let certs: Vec<CertificateDer> = CertificateDer::pem_slice_iter(AWS_ROOTS.as_bytes())
            .collect::<Result<_, _>>()
            .expect("PEM");
        assert_eq!(certs.len(), 5);
        for cert in &certs {
            let anchor = webpki::anchor_from_trusted_cert(cert).expect("a CA certificate");
            assert!(
                webpki_roots::TLS_SERVER_ROOTS
                    .iter()
                    .any(|root| root.subject == anchor.subject
                        && root.subject_public_key_info == anchor.subject_public_key_info),
                "not one of Mozilla's roots: {:?}",
                anchor.subject
            );
        }
    }
}
