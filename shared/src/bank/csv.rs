//! A bank's CSV export: a header row, then `id`, `date` (ISO 8601 date or date-time), `amount`
//! (signed, major units, `.` decimal, an optional `+`), `currency` (ISO 4217), `description`, and
//! optionally `counterparty` and `reference`, in any order. The whole file is checked before a
//! row is written: any bad row refuses the file, naming its line (the header is line 1).

use super::BankRow;
use crate::money::{parse_amount, Currency};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::Serialize;
use std::collections::HashMap;

/// The largest file we take.
pub const FILE_MAX: usize = 5 * 1024 * 1024;
/// At most this many bad rows are named in one refusal.
pub const ERRORS_SHOWN: usize = 100;

/// What is wrong with one line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineError {
    pub line: u64,
    pub error: String,
}

const REQUIRED: [&str; 5] = ["id", "date", "amount", "currency", "description"];

/// Each column's place, by its lower-case name; every required column there.
fn columns(reader: &mut ::csv::Reader<&[u8]>) -> Result<HashMap<String, usize>, Vec<LineError>> {
    let header_error = |error: String| vec![LineError { line: 1, error }];
    let headers = reader
        .headers()
        .map_err(|e| header_error(format!("header: {e}")))?;
    let column: HashMap<String, usize> = headers
        .iter()
        .enumerate()
        .map(|(i, name)| (name.to_ascii_lowercase(), i))
        .collect();
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|name| !column.contains_key(*name))
        .collect();
    if !missing.is_empty() {
        return Err(header_error(format!(
            "header: missing column {}",
            missing.join(", ")
        )));
    }
    Ok(column)
}

/// Every row of the file, or every line that is wrong (at most `ERRORS_SHOWN`).
pub fn parse(bytes: &[u8]) -> Result<Vec<BankRow>, Vec<LineError>> {
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .trim(::csv::Trim::All)
        .from_reader(bytes);
    let column = columns(&mut reader)?;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    for (index, record) in reader.records().enumerate() {
        let fallback = index as u64 + 2;
        let record = match record {
            // The reader's own line count: right after quoted fields over several lines.
            Ok(record) => record,
            Err(e) => {
                let line = e.position().map_or(fallback, |p| p.line());
                errors.push(LineError {
                    line,
                    error: crate::fields::plain(&e.to_string()),
                });
                continue;
            }
        };
        let line = record.position().map_or(fallback, |p| p.line());
        let field = |name: &str| {
            column
                .get(name)
                .and_then(|&i| record.get(i))
                .unwrap_or("")
                .to_owned()
        };
        match row(field) {
            Ok(row) => match seen.insert(row.id.clone(), line) {
                Some(first) => errors.push(LineError {
                    line,
                    error: format!("id: {} is also on line {first}", row.id),
                }),
                None => rows.push(row),
            },
            Err(error) => errors.push(LineError { line, error }),
        }
        if errors.len() >= ERRORS_SHOWN {
            break;
        }
    }
    if errors.is_empty() {
        Ok(rows)
    } else {
        Err(errors)
    }
}

fn row(field: impl Fn(&str) -> String) -> Result<BankRow, String> {
    let optional = |name: &str| Some(field(name)).filter(|v| !v.is_empty());
    let currency = Currency::parse(&field("currency"))
        .map_err(|_| "currency: not an ISO 4217 code".to_owned())?;
    BankRow {
        id: field("id"),
        time: date(&field("date"))?,
        amount: amount(&field("amount"))?,
        currency,
        description: field("description"),
        counterparty: optional("counterparty"),
        reference: optional("reference"),
    }
    .checked()
}

/// A signed amount: `-12.50`, `+40`, `40.00`.
pub fn amount(raw: &str) -> Result<rust_decimal::Decimal, String> {
    let (negative, digits) = match raw.as_bytes().first() {
        Some(b'-') => (true, &raw[1..]),
        Some(b'+') => (false, &raw[1..]),
        _ => (false, raw),
    };
    let value = parse_amount(digits).map_err(|_| "amount: not a number".to_owned())?;
    Ok(if negative { -value } else { value })
}

/// An ISO 8601 date (midnight UTC) or date-time (with an offset, or UTC without one).
pub fn date(raw: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(raw) {
        return Ok(at.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M"] {
        if let Ok(at) = NaiveDateTime::parse_from_str(raw, format) {
            return Ok(at.and_utc());
        }
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|at| at.and_utc())
        .ok_or_else(|| "date: not an ISO 8601 date or date-time".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HEAD: &str = "id,date,amount,currency,description,counterparty,reference\n";

    #[test]
    fn a_good_file_reads_every_row_signed_and_exact() {
        let file = format!("{HEAD}r1,2026-12-01,+40.00,UAH,Payment INV-00042,Olena,\nr2,2026-12-02T10:30:00Z,-12.5,uah,Fee,,\n");
        let rows = parse(file.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(crate::money::display(rows[0].amount), "40.00");
        assert!(rows[0].is_credit() && !rows[1].is_credit());
        assert_eq!(rows[0].counterparty.as_deref(), Some("Olena"));
        assert_eq!(rows[0].reference, None);
        assert_eq!(crate::money::display(rows[1].amount), "-12.50");
        assert_eq!(rows[1].time.to_rfc3339(), "2026-12-02T10:30:00+00:00");
    }

    #[test]
    fn every_bad_line_is_named_and_the_header_is_line_one() {
        let file = format!("{HEAD}r1,2026-12-01,40.00,UAH,ok,,\nr2,yesterday,40,UAH,x,,\nr3,2026-12-01,4o,UAH,x,,\nr1,2026-12-03,1,UAH,again,,\nr5,2026-12-01,0,UAH,zero,,\nr6,2026-12-01,1.234,UAH,cents,,\n");
        let errors = parse(file.as_bytes()).unwrap_err();
        let lines: Vec<u64> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 4, 5, 6, 7]);
        assert_eq!(errors[1].error, "amount: not a number");
        assert_eq!(errors[2].error, "id: r1 is also on line 2");
        let missing = parse(b"id,date,amount\nr1,2026-12-01,1\n").unwrap_err();
        assert_eq!(missing[0].line, 1);
        assert!(missing[0].error.contains("currency"));
    }

    proptest! {
        #[test]
        fn no_bytes_make_the_parser_panic(body in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut file = HEAD.as_bytes().to_vec();
            file.extend(body);
            let _ = parse(&file);
        }
    }
}
