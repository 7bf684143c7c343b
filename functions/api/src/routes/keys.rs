//! The API keys' `/api/` routes: made, listed and revoked with the `ops` scope.

use crate::keys::NewKey;
use crate::route::doc;
use crate::route::Answer::{Items, Performed};
use crate::route::Method::{Delete, Get, Post};
use crate::route::{In, Op, OrgOp::*, Param, Route};
use firmspace::orgs::keys::KeyInfo;

pub static ROUTES: &[Route] = &[
    Route {
        method: Post,
        path: "/api/keys",
        op: Op::Org(CreateKey),
        summary: "Make an API key with some scopes (shown once); `ops` scope",
        params: &[],
        body: Some(doc::<NewKey>),
        ok: &[(201, "created; `api_key` is never shown again")],
        answer: Performed,
        errors: &[
            (
                400,
                "`malformed`, `invalid_field` (`name`: 1-100 characters), `invalid_scopes` \
                 (not a non-empty list of `read`, `write`, `ops`)",
            ),
            (
                403,
                "`forbidden`: a scope the asking key does not have itself",
            ),
            (409, "`too_many_keys`: the organisation holds 100 keys"),
        ],
    },
    Route {
        method: Get,
        path: "/api/keys",
        op: Op::Org(ListKeys),
        summary: "The organisation's keys, oldest first, without the keys themselves; `ops` scope",
        params: &[],
        body: None,
        ok: &[(200, "OK")],
        answer: Items(doc::<KeyInfo>),
        errors: &[],
    },
    Route {
        method: Delete,
        path: "/api/keys/{key_id}",
        op: Op::Org(RevokeKey),
        summary: "Revoke a key: it authenticates nothing from now on; `ops` scope",
        params: &[Param {
            name: "key_id",
            at: In::Path,
            required: true,
            doc: "the key's public name (`key_...`)",
        }],
        body: None,
        ok: &[(200, "revoked, or already revoked (the same answer)")],
        answer: Performed,
        errors: &[(404, "`not_found`: no such key in this organisation")],
    },
];
