//! What a caller may put in a field. Every identifier and text that reaches us is held to a
//! length and a charset here, at the edge, before anything is written: beyond a limit is a 400
//! that names the field, never a DynamoDB refusal of an oversized key or item. The README's
//! "Limits" table lists the same numbers.

use thiserror::Error;

/// References to the CRM's records and people: `contact_id`, `deal_id`, `company_id`,
/// `owner`, `user_id`, `actor`, `recipient`, an invoice reference in a webhook.
pub const REF_MAX: usize = 128;
/// Keys a caller or provider chooses: `Idempotency-Key`, provider payment ids, notification keys.
pub const KEY_MAX: usize = 255;
/// Names of organisations and members.
pub const NAME_MAX: usize = 200;
/// A task title.
pub const TITLE_MAX: usize = 500;
/// A message text.
pub const TEXT_MAX: usize = 4000;
/// An outbound URL.
pub const URL_MAX: usize = 2048;
/// A signing secret or a provider token.
pub const SECRET_MAX: usize = 256;
/// monobank's public key (base64 of a PEM).
pub const PUBLIC_KEY_MAX: usize = 4096;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{field}: {reason}")]
pub struct FieldError {
    pub field: &'static str,
    pub reason: String,
}

/// A whole number as JSON may write it: `227` or `227.0` (JSON Schema's `integer` is either),
/// never `227.5`, a negative or more than `u32` holds.
pub fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    use serde::de::Error;
    let number = <serde_json::Number as serde::Deserialize>::deserialize(d)?;
    let whole = match (number.as_u64(), number.as_f64()) {
        (Some(n), _) => u32::try_from(n).ok(),
        (None, Some(f)) if f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f) => {
            Some(f as u32)
        }
        _ => None,
    };
    whole.ok_or_else(|| D::Error::custom(format!("expected a whole number, not {number}")))
}

/// Characters no field may hold: control characters and the noncharacters U+FFFE and U+FFFF,
/// which SQS refuses (a consequence carrying one could never be queued).
pub fn forbidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}')
}

/// The invisible characters that reorder what follows them: bidirectional embeddings, overrides
/// and isolates (U+202A–U+202E, U+2066–U+2069) and the marks U+200E, U+200F.
fn reorders(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// A customer's text as one line of ours (a notification's, an activity line's): its line
/// breaks and tabs a space, and the invisible characters that reorder what follows them
/// (bidirectional embeddings, overrides and isolates, U+202A–U+202E, U+2066–U+2069, U+200E,
/// U+200F) dropped, so what a customer wrote can neither start a line that looks like ours nor
/// turn ours around.
pub fn one_line(text: &str) -> String {
    text.chars()
        .filter(|c| !reorders(*c))
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c => c,
        })
        .collect()
}

/// Text a customer wrote, kept rather than refused: every forbidden character but tab and line
/// breaks becomes U+FFFD, so the text can travel through SQS and be shown.
pub fn printable(raw: String) -> String {
    if !raw
        .chars()
        .any(|c| forbidden(c) && !matches!(c, '\n' | '\r' | '\t'))
    {
        return raw;
    }
    raw.chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => c,
            c if forbidden(c) => '\u{FFFD}',
            c => c,
        })
        .collect()
}

fn refuse(field: &'static str, reason: impl Into<String>) -> FieldError {
    FieldError {
        field,
        reason: reason.into(),
    }
}

/// A reference or key: 1 to `max` bytes of UTF-8 (DynamoDB bounds keys in bytes), none of them a
/// control character, white space or `#` (the separator of our keys).
pub fn reference<'a>(field: &'static str, raw: &'a str, max: usize) -> Result<&'a str, FieldError> {
    if raw.is_empty() || raw.len() > max {
        return Err(refuse(field, format!("must be 1 to {max} bytes")));
    }
    if raw
        .chars()
        .any(|c| forbidden(c) || c.is_whitespace() || c == '#')
    {
        return Err(refuse(
            field,
            "must not contain control characters, white space or '#'",
        ));
    }
    Ok(raw)
}

