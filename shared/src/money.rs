//! Money is `Decimal` with an ISO 4217 currency; provider minor units are converted with the
//! currency's exponent.

use rust_decimal::Decimal;
use std::fmt;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum MoneyError {
    #[error("currency must be a three-letter ISO 4217 code")]
    BadCurrency,
    #[error("unknown ISO 4217 numeric currency code {0}")]
    UnknownNumeric(u16),
    #[error("amount must be a positive decimal string with at most 4 fraction digits")]
    BadAmount,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Currency(String);

/// (alpha, numeric, exponent) for the currencies our providers send.
const CURRENCIES: &[(&str, u16, u32)] = &[
    ("UAH", 980, 2),
    ("USD", 840, 2),
    ("EUR", 978, 2),
    ("GBP", 826, 2),
    ("PLN", 985, 2),
    ("CZK", 203, 2),
    ("CHF", 756, 2),
    ("JPY", 392, 0),
    ("KWD", 414, 3),
];

impl Currency {
    pub fn parse(raw: &str) -> Result<Self, MoneyError> {
        let upper = raw.trim().to_ascii_uppercase();
        if upper.len() == 3 && upper.bytes().all(|b| b.is_ascii_uppercase()) {
            Ok(Self(upper))
        } else {
            Err(MoneyError::BadCurrency)
        }
    }

    pub fn from_numeric(code: u16) -> Result<Self, MoneyError> {
        CURRENCIES
            .iter()
            .find(|(_, n, _)| *n == code)
            .map(|(a, _, _)| Self((*a).to_owned()))
            .ok_or(MoneyError::UnknownNumeric(code))
    }

    /// Minor-unit exponent; 2 for any currency not listed.
    pub fn exponent(&self) -> u32 {
        CURRENCIES
            .iter()
            .find(|(a, _, _)| *a == self.0)
            .map_or(2, |(_, _, e)| *e)
    }

    /// Converts a provider's minor units (kopiyky, cents) to a major-unit amount.
    pub fn from_minor(&self, minor: i64) -> Decimal {
        Decimal::new(minor, self.exponent())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses a positive amount in major units as sent in JSON strings ("40.00").
pub fn parse_amount(raw: &str) -> Result<Decimal, MoneyError> {
    let raw = raw.trim();
    if !raw.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(MoneyError::BadAmount);
    }
    let value: Decimal = raw.parse().map_err(|_| MoneyError::BadAmount)?;
    if value <= Decimal::ZERO || value.scale() > 4 {
        return Err(MoneyError::BadAmount);
    }
    Ok(value)
}

/// Money rendered for JSON: at least two fraction digits ("40.00", "0.00", "12.345").
pub fn display(amount: Decimal) -> String {
    let mut shown = amount.normalize();
    if shown.scale() < 2 {
        shown.rescale(2);
    }
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn kopiyky_become_hryvnia() {
        let uah = Currency::from_numeric(980).unwrap();
        assert_eq!(uah.as_str(), "UAH");
        assert_eq!(uah.from_minor(4200), dec!(42.00));
        assert_eq!(Currency::parse("jpy").unwrap().from_minor(500), dec!(500));
    }

    #[test]
    fn amounts_must_be_positive_decimals() {
        assert_eq!(parse_amount("40.00"), Ok(dec!(40.00)));
        assert!(parse_amount("-1").is_err());
        assert!(parse_amount("0").is_err());
        assert!(parse_amount("1e3").is_err());
        assert!(parse_amount("1.00001").is_err());
    }

    #[test]
    fn display_keeps_two_fraction_digits() {
        assert_eq!(display(dec!(40)), "40.00");
        assert_eq!(display(dec!(40.500)), "40.50");
        assert_eq!(display(Decimal::ZERO), "0.00");
        assert_eq!(display(-Decimal::TEN), "-10.00");
    }
}
