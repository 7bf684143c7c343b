//! The attachments bucket: each object written once (`If-None-Match: *`), read through
//! presigned URLs.

use aws_sdk_s3::primitives::ByteStream;
use std::time::Duration;

/// The types an attachment is served as, as the sender claimed them: what a browser shows
/// without running anything. Anything else (HTML, SVG, scripts, unknown) is served as
/// `application/octet-stream`, and every attachment as a download.
const SERVED_TYPES: &[&str] = &[
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "application/pdf",
    "audio/ogg",
    "audio/mpeg",
    "audio/mp4",
    "audio/aac",
    "video/mp4",
    "text/plain",
];

/// The type `claimed` is served as: itself when allowed (parameters dropped), else
/// `application/octet-stream`.
pub fn served_type(claimed: &str) -> &'static str {
    let base = claimed
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    SERVED_TYPES
        .iter()
        .find(|t| **t == base)
        .copied()
        .unwrap_or("application/octet-stream")
}

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
        let mut rounds = crate::store::write::Rounds::new();
        while rounds.next().await {
            let put = self
                .s3
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .content_type(served_type(content_type))
                .content_disposition("attachment")
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
                Some(409) => continue,
                _ => {
                    tracing::warn!(error = %aws_sdk_s3::error::DisplayErrorContext(&e), "S3 put failed");
                    return Err("the file store refused it".into());
                }
            }
        }
        Err("the file store stayed busy".into())
    }

    /// A URL that reads the object for `expires`, for the API's message list: served as a
    /// download (`Content-Disposition: attachment`) of an allowed type (`served_type`), whatever
    /// the object was stored with.
    pub async fn presign(&self, key: &str, claimed: &str, expires: Duration) -> Option<String> {
        let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(expires).ok()?;
        let req = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .response_content_disposition("attachment")
            .response_content_type(served_type(claimed))
            .presigned(config)
            .await
            .ok()?;
        Some(req.uri().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::served_type;

    #[test]
    fn only_harmless_types_are_served_as_themselves() {
        assert_eq!(served_type("image/PNG"), "image/png");
        assert_eq!(served_type("text/plain; charset=utf-8"), "text/plain");
        for risky in [
            "text/html",
            "image/svg+xml",
            "application/javascript",
            "",
            "x",
        ] {
            assert_eq!(served_type(risky), "application/octet-stream", "{risky}");
        }
    }
}
