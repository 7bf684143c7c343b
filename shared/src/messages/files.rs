//! The attachments bucket: each object written once (`If-None-Match: *`), read through
//! presigned URLs.

use aws_sdk_s3::primitives::ByteStream;
use std::time::Duration;

/// The attachments bucket: objects written once, read through presigned URLs.
#[derive(Clone, Debug)]
pub struct Files {
    s3: aws_sdk_s3::Client,
    bucket: String,
}

impl Files {
    pub fn new(s3: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        Self {
            s3,
            bucket: bucket.into(),
        }
    }

    /// Writes the object only if its key is new: a concurrent first delivery that wrote it
    /// first leaves its object, and ours is not written.
    pub(super) async fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<(), String> {
        for _ in 0..3 {
            let put = self
                .s3
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .content_type(content_type)
                .if_none_match("*")
                .body(ByteStream::from(bytes.clone()))
                .send()
                .await;
            let e = match put {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            match e.raw_response().map(|r| r.status().as_u16()) {
                // The object is there: a concurrent first delivery wrote the same bytes.
                Some(412) => return Ok(()),
                // A concurrent conditional write of it is under way: ask again.
                Some(409) => tokio::time::sleep(Duration::from_millis(50)).await,
                _ => {
                    tracing::warn!(error = %aws_sdk_s3::error::DisplayErrorContext(&e), "S3 put failed");
                    return Err("the file store refused it".into());
                }
            }
        }
        Err("the file store stayed busy".into())
    }

    /// A URL that reads the object for `expires`, for the API's message list.
    pub async fn presign(&self, key: &str, expires: Duration) -> Option<String> {
        let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(expires).ok()?;
        let req = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(config)
            .await
            .ok()?;
        Some(req.uri().to_owned())
    }
}