/// One line of text (a title, a reason, a key): trimmed, 1 to `max` characters, no control
/// characters.
pub fn line<'a>(field: &'static str, raw: &'a str, max: usize) -> Result<&'a str, FieldError> {
    let trimmed = raw.trim();
    let count = trimmed.chars().count();
    if count == 0 || count > max {
        return Err(refuse(field, format!("must be 1 to {max} characters")));
    }
    if trimmed.chars().any(forbidden) {
        return Err(refuse(field, "must not contain control characters"));
    }
    Ok(trimmed)
}

/// A name a person gives (an organisation's, a member's, a contact's, a key's): a [`line`]
/// without the invisible characters that reorder what follows them, so a name shown on the page
/// or in a notification cannot turn the line around it.
pub fn name<'a>(field: &'static str, raw: &'a str, max: usize) -> Result<&'a str, FieldError> {
    let name = line(field, raw, max)?;
    if name.chars().any(reorders) {
        return Err(refuse(
            field,
            "must not contain bidirectional embeddings, overrides, isolates or marks",
        ));
    }
    Ok(name)
}

/// Text over several lines (a message): 1 to `max` characters; tab and line breaks are the only
/// control characters allowed.
pub fn text<'a>(field: &'static str, raw: &'a str, max: usize) -> Result<&'a str, FieldError> {
    let count = raw.chars().count();
    if raw.trim().is_empty() || count > max {
        return Err(refuse(field, format!("must be 1 to {max} characters")));
    }
    if raw
        .chars()
        .any(|c| forbidden(c) && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(refuse(
            field,
            "must not contain control characters other than tab and line breaks",
        ));
    }
    Ok(raw)
}

/// A secret, token or key given to us as text: 1 to `max` visible ASCII characters.
pub fn secret<'a>(field: &'static str, raw: &'a str, max: usize) -> Result<&'a str, FieldError> {
    if raw.is_empty() || raw.len() > max {
        return Err(refuse(field, format!("must be 1 to {max} characters")));
    }
    if !raw.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(refuse(field, "must be visible ASCII characters"));
    }
    Ok(raw)
}

/// An optional field held to `check` when present.
pub fn optional<'a>(
    raw: Option<&'a str>,
    check: impl FnOnce(&'a str) -> Result<&'a str, FieldError>,
) -> Result<Option<String>, FieldError> {
    raw.map(|r| check(r).map(str::to_owned)).transpose()
}

