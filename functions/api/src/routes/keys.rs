//! The API keys' `/api/` routes: made, listed and revoked with the `ops` scope.

use crate::route::doc;
use crate::route::Answer::Items;
use crate::route::Method::Get;
use crate::route::{Op, OrgOp::*, Route};
use firmspace::orgs::keys::KeyInfo;

pub static ROUTES: &[Route] = &[Route {
    method: Get,
    path: "/api/keys",
    op: Op::Org(ListKeys),
    summary: "The organisation's keys, oldest first, without the keys themselves; `ops` scope",
    params: &[],
    body: None,
    ok: &[(200, "OK")],
    answer: Items(doc::<KeyInfo>),
    errors: &[],
}];
