//! An amount as a command takes it: a decimal string (`"40.00"`) or a JSON number (`40`,
//! `40.5`), read from its JSON text, never through a float. Anything else — a comma, a sign,
//! zero, an exponent, a currency suffix, more decimals than the currency has — is refused
//! with one code, `invalid_amount`, on every adapter.

use crate::commands::Refused;
use crate::money::{parse_amount, Currency};
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// What an amount given as a string looks like: digits with at most one point, above zero.
/// At most 10 digits before the point and 4 after it (trailing zeros aside), as `parse_amount`
/// reads it; within the currency's own decimals is the server's to say.
pub const POSITIVE_DECIMAL: &str = "^(0*[1-9][0-9]{0,9}(\\.[0-9]{1,4}0*)?|0+\\.[0-9]{0,3}[1-9]0*)$";

/// The JSON text of an `amount` field, kept as it came so that the command, not the JSON
/// reader, decides what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmountText(String);

impl utoipa::PartialSchema for AmountText {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Number]))
            // A number above zero; a string of digits with at most one point, above zero.
            .exclusive_minimum(Some(0.0))
            .maximum(Some(9_999_999_999.999_9))
            .pattern(Some(POSITIVE_DECIMAL))
            .max_length(Some(crate::money::MAX_AMOUNT_CHARS))
            .description(Some(
                "Major units: a decimal string (\"40.00\") or a JSON number (40); positive, \
                 no sign, comma or suffix, at most as many decimals as the currency has. A \
                 number is read exactly from its JSON text, never through a float: a binary \
                 float's artefact (0.30000000000000004) is refused as too many decimals; send \
                 a string to be safe.",
            ))
            .examples([serde_json::json!("40.00")])
            .into()
    }
}

impl utoipa::ToSchema for AmountText {}

impl<'de> Deserialize<'de> for AmountText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        Ok(Self(raw.get().to_owned()))
    }
}

impl AmountText {
    /// The JSON text as it came.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The JSON text of `value` (a tool call's input, already read by another parser).
    pub fn of(value: &serde_json::Value) -> Self {
        Self(value.to_string())
    }

    /// The amount in major units, positive, within the limits of `money`.
    pub fn decimal(&self, field: &'static str) -> Result<Decimal, Refused> {
        let raw = self.0.trim();
        let text = match raw.starts_with('"') {
            true => serde_json::from_str::<String>(raw).map_err(|_| invalid(field))?,
            // A JSON number: digits and at most one point (no sign, no exponent).
            false => raw.to_owned(),
        };
        parse_amount(&text)
            .map_err(|e| Refused::field(field, "invalid_amount", format!("{field}: {e}")))
    }

    /// [`AmountText::decimal`], with no more decimals than `currency` has.
    pub fn in_currency(&self, field: &'static str, currency: Currency) -> Result<Decimal, Refused> {
        currency
            .check(self.decimal(field)?)
            .map_err(|e| Refused::field(field, "invalid_amount", format!("{field}: {e}")))
    }
}

fn invalid(field: &'static str) -> Refused {
    Refused::field(
        field,
        "invalid_amount",
        format!("{field} is a decimal string or a JSON number in major units"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Decimal, &'static str> {
        let text: AmountText = serde_json::from_str(json).expect("any JSON value is taken");
        text.decimal("amount").map_err(|e| e.code)
    }

    #[test]
    fn a_string_and_a_json_number_read_the_same_amount_exactly() {
        let exact = |s: &str| s.parse::<Decimal>().unwrap();
        assert_eq!(read("\"40.00\""), Ok(exact("40")));
        assert_eq!(read("40"), Ok(exact("40")));
        assert_eq!(read("40.10"), Ok(exact("40.1")));
        assert_eq!(read("12345678.9012"), Ok(exact("12345678.9012")));
    }

    #[test]
    fn a_comma_a_sign_zero_an_exponent_or_a_suffix_is_an_invalid_amount() {
        for bad in [
            "\"40,00\"",
            "\"-40\"",
            "-40",
            "\"0\"",
            "0",
            "0.00",
            "\"40 UAH\"",
            "4e1",
            "true",
            "null",
            "{}",
            "[40]",
            "\"\"",
            "40.123456",
        ] {
            assert_eq!(read(bad), Err("invalid_amount"), "{bad}");
        }
    }

    #[test]
    fn more_decimals_than_the_currency_has_is_refused() {
        let text: AmountText = serde_json::from_str("\"40.001\"").unwrap();
        let uah = Currency::parse("UAH").unwrap();
        assert_eq!(
            text.in_currency("amount", uah).unwrap_err().code,
            "invalid_amount"
        );
        let bhd = Currency::parse("BHD").unwrap();
        assert_eq!(
            text.in_currency("amount", bhd).unwrap(),
            "40.001".parse::<Decimal>().unwrap()
        );
    }
}

#[cfg(test)]
mod pattern {
    use super::*;

    /// An invoice's `gross` is documented with the same pattern.
    #[test]
    fn an_invoices_gross_is_documented_with_the_same_pattern() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(crate::commands::money::CreateInvoice::schema()).unwrap();
        assert_eq!(schema["properties"]["gross"]["pattern"], POSITIVE_DECIMAL);
    }

    /// The document's pattern takes what the server takes, and refuses what it refuses.
    #[test]
    fn the_documented_pattern_is_the_servers_reading_of_a_string() {
        let pattern = regex_lite::Regex::new(POSITIVE_DECIMAL).unwrap();
        use crate::money::parse_amount;
        let widest = ["9999999999.9999", "0.0001", "1.50000", "0012345678.5"];
        for text in ["1", "40.00", "00.50", "0.01", "10", "007"]
            .iter()
            .chain(&widest)
        {
            assert!(pattern.is_match(text), "{text}");
            assert!(parse_amount(text).is_ok(), "{text}");
        }
        let beyond = ["12345678901", "1.00001", "0.00001", "1e-05"];
        let refused = [
            "0", "0.0", "00", "-1", "1,5", "1e5", " 1", "1.", ".5", "", "+1",
        ];
        for text in refused.iter().chain(&beyond) {
            assert!(!pattern.is_match(text), "{text}");
            assert!(parse_amount(text).is_err(), "{text}");
        }
    }
}
