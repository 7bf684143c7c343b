//! monobank acquiring: `X-Sign` is the base64 DER ECDSA (P-256, SHA-256) signature of the raw body,
//! checked with the merchant public key (base64 of a PEM, from `GET /api/merchant/pubkey`).

use super::SignatureError;
use base64::{engine::general_purpose::STANDARD as B64, Engine};
use p256::ecdsa::{signature::Verifier, Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;

/// Parses the merchant key as monobank hands it out: base64 of a PEM (a bare PEM is accepted too).
pub fn parse_public_key(raw: &str) -> Result<VerifyingKey, SignatureError> {
    let pem = if raw.trim_start().starts_with("-----BEGIN") {
        raw.to_owned()
    } else {
        let bytes = B64.decode(raw.trim()).map_err(|_| SignatureError::BadKey)?;
        String::from_utf8(bytes).map_err(|_| SignatureError::BadKey)?
    };
    VerifyingKey::from_public_key_pem(&pem).map_err(|_| SignatureError::BadKey)
}

pub fn verify(public_key: &str, x_sign: Option<&str>, body: &[u8]) -> Result<(), SignatureError> {
    let x_sign = x_sign.ok_or(SignatureError::Missing("X-Sign"))?;
    let der = B64
        .decode(x_sign.trim())
        .map_err(|_| SignatureError::Malformed)?;
    let signature = Signature::from_der(&der).map_err(|_| SignatureError::Malformed)?;
    let key = parse_public_key(public_key)?;
    key.verify(body, &signature)
        .map_err(|_| SignatureError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Key pair and signature made with `openssl ecparam -name prime256v1` and
    // `openssl dgst -sha256 -sign`, independent of this code.
    pub const PUBLIC_KEY: &str = "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUZrd0V3WUhLb1pJemowQ0FRWUlLb1pJemowREFRY0RRZ0FFaXVBREJyeUkwa3RvVHdVaWpFS21QR3RlKzhEWgpJbWtDamFvQkprb1YzVUV1aTFzeERLaytOZDlPSXdrbldBKy9ma1MvaWtJSFRpTGJqcHlUV2pMSlZnPT0KLS0tLS1FTkQgUFVCTElDIEtFWS0tLS0tCg==";
    const BODY: &[u8] =
        br#"{"invoiceId":"p2_9ZgpZVsl3","status":"success","amount":4200,"ccy":980,"reference":"inv_1"}"#;
    const X_SIGN: &str = "MEQCIFb+M0e4GFU1V73Sq68xfkCGuTijiBsO5TzNl05t4L/EAiANtWQk9YvWlkKmcyzrfOclNWAQsqrZvKAecg0J8eahUw==";

    #[test]
    fn openssl_signature_verifies() {
        assert_eq!(verify(PUBLIC_KEY, Some(X_SIGN), BODY), Ok(()));
    }

    #[test]
    fn one_changed_byte_is_refused() {
        let mut body = BODY.to_vec();
        body[40] ^= 1;
        assert_eq!(
            verify(PUBLIC_KEY, Some(X_SIGN), &body),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn garbage_and_absence_are_refused() {
        assert_eq!(
            verify(PUBLIC_KEY, None, BODY),
            Err(SignatureError::Missing("X-Sign"))
        );
        assert_eq!(
            verify(PUBLIC_KEY, Some("!!"), BODY),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify("bm90IGEga2V5", Some(X_SIGN), BODY),
            Err(SignatureError::BadKey)
        );
    }
}
