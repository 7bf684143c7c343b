//! Time as every item and message carries it: RFC 3339 in UTC with milliseconds, so stored
//! strings sort in time order. Parsed once at the edge; past it, code holds `DateTime<Utc>`.

use chrono::{DateTime, SecondsFormat, Utc};

/// `2026-12-02T10:00:00.000Z`.
pub fn format(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Any RFC 3339 time, converted to UTC.
pub fn parse(raw: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Unix seconds (a signed header's timestamp) as a time.
pub fn from_unix(secs: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(secs, 0)
}

/// Serde for `DateTime<Utc>` in the stored format, for messages that travel through SQS.
pub mod serde_millis {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(*at))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let raw = String::deserialize(d)?;
        super::parse(&raw).ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 time"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_times_round_trip_and_sort_as_strings() {
        let a = from_unix(1_800_000_000).unwrap();
        let b = from_unix(1_800_000_001).unwrap();
        assert_eq!(parse(&format(a)), Some(a));
        assert!(format(a) < format(b));
        assert_eq!(format(a), "2027-01-15T08:00:00.000Z");
        assert_eq!(
            parse("2026-12-02T12:00:00+02:00"),
            parse("2026-12-02T10:00:00Z")
        );
    }
}
