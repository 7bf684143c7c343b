//! Money is `Decimal` with an ISO 4217 currency. Every amount is checked before it becomes a
//! `Decimal`: nothing is ever rounded. Limits (the README's "Limits" table says the same):
//!
//! - an amount has at most [`MAX_INTEGER_DIGITS`] digits before the point (below ten billion
//!   major units: more than a small business invoices, less than `Decimal` or an `i64` of minor
//!   units could hold), and at most the currency's minor-unit digits after it;
//! - a currency is an ISO 4217 code with minor units (the standard's table, from
//!   `iso_currency`): JPY and KRW have 0, UAH and EUR 2, BHD and TND 3; units without minor
//!   units (XAU, XDR, ...) are not money we book.

use rust_decimal::Decimal;
use std::fmt;
use thiserror::Error;

/// Digits an amount may have before the point.
pub const MAX_INTEGER_DIGITS: usize = 10;
/// Characters an amount's text may have (leading and trailing zeros included).
pub const MAX_AMOUNT_CHARS: usize = 32;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum MoneyError {
    #[error("currency must be an ISO 4217 code with minor units (such as UAH, EUR, JPY, BHD)")]
    BadCurrency,
    #[error("unknown ISO 4217 numeric currency code {0}")]
    UnknownNumeric(u16),
    #[error("amount must be a positive decimal string such as \"40.00\"")]
    BadAmount,
    /// A provider's amount in minor units (Stripe's, monobank's), told in the provider's terms.
    #[error("amount must be a positive integer of minor units (such as 4000 for 40.00)")]
    BadMinorAmount,
    #[error("amount must be below 10000000000 major units")]
    TooLarge,
    #[error("amount has more fraction digits than {currency} has minor units ({exponent})")]
    TooPrecise {
        currency: &'static str,
        exponent: u32,
    },
}

/// An ISO 4217 currency with minor units.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency {
    iso: iso_currency::Currency,
    exponent: u32,
}

impl Currency {
    /// An alphabetic code, in either case (Stripe sends `uah`).
    pub fn parse(raw: &str) -> Result<Self, MoneyError> {
        let raw = raw.trim();
        if raw.len() != 3 || !raw.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(MoneyError::BadCurrency);
        }
        iso_currency::Currency::from_code(&raw.to_ascii_uppercase())
            .and_then(Self::with_minor_units)
            .ok_or(MoneyError::BadCurrency)
    }

    /// A numeric code (monobank's `ccy`: 980 is UAH).
    pub fn from_numeric(code: u16) -> Result<Self, MoneyError> {
        iso_currency::Currency::from_numeric(code)
            .and_then(Self::with_minor_units)
            .ok_or(MoneyError::UnknownNumeric(code))
    }

    fn with_minor_units(iso: iso_currency::Currency) -> Option<Self> {
        let exponent = u32::from(iso.exponent()?);
        Some(Self { iso, exponent })
    }

    /// The numeric code (980 for UAH), as monobank names a currency.
    pub fn numeric(&self) -> u16 {
        self.iso.numeric()
    }

    /// Minor-unit digits: 0 for JPY, 2 for UAH, 3 for BHD.
    pub fn exponent(&self) -> u32 {
        self.exponent
    }

    /// A provider's minor units (kopiyky, cents) as a major-unit amount: positive and within
    /// the limit, or refused.
    pub fn from_minor(&self, minor: i64) -> Result<Decimal, MoneyError> {
        self.from_minor_in(minor, self.exponent)
    }

    /// Minor units of a sender whose exponent for this currency differs from ISO 4217 (Stripe
    /// sends ISK with two decimals); the amount must still be one the currency can hold.
    pub fn from_minor_in(&self, minor: i64, exponent: u32) -> Result<Decimal, MoneyError> {
        if minor <= 0 {
            return Err(MoneyError::BadMinorAmount);
        }
        self.check(Decimal::new(minor, exponent))
    }

    /// The amount, if this currency can hold it exactly and it is within the limit.
    pub fn check(&self, amount: Decimal) -> Result<Decimal, MoneyError> {
        if amount.abs() >= limit() {
            return Err(MoneyError::TooLarge);
        }
        if amount.normalize().scale() > self.exponent {
            return Err(MoneyError::TooPrecise {
                currency: self.as_str(),
                exponent: self.exponent,
            });
        }
        Ok(amount)
    }

    pub fn as_str(&self) -> &'static str {
        self.iso.code()
    }
}

