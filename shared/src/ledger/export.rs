//! Finance's export: the ledger lines booked in a UTC window (`from` inclusive, `to` exclusive),
//! in booking order, a page at a time, as JSON or CSV with the event id beside the ledger id.

use super::ledger_list;
use super::line::LedgerLine;
use crate::ids::OrgId;
use crate::store::{Store, StoreError};
use crate::time;
use chrono::{DateTime, Utc};

/// The longest window one export covers.
pub const WINDOW_MAX_DAYS: i64 = 366;

/// The lines booked in `[from, to)`, oldest first: at most `limit` after `cursor`.
pub async fn window(
    store: &Store,
    org: &OrgId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: i32,
    cursor: Option<&str>,
) -> Result<Window, StoreError> {
    // Positions are `{at}#{order}#{ledger_id}`: `{from}` sorts before every line at `from`, and `{to}`
    // before every line at `to`, so BETWEEN holds exactly `[from, to)`.
    let (low, high) = (time::format(from), time::format(to));
    let (items, next) = store
        .page_in(
            crate::store::Index::Lists,
            &ledger_list(org),
            Some((&low, &high)),
            false,
            limit,
            cursor,
        )
        .await?;
    let lines = items
        .iter()
        .map(LedgerLine::from_item)
        .collect::<Result<_, _>>()?;
    Ok(Window { lines, items, next })
}

/// A page of the ledger's window: its lines, and where a reader goes on.
pub struct Window {
    pub lines: Vec<LedgerLine>,
    /// The lines as stored: their positions, as an earlier release may have written them.
    items: Vec<crate::store::Item>,
    /// The next page's cursor, while more remain.
    pub next: Option<String>,
}

impl Window {
    /// Where a page that holds only the first `held` lines goes on: after the last it holds,
    /// at that line's stored position; the whole page's own `next` when it holds them all.
    pub fn next_after(&self, held: usize) -> Option<String> {
        match held.checked_sub(1).filter(|_| held < self.lines.len()) {
            Some(last) => Some(Store::cursor_after(
                crate::store::Index::Lists,
                &self.items[last],
            )),
            None => self.next.clone(),
        }
    }
}

/// The lines as CSV (RFC 4180, a header row of [`LedgerLine::COLUMNS`]). A cell a spreadsheet
/// would run as a formula (`=`, `+`, `-`, `@`), or a piece of one after a `;`, is prefixed with
/// `'`.
pub fn csv(lines: &[LedgerLine]) -> String {
    csv_within(lines, usize::MAX).0
}

/// [`csv`] of as many of `lines`, from the first, as fit in `max` bytes with the header row:
/// the text and how many lines it holds.
pub fn csv_within(lines: &[LedgerLine], max: usize) -> (String, usize) {
    let record = |line: &LedgerLine| {
        let row = line.to_json();
        LedgerLine::COLUMNS.map(|column| match &row[column] {
            serde_json::Value::String(text) => inert(text),
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        })
    };
    let mut text = row(LedgerLine::COLUMNS);
    let mut held = 0;
    for line in lines {
        let next = row(record(line));
        if text.len() + next.len() > max {
            break;
        }
        text.push_str(&next);
        held += 1;
    }
    (text, held)
}

/// One CSV row (RFC 4180), its line break included.
fn row<I: AsRef<[u8]>>(cells: impl IntoIterator<Item = I>) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(cells)
        .expect("writing to memory cannot fail");
    String::from_utf8(out.into_inner().expect("in memory")).expect("CSV of UTF-8 cells is UTF-8")
}

/// `cell` with every piece a spreadsheet would run as a formula prefixed with `'`: its start,
/// and each piece after a `;`, where a spreadsheet of a `;`-separated locale (Ukraine's, most
/// of Europe's) splits a cell the CSV writer leaves unquoted.
fn inert(cell: &str) -> String {
    let piece = |p: &str| match p.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        true => format!("'{p}"),
        false => p.to_owned(),
    };
    cell.split(';').map(piece).collect::<Vec<_>>().join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::LineKind;
    use crate::money::Currency;
    use rust_decimal::Decimal;

    fn line(message_id: &str) -> LedgerLine {
        LedgerLine {
            org: OrgId::generate(),
            ledger_id: "led_1".into(),
            kind: LineKind::Debit,
            amount: Decimal::new(5, 2),
            currency: Currency::parse("USD").unwrap(),
            event_id: "msg_1".into(),
            integration_id: Some("in_1".into()),
            message_id: Some(message_id.into()),
            direction: Some(crate::messages::Direction::Outbound),
            inbox_id: Some("inb_1".into()),
            at: time::parse("2026-12-03T10:00:00Z").unwrap(),
            applied: true,
            balance_after: Decimal::ZERO,
        }
    }

    #[test]
    fn the_csv_has_the_columns_and_one_row_per_line() {
        let text = csv(&[line("m1"), line("m,2")]);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(
            rows[0],
            "ledger_id,event_id,message_id,inbox_id,kind,amount,currency,at,refunds"
        );
        assert_eq!(
            rows[1],
            "led_1,msg_1,m1,inb_1,debit,0.05,USD,2026-12-03T10:00:00.000Z,"
        );
        assert_eq!(rows[2].split(',').nth(2), Some("\"m"), "a comma is quoted");
        assert_eq!(rows.len(), 3);
        // Cut to a size: whole rows only, the header always.
        let whole = csv(&[line("m1"), line("m2"), line("m3")]);
        let two = whole.lines().take(3).map(|r| r.len() + 2).sum::<usize>();
        let (cut, held) = csv_within(&[line("m1"), line("m2"), line("m3")], two);
        assert_eq!((held, cut.lines().count()), (2, 3), "{cut}");
        assert!(whole.starts_with(&cut));
    }

    #[test]
    fn a_cell_a_spreadsheet_would_run_is_made_inert() {
        let text = csv(&[line("=HYPERLINK(\"x\")")]);
        assert!(text.contains("'=HYPERLINK"), "{text}");
        // A `;`-separated locale splits `t1;=2+5;` into three cells: the second is made inert.
        let text = csv(&[line("t1;=2+5;@x")]);
        assert!(text.contains("t1;'=2+5;'@x"), "{text}");
        assert_eq!(inert("a;b"), "a;b");
    }
}
