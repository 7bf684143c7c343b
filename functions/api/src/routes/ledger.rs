//! The prepaid ledger's `/api/` routes: the wallet, top-ups, finance's export and the inbox.

use crate::ledger::schemas as s;
use crate::route::doc;
use crate::route::Answer::{Csv, One, Paged};
use crate::route::Method::Get;
use crate::route::{In, Op, OrgOp::*, Param, Route};
use firmspace::ledger::LedgerLine;

const fn query(name: &'static str, required: bool, doc: &'static str) -> Param {
    Param {
        name,
        at: In::Query,
        required,
        doc,
    }
}

const WINDOW: &[Param] = &[
    query("from", true, "RFC 3339; the window starts here (inclusive)"),
    query(
        "to",
        true,
        "RFC 3339; the window ends here (exclusive), at most 366 days after from",
    ),
    query(
        "limit",
        false,
        "lines per page: 1 to 10000 (JSON default 1000, CSV default 10000)",
    ),
    query(
        "cursor",
        false,
        "the `cursor` (JSON) or `X-Next-Cursor` (CSV) of the page before",
    ),
];

const WINDOW_ERRORS: &[(u16, &str)] = &[(
    400,
    "`missing_window`, `invalid_window` (not RFC 3339, from not before to, or over 366 days), \
     `invalid_limit`, `invalid_cursor`",
)];

pub static ROUTES: &[Route] = &[
    Route {
        method: Get,
        path: "/api/wallet",
        op: Op::Org(Wallet),
        summary: "The prepaid wallet: balance, currency (null before the first top-up), version",
        params: &[],
        body: None,
        ok: &[(200, "OK")],
        answer: One(doc::<s::Wallet>),
        errors: &[],
    },
    Route {
        method: Get,
        path: "/api/ledger",
        op: Op::Org(Ledger),
        summary: "Ledger lines booked in a UTC window, oldest first, with the event id beside the \
                  ledger id",
        params: WINDOW,
        body: None,
        ok: &[(200, "a page of lines; `cursor` when more remain")],
        answer: Paged(doc::<s::LedgerItem>),
        errors: WINDOW_ERRORS,
    },
    Route {
        method: Get,
        path: "/api/ledger.csv",
        op: Op::Org(LedgerCsv),
        summary: "The same lines as CSV (formula-like cells prefixed with ')",
        params: WINDOW,
        body: None,
        ok: &[(
            200,
            "a page of lines; the `X-Next-Cursor` header when more remain",
        )],
        answer: Csv(&LedgerLine::COLUMNS),
        errors: WINDOW_ERRORS,
    },
    Route {
        method: Get,
        path: "/api/inbox",
        op: Op::Org(Inbox),
        summary: "The SMS inbox: one line per message and direction, newest first",
        params: &[
            query("limit", false, "1 to 200, default 50"),
            query("cursor", false, "the `cursor` of the page before"),
        ],
        body: None,
        ok: &[(200, "a page of lines; `cursor` when more remain")],
        answer: Paged(doc::<s::InboxItem>),
        errors: &[(400, "`invalid_limit`, `invalid_cursor`")],
    },
];