fn limit() -> Decimal {
    Decimal::from(10_i64.pow(MAX_INTEGER_DIGITS as u32))
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads a positive amount in major units as sent in JSON strings ("40.00"), exactly: digits
/// with at most one point, below the limit, at most 4 significant fraction digits (the most any
/// currency has; [`Currency::check`] holds it to the currency's own). Built from its digits, so
/// nothing is rounded on the way.
pub fn parse_amount(raw: &str) -> Result<Decimal, MoneyError> {
    if raw.is_empty() || raw.len() > MAX_AMOUNT_CHARS {
        return Err(MoneyError::BadAmount);
    }
    let (whole, fraction) = raw.split_once('.').unwrap_or((raw, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || raw.ends_with('.') {
        return Err(MoneyError::BadAmount);
    }
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    if whole.len() > MAX_INTEGER_DIGITS {
        return Err(MoneyError::TooLarge);
    }
    if fraction.len() > 4 {
        return Err(MoneyError::BadAmount);
    }
    // At most 14 digits: an i64 holds them exactly.
    let mantissa: i64 = format!("{whole}{fraction}0").parse().unwrap_or(0) / 10;
    if mantissa == 0 {
        return Err(MoneyError::BadAmount);
    }
    Ok(Decimal::new(mantissa, fraction.len() as u32))
}

impl Currency {
    /// `amount` as this currency writes it: with its minor-unit digits (JPY `"1000"`, UAH
    /// `"40.00"`, BHD `"10.250"`). An amount with more digits than that (a carrier's price of
    /// fractions of a cent) keeps them: nothing is rounded.
    pub fn show(&self, amount: Decimal) -> String {
        let mut shown = amount.normalize();
        if shown.scale() < self.exponent {
            shown.rescale(self.exponent);
        }
        shown.to_string()
    }
}

/// `amount` in `currency` ([`Currency::show`]); without a currency, [`display`].
pub fn shown(amount: Decimal, currency: Option<Currency>) -> String {
    match currency {
        Some(currency) => currency.show(amount),
        None => display(amount),
    }
}

/// Money whose currency is not known here, rendered for JSON: at least two fraction digits
/// ("40.00", "0.00", "12.345"). Where the currency is known, [`Currency::show`].
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
    use proptest::prelude::*;
    use rust_decimal_macros::dec;

    fn currency(code: &str) -> Currency {
        Currency::parse(code).unwrap()
    }

    #[test]
    fn minor_units_follow_iso_4217() {
        let uah = Currency::from_numeric(980).unwrap();
        assert_eq!(uah.as_str(), "UAH");
        assert_eq!(uah.from_minor(4200), Ok(dec!(42.00)));
        assert_eq!(currency("jpy").from_minor(500), Ok(dec!(500)));
        assert_eq!(currency("KRW").from_minor(50_000), Ok(dec!(50000)));
        assert_eq!(currency("BHD").from_minor(1_250), Ok(dec!(1.250)));
        assert_eq!(currency("TND").exponent(), 3);
        assert_eq!(currency("CLF").exponent(), 4);
        assert_eq!(Currency::from_numeric(410).unwrap().as_str(), "KRW");
    }

    #[test]
    fn codes_without_minor_units_or_outside_the_standard_are_refused() {
        for code in ["XAU", "XDR", "ABC", "US", "USDX", "U$D", "", "ÜSD"] {
            assert_eq!(
                Currency::parse(code),
                Err(MoneyError::BadCurrency),
                "{code}"
            );
        }
        assert_eq!(
            Currency::from_numeric(1),
            Err(MoneyError::UnknownNumeric(1))
        );
    }

    #[test]
    fn minor_units_beyond_the_limit_or_not_positive_are_refused() {
        let uah = currency("UAH");
        assert_eq!(uah.from_minor(999_999_999_999), Ok(dec!(9999999999.99)));
        assert_eq!(uah.from_minor(1_000_000_000_000), Err(MoneyError::TooLarge));
        assert_eq!(uah.from_minor(i64::MAX), Err(MoneyError::TooLarge));
        // Told in the provider's terms: its amounts are integers of minor units.
        assert_eq!(uah.from_minor(0), Err(MoneyError::BadMinorAmount));
        assert_eq!(uah.from_minor(i64::MIN), Err(MoneyError::BadMinorAmount));
        let told = uah.from_minor(-4000).unwrap_err().to_string();
        assert!(told.contains("positive integer of minor units") && !told.contains("decimal"));
    }

    #[test]
    fn amounts_must_be_positive_decimals_within_the_limit() {
        assert_eq!(parse_amount("40.00"), Ok(dec!(40.00)));
        assert_eq!(parse_amount("0040.5000"), Ok(dec!(40.5)));
        assert_eq!(parse_amount("9999999999.9999"), Ok(dec!(9999999999.9999)));
        for bad in [
            "-1", "0", "0.0000", "1e3", "1.00001", ".5", "5.", "1.2.3", " 1", "+1", "", "١",
        ] {
            assert_eq!(parse_amount(bad), Err(MoneyError::BadAmount), "{bad:?}");
        }
        assert_eq!(parse_amount("10000000000"), Err(MoneyError::TooLarge));
        let long = format!("1.{}", "0".repeat(40));
        assert_eq!(parse_amount(&long), Err(MoneyError::BadAmount));
        // What `Decimal` would have rounded: 29 significant digits.
        assert!(parse_amount("1.0000000000000000000000000001").is_err());
    }

    #[test]
    fn a_currency_holds_an_amount_to_its_own_minor_units() {
        assert_eq!(currency("UAH").check(dec!(40.50)), Ok(dec!(40.50)));
        assert_eq!(currency("UAH").check(dec!(40.500)), Ok(dec!(40.500)));
        assert_eq!(
            currency("UAH").check(dec!(40.505)),
            Err(MoneyError::TooPrecise {
                currency: "UAH",
                exponent: 2
            })
        );
        assert!(currency("JPY").check(dec!(1.5)).is_err());
        assert!(currency("BHD").check(dec!(1.505)).is_ok());
    }

    #[test]
    fn display_keeps_two_fraction_digits() {
        assert_eq!(currency("JPY").show(dec!(1000)), "1000");
        assert_eq!(currency("JPY").show(dec!(1000.00)), "1000");
        assert_eq!(currency("BHD").show(dec!(10.25)), "10.250");
        assert_eq!(currency("UAH").show(dec!(40)), "40.00");
        assert_eq!(
            currency("USD").show(dec!(0.0075)),
            "0.0075",
            "never rounded"
        );
        assert_eq!(currency("UAH").show(-Decimal::TEN), "-10.00");
        assert_eq!(display(dec!(40)), "40.00");
        assert_eq!(display(dec!(40.500)), "40.50");
        assert_eq!(display(Decimal::ZERO), "0.00");
        assert_eq!(display(-Decimal::TEN), "-10.00");
    }

    proptest! {
        #[test]
        fn whatever_is_accepted_is_exactly_what_was_written(whole in 0u64..10_000_000_000, frac in 0u32..10_000) {
            let raw = format!("{whole}.{frac:04}");
            if let Ok(amount) = parse_amount(&raw) {
                prop_assert_eq!(amount, raw.parse::<Decimal>().unwrap());
            } else {
                prop_assert!(whole == 0 && frac == 0);
            }
        }
    }
}