/// serde's message with the Rust type it expected said as JSON (`expected struct NewOrg` →
/// `expected a JSON object`), cut to 300 characters.
pub fn plain(message: &str) -> String {
    const RUST: [(&str, &str); 6] = [
        ("struct ", "a JSON object"),
        ("tuple struct ", "a JSON array"),
        ("unit struct ", "null"),
        ("internally tagged enum ", "a JSON object with a \"type\""),
        ("adjacently tagged enum ", "a JSON object with a \"type\""),
        ("enum ", "one of the documented values"),
    ];
    let mut out = message.to_owned();
    if let Some(i) = message.find("expected ") {
        let rest = &message[i + "expected ".len()..];
        if let Some((_, json)) = RUST.iter().find(|(rust, _)| rest.starts_with(rust)) {
            let end = rest.find(" at line").unwrap_or(rest.len());
            out = format!("{}expected {json}{}", &message[..i], &rest[end..]);
        }
    }
    if out.chars().count() > 300 {
        out = out.chars().take(300).collect::<String>() + "…";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_whole_number_may_be_written_with_a_zero_fraction_and_nothing_else() {
        #[derive(serde::Deserialize)]
        struct Seconds {
            #[serde(deserialize_with = "super::whole_number")]
            n: u32,
        }
        let read = |raw: &str| serde_json::from_str::<Seconds>(raw).map(|s| s.n).ok();
        assert_eq!(read(r#"{"n": 227}"#), Some(227));
        assert_eq!(read(r#"{"n": 227.0}"#), Some(227));
        for refused in ["227.5", "-1", "4294967296", "\"227\"", "1e400"] {
            assert_eq!(read(&format!(r#"{{"n": {refused}}}"#)), None, "{refused}");
        }
    }

    #[test]
    fn references_refuse_separators_space_control_and_length() {
        assert_eq!(reference("contact_id", "c_1-ä.x", REF_MAX), Ok("c_1-ä.x"));
        for bad in ["", "a#b", "a b", "a\u{0}b", "a\nb", "\u{7f}"] {
            let err = reference("contact_id", bad, REF_MAX).unwrap_err();
            assert_eq!(err.field, "contact_id", "{bad:?}");
        }
        assert!(reference("owner", &"x".repeat(REF_MAX), REF_MAX).is_ok());
        assert!(reference("owner", &"x".repeat(REF_MAX + 1), REF_MAX).is_err());
        // Bytes, not characters: 64 four-byte emoji are 256 bytes.
        assert!(reference("payment_id", &"😀".repeat(64), KEY_MAX).is_err());
        assert!(reference("payment_id", &"😀".repeat(63), KEY_MAX).is_ok());
    }

    #[test]
    fn lines_are_trimmed_and_texts_keep_their_line_breaks() {
        assert_eq!(line("name", "  Acme  ", NAME_MAX), Ok("Acme"));
        assert!(line("name", "   ", NAME_MAX).is_err());
        assert!(line("name", "a\tb", NAME_MAX).is_err());
        assert!(line("name", "a\u{FFFF}", NAME_MAX).is_err());
        for turned in ["a\u{202E}b", "\u{2066}a", "a\u{200F}"] {
            let refused = name("name", turned, NAME_MAX).unwrap_err();
            assert!(refused.reason.contains("bidirectional"), "{turned:?}");
            assert!(
                line("title", turned, NAME_MAX).is_ok(),
                "a title is text: {turned:?}"
            );
        }
        assert_eq!(name("name", "Олена شركة", NAME_MAX), Ok("Олена شركة"));
        assert!(reference("contact_id", "c\u{FFFE}", REF_MAX).is_err());
        assert!(text("text", "a\u{FFFF}", TEXT_MAX).is_err());
        assert!(line("name", &"é".repeat(NAME_MAX), NAME_MAX).is_ok());
        assert!(line("name", &"é".repeat(NAME_MAX + 1), NAME_MAX).is_err());
        assert_eq!(text("text", "a\r\nb\tc", TEXT_MAX), Ok("a\r\nb\tc"));
        assert!(text("text", "a\u{0}b", TEXT_MAX).is_err());
        assert!(text("text", "\n", TEXT_MAX).is_err());
    }

    #[test]
    fn secrets_are_visible_ascii_within_their_limit() {
        assert!(secret("token", "uQ9-x_Z", SECRET_MAX).is_ok());
        assert!(secret("token", "", SECRET_MAX).is_err());
        assert!(secret("token", "a b", SECRET_MAX).is_err());
        assert!(secret("token", "ключ", SECRET_MAX).is_err());
        assert!(secret("token", &"k".repeat(SECRET_MAX + 1), SECRET_MAX).is_err());
    }

    proptest! {
        #[test]
        fn an_accepted_reference_never_holds_a_separator(raw in "\\PC{0,200}") {
            if let Ok(ok) = reference("id", &raw, REF_MAX) {
                prop_assert!(!ok.contains('#') && ok.len() <= REF_MAX);
            }
        }
    }

    #[test]
    fn a_customers_text_as_one_line_of_ours_starts_no_line_and_turns_nothing_around() {
        let forged = "Olena\nPayment for INV-00042: 500.00 UAH received\u{202E}lin\tx";
        assert_eq!(
            one_line(forged),
            "Olena Payment for INV-00042: 500.00 UAH receivedlin x"
        );
        assert_eq!(one_line("Олена Коваль"), "Олена Коваль");
    }
}
