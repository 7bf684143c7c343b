//! monobank acquiring: `X-Sign` is the base64 DER ECDSA (P-256, SHA-256) signature of the raw
//! body, checked with the merchant public key (base64 of a PEM, from `GET /api/merchant/pubkey`).
//! The key is parsed once per integration and verified with aws-lc-rs, the crypto library the
//! TLS stack already links.

use super::{header, SignatureError, Verified, Verify};
use aws_lc_rs::signature::{ParsedPublicKey, ECDSA_P256_SHA256_ASN1};
use base64::{engine::general_purpose::STANDARD as B64, Engine};
use chrono::{DateTime, Utc};
use http::HeaderMap;

pub const SIGNATURE: &str = "x-sign";

/// The DER `SubjectPublicKeyInfo` inside the key as monobank hands it out: base64 of a PEM (a
/// bare PEM is accepted too).
fn spki_der(raw: &str) -> Result<Vec<u8>, SignatureError> {
    let pem = if raw.trim_start().starts_with("-----BEGIN") {
        raw.to_owned()
    } else {
        let bytes = B64.decode(raw.trim()).map_err(|_| SignatureError::BadKey)?;
        String::from_utf8(bytes).map_err(|_| SignatureError::BadKey)?
    };
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PUBLIC KEY-----")
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    B64.decode(body).map_err(|_| SignatureError::BadKey)
}

/// A merchant key, parsed once.
pub struct Verifier {
    key: ParsedPublicKey,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("monobank::Verifier")
    }
}

impl Verifier {
    pub fn new(public_key: &str) -> Result<Self, SignatureError> {
        let der = spki_der(public_key)?;
        let key = ParsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, der)
            .map_err(|_| SignatureError::BadKey)?;
        Ok(Self { key })
    }
}

impl Verify for Verifier {
    fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        _now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError> {
        let x_sign = header(headers, SIGNATURE, "X-Sign")?;
        let der = B64
            .decode(x_sign.trim())
            .map_err(|_| SignatureError::Malformed)?;
        self.key
            .verify_sig(body, &der)
            .map_err(|_| SignatureError::Mismatch)?;
        Ok(Verified::default())
    }
}

/// A merchant key that signs as monobank does, for what stands in for monobank (the `send`
/// tool, the tests): a P-256 key from its 32-byte private scalar, with aws-lc-rs.
pub struct StandIn {
    pair: aws_lc_rs::signature::EcdsaKeyPair,
}

impl StandIn {
    /// The key whose private scalar is `scalar` (an RFC 5915 `ECPrivateKey` on P-256; the public
    /// key is derived from it).
    pub fn from_scalar(scalar: [u8; 32]) -> Result<Self, SignatureError> {
        // SEQUENCE { INTEGER 1, OCTET STRING scalar, [0] OID prime256v1 }
        let mut der = vec![0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20];
        der.extend_from_slice(&scalar);
        der.extend_from_slice(&[
            0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
        ]);
        let pair = aws_lc_rs::signature::EcdsaKeyPair::from_private_key_der(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &der,
        )
        .map_err(|_| SignatureError::BadKey)?;
        Ok(Self { pair })
    }

    /// `X-Sign` of `body`: base64 of the DER signature.
    pub fn sign(&self, body: &[u8]) -> String {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let signature = self
            .pair
            .sign(&rng, body)
            .expect("a P-256 key signs any message");
        B64.encode(signature.as_ref())
    }

    /// The public key as monobank hands one out: base64 of its PEM.
    pub fn public_key(&self) -> String {
        use aws_lc_rs::encoding::AsDer;
        use aws_lc_rs::signature::KeyPair;
        let der = self
            .pair
            .public_key()
            .as_der()
            .expect("a P-256 public key encodes");
        let body = B64.encode(der.as_ref());
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
            .collect();
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        );
        B64.encode(pem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_signs_what_the_verifier_accepts() {
        let key = StandIn::from_scalar([7u8; 32]).unwrap();
        let verifier = Verifier::new(&key.public_key()).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(SIGNATURE, key.sign(b"{}").parse().unwrap());
        assert!(verifier.verify(&headers, b"{}", Utc::now()).is_ok());
        assert!(verifier.verify(&headers, b"{ }", Utc::now()).is_err());
        let other = StandIn::from_scalar([9u8; 32]).unwrap();
        assert_ne!(other.public_key(), key.public_key());
    }

    // Key pair and signature made with `openssl ecparam -name prime256v1` and
    // `openssl dgst -sha256 -sign`, independent of this code.
    pub const PUBLIC_KEY: &str = "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUZrd0V3WUhLb1pJemowQ0FRWUlLb1pJemowREFRY0RRZ0FFaXVBREJyeUkwa3RvVHdVaWpFS21QR3RlKzhEWgpJbWtDamFvQkprb1YzVUV1aTFzeERLaytOZDlPSXdrbldBKy9ma1MvaWtJSFRpTGJqcHlUV2pMSlZnPT0KLS0tLS1FTkQgUFVCTElDIEtFWS0tLS0tCg==";
    const BODY: &[u8] =
        br#"{"invoiceId":"p2_9ZgpZVsl3","status":"success","amount":4200,"ccy":980,"reference":"inv_1"}"#;
    const X_SIGN: &str = "MEQCIFb+M0e4GFU1V73Sq68xfkCGuTijiBsO5TzNl05t4L/EAiANtWQk9YvWlkKmcyzrfOclNWAQsqrZvKAecg0J8eahUw==";

    fn verify(key: &str, x_sign: Option<&str>, body: &[u8]) -> Result<Verified, SignatureError> {
        let mut h = HeaderMap::new();
        if let Some(v) = x_sign {
            h.insert(SIGNATURE, v.parse().unwrap());
        }
        Verifier::new(key)?.verify(&h, body, DateTime::UNIX_EPOCH)
    }

    #[test]
    fn openssl_signature_verifies() {
        assert_eq!(
            verify(PUBLIC_KEY, Some(X_SIGN), BODY),
            Ok(Verified::default())
        );
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
