//! Every `/api/` route: what it is called, takes, answers and refuses. The first match wins.

use crate::bank::MatchBody;
use crate::calls::NewContactBody;
use crate::consequences::{MarkRead, NewRule};
use crate::deals::NewStage;
use crate::invoices::ManualPayment;
use crate::route::doc;
use crate::route::Answer::{Document, Items, One, Paged, Performed};
use crate::route::Method::{Delete, Get, Post};
use crate::route::{In, Op, OrgOp::*, Param, Route, IDEMPOTENCY_KEY};
use crate::schemas as s;
use crate::setup::{NewMember, NewOrg, NewSecrets};
use firmspace::calls::CallFields;
use firmspace::commands::money::CreateInvoice;
use firmspace::commands::setup::NewIntegration;
use firmspace::commands::CreditInput as NewNote;

const fn path(name: &'static str, doc: &'static str) -> Param {
    Param {
        name,
        at: In::Path,
        required: true,
        doc,
    }
}

const INVOICE_ID: &[Param] = &[path("id", "the invoice's id (`inv_...`)")];
const OK: &[(u16, &str)] = &[(200, "OK")];
const CREATED: &[(u16, &str)] = &[(201, "created")];
const MALFORMED: (u16, &str) = (400, "`malformed`: the body is not the JSON described");
const NO_INVOICE: (u16, &str) = (404, "`not_found`: no such invoice in this organisation");

pub static ROUTES: &[Route] = &[
    Route {
        method: Get,
        path: "/api/openapi.json",
        op: Op::OpenApi,
        summary: "This document (OpenAPI 3.1)",
        params: &[],
        body: None,
        ok: OK,
        answer: Document,
        errors: &[],
    },
    Route {
        method: Post,
        path: "/api/orgs",
        op: Op::CreateOrg,
        summary: "Create an organisation and its API key (shown once); admin token",
        params: &[],
        body: Some(doc::<NewOrg>),
        ok: CREATED,
        answer: One(doc::<s::OrgCreated>),
        errors: &[(
            400,
            "`malformed`, `invalid_field` (`name`: 1-200 characters)",
        )],
    },
    Route {
        method: Post,
        path: "/api/integrations",
        op: Op::Org(CreateIntegration),
        summary: "Register a payments provider's webhook or an outbound target",
        params: &[],
        body: Some(doc::<NewIntegration>),
        ok: CREATED,
        answer: Performed,
        errors: &[(
            400,
            "`malformed`, `invalid_provider`, `invalid_secret`, `missing_public_key`, \
             `invalid_public_key`, `missing_url`, `invalid_url`, `invalid_field` (a text over its \
             limit; the answer's `field` names it)",
        )],
    },
    Route {
        method: Get,
        path: "/api/integrations/{id}",
        op: Op::Org(ReadIntegration),
        summary: "An integration as stored: its kind, provider and the names of its secrets (never their values), the last rotation and until when the previous secrets verify",
        params: &[path("id", "the integration's id")],
        body: None,
        ok: OK,
        answer: One(doc::<s::IntegrationInfo>),
        errors: &[(404, "`not_found`: no such integration in this organisation")],
    },
    Route {
        method: Post,
        path: "/api/integrations/{id}/secrets",
        op: Op::Org(RotateSecrets),
        summary: "Rotate an integration's secrets: the new ones verify at once, the previous ones \
                  too until the overlap ends (default 24 h), then they are removed; \
                  `Idempotency-Key`, `ops` scope",
        params: &[path("id", "the integration's id"), IDEMPOTENCY_KEY],
        body: Some(doc::<NewSecrets>),
        ok: &[(200, "rotated; the same key again gets the same answer")],
        answer: Performed,
        errors: &[
            (
                400,
                "`missing_idempotency_key`, `malformed`, `invalid_field` (`overlap_hours`: 0 to \
                 168; `secrets`: 1 to 256 visible ASCII characters), `invalid_secrets` (not \
                 exactly the names the integration holds), `invalid_secret`",
            ),
            (404, "`not_found`: no such integration in this organisation"),
            (
                409,
                "`no_secrets`, `rotation_in_progress`, `idempotency_key_reused`",
            ),
        ],
    },
    Route {
        method: Post,
        path: "/api/members",
        op: Op::Org(AddMember),
        summary: "Add a team member",
        params: &[],
        body: Some(doc::<NewMember>),
        ok: &[
            (201, "added"),
            (200, "already a member (`duplicate: true`)"),
        ],
        answer: Performed,
        errors: &[(
            400,
            "`malformed`, `invalid_user_id`, `invalid_field` (`name`)",
        )],
    },
    Route {
        method: Get,
        path: "/api/members",
        op: Op::Org(ListMembers),
        summary: "The team",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Member>),
        errors: &[],
    },
    Route {
        method: Post,
        path: "/api/invoices",
        op: Op::Org(CreateInvoice),
        summary: "Create an invoice (open, or a draft) with the next number",
        params: &[],
        body: Some(doc::<CreateInvoice>),
        ok: CREATED,
        answer: Performed,
        errors: &[(
            400,
            "`malformed`, `invalid_currency` (not ISO 4217 with minor units), `invalid_gross` \
             (not a positive amount below 10^10 with at most the currency's fraction digits), \
             `invalid_field` (a link over 128 characters or holding `#`, white space or a control \
             character), `invalid_status` (not open or draft)",
        )],
    },
    Route {
        method: Get,
        path: "/api/invoices",
        op: Op::Org(ListInvoices),
        summary: "The organisation's invoices, newest first",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Invoice>),
        errors: &[],
    },
    Route {
        method: Get,
        path: "/api/invoices/{id}",
        op: Op::Org(ReadInvoice),
        summary: "An invoice with its payments and its credit notes, oldest first",
        params: INVOICE_ID,
        body: None,
        ok: OK,
        answer: One(doc::<s::InvoiceDetail>),
        errors: &[NO_INVOICE],
    },
    Route {
        method: Post,
        path: "/api/invoices/{id}/payments",
        op: Op::Org(PayInvoice),
        summary: "The manual \"paid\" button and the assistant, once per Idempotency-Key",
        params: &[
            path("id", "the invoice's id (`inv_...`)"),
            IDEMPOTENCY_KEY,
        ],
        body: Some(doc::<ManualPayment>),
        ok: &[(
            200,
            "booked, or the stored answer to the same key and body (`duplicate: true`)",
        )],
        answer: One(doc::<s::PaymentAnswer>),
        errors: &[
            (
                400,
                "`missing_idempotency_key`, `invalid_idempotency_key`, `malformed`, \
                 `invalid_source`, `invalid_amount`, `invalid_field` (`actor`)",
            ),
            NO_INVOICE,
            (
                409,
                "`idempotency_key_reused`: the key came with another body (a review item is filed)",
            ),
        ],
    },
    Route {
        method: Post,
        path: "/api/invoices/{id}/duplicate",
        op: Op::Org(DuplicateInvoice),
        summary: "Copy an invoice as a new draft with the next number",
        params: INVOICE_ID,
        body: None,
        ok: CREATED,
        answer: Performed,
        errors: &[NO_INVOICE],
    },
    Route {
        method: Post,
        path: "/api/invoices/{id}/credit-notes",
        op: Op::Org(CreditInvoice),
        summary: "Issue a credit note (CN-00001, ...) on an invoice, once per `Idempotency-Key`",
        params: &[path("id", "the invoice's id (`inv_...`)"), IDEMPOTENCY_KEY],
        body: Some(doc::<NewNote>),
        ok: &[
            (201, "issued"),
            (200, "the same key and body again: the stored note (`duplicate: true`)"),
        ],
        answer: Performed,
        errors: &[
            (
                400,
                "`missing_idempotency_key`, `invalid_idempotency_key`, `malformed`, \
                 `invalid_amount` (not a positive amount in the invoice's currency, or not the \
                 lines' sum), `invalid_field` (`reason`, a line's `description`: 1-500 \
                 characters; at most 100 `lines`)",
            ),
            NO_INVOICE,
            (
                409,
                "`credit_exceeds_invoice` (more than is left to credit), `not_issued` (a draft \
                 or void invoice), `idempotency_key_reused`",
            ),
        ],
    },
    Route {
        method: Post,
        path: "/api/invoices/{id}/void",
        op: Op::Org(VoidInvoice),
        summary: "Void a draft invoice: it takes no payment from now on (idempotent)",
        params: INVOICE_ID,
        body: None,
        ok: &[(200, "void now, or void already (`duplicate: true`)")],
        answer: Performed,
        errors: &[
            NO_INVOICE,
            (409, "`not_draft`: an issued invoice is corrected by a credit note"),
        ],
    },
    Route {
        method: Get,
        path: "/api/notifications",
        op: Op::Org(Notifications),
        summary: "A member's notifications, newest first",
        params: &[Param {
            name: "recipient",
            at: In::Query,
            required: true,
            doc: "the member's user_id",
        }],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Notification>),
        errors: &[(400, "`missing_recipient`, `invalid_field` (`recipient`)")],
    },
    Route {
        method: Post,
        path: "/api/notifications/read",
        op: Op::Org(MarkRead),
        summary: "Mark a notification read",
        params: &[],
        body: Some(doc::<MarkRead>),
        ok: OK,
        answer: Performed,
        errors: &[
            MALFORMED,
            (400, "`invalid_field` (`key`)"),
            (404, "`not_found`: no such notification"),
        ],
    },
    Route {
        method: Get,
        path: "/api/activity/{kind}/{entity_id}",
        op: Op::Org(ActivityLog),
        summary: "A contact's, deal's or company's activity log, in time order",
        params: &[
            path("kind", "`contact`, `deal` or `company`"),
            path(
                "entity_id",
                "the CRM's id of the contact, deal or company (1 to 128 bytes; a longer one is \
                 no entity's: 404)",
            ),
        ],
        body: None,
        ok: OK,
        answer: Items(doc::<s::ActivityLine>),
        errors: &[(400, "`invalid_entity_kind`, `invalid_field` (`entity_id`)")],
    },
    Route {
        method: Post,
        path: "/api/rules",
        op: Op::Org(CreateRule),
        summary: "An automation rule: on a trigger, create a task or send a message",
        params: &[],
        body: Some(doc::<NewRule>),
        ok: CREATED,
        answer: Performed,
        errors: &[(
            400,
            "`malformed`, `invalid_trigger`, `invalid_action`, `model_not_allowed` (an ai \
             step's model is not on the deployment's allow-list), `invalid_integration` \
             (send_message needs an outbound integration of this organisation), `invalid_field` \
             (`title`: 1-500 characters, `text`: 1-4000)",
        )],
    },
    Route {
        method: Get,
        path: "/api/rules",
        op: Op::Org(ListRules),
        summary: "Every automation rule, by trigger, with who made it (`created_by`)",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Rule>),
        errors: &[],
    },
    Route {
        method: Get,
        path: "/api/rules/{rule_id}",
        op: Op::Org(ReadRule),
        summary: "One automation rule, with who made it (`created_by`)",
        params: &[Param {
            name: "rule_id",
            at: In::Path,
            required: true,
            doc: "`rule_...`",
        }],
        body: None,
        ok: OK,
        answer: One(doc::<s::Rule>),
        errors: &[(404, "`not_found`")],
    },
    Route {
        method: Get,
        path: "/api/tasks",
        op: Op::Org(Tasks),
        summary: "Tasks the rules created, oldest first",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Task>),
        errors: &[],
    },
    Route {
        method: Post,
        path: "/api/calls",
        op: Op::Org(CreateCall),
        summary: "A call from the browser softphone, stored once under call:CALL_ID:DIRECTION",
        params: &[],
        body: Some(doc::<CallFields>),
        ok: &[
            (201, "the first report of this call"),
            (200, "a repeat (`duplicate: true`, the stored call), or a status before the end (`status: ignored`)"),
        ],
        answer: Performed,
        errors: &[(
            400,
            "`malformed`, `invalid_field` (`call_id` 1-255 bytes, `direction`, `peer` in \
             E.164, `status`, `duration` 0-86400)",
        )],
    },
    Route {
        method: Get,
        path: "/api/calls",
        op: Op::Org(ListCalls),
        summary: "The organisation's calls, newest first",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Call>),
        errors: &[],
    },
    Route {
        method: Post,
        path: "/api/contacts",
        op: Op::Org(CreateContact),
        summary: "A contact; its phone (E.164) finds it when it calls or writes",
        params: &[],
        body: Some(doc::<NewContactBody>),
        ok: CREATED,
        answer: Performed,
        errors: &[
            (400, "`malformed`, `invalid_field` (`name`, `phone`, `owner`)"),
            (409, "`phone_in_use`: the phone belongs to another contact"),
        ],
    },
    Route {
        method: Get,
        path: "/api/contacts",
        op: Op::Org(ListContacts),
        summary: "The organisation's contacts (manual and leads), newest first",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Contact>),
        errors: &[],
    },
    Route {
        method: Get,
        path: "/api/conversations",
        op: Op::Org(ListConversations),
        summary: "The organisation's conversations, the latest message first",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Conversation>),
        errors: &[],
    },
    Route {
        method: Get,
        path: "/api/conversations/{id}/messages",
        op: Op::Org(ConversationMessages),
        summary: "A conversation's messages in time order, attachments with presigned URLs",
        params: &[path("id", "the conversation's id (`cv_...`)")],
        body: None,
        ok: OK,
        answer: Items(doc::<s::Message>),
        errors: &[(404, "`not_found`: no such conversation in this organisation")],
    },
    Route {
        method: Post,
        path: "/api/integrations/{id}/csv",
        op: Op::Org(UploadCsv),
        summary: "A bank's CSV export (Content-Type: text/csv, at most 5 MiB): every row stored once",
        params: &[path("id", "the csv bank integration's id")],
        body: None,
        ok: &[
            (200, "up to 5,000 rows: stored now"),
            (
                202,
                "more than 5,000 rows: checked whole, then stored by the import worker; the answer \
                 is the import (`FileAccepted`: as `GET /api/imports/{import_id}` shows it, with \
                 `status_url`, and `duplicate` for the same file again)",
            ),
        ],
        answer: Performed,
        errors: &[
            (
                400,
                "`invalid_csv` with `rows`: [{`line`, `error`}] (the header is line 1); nothing is written",
            ),
            (404, "`not_found`: no such bank integration in this organisation"),
            (409, "`not_a_csv_integration`"),
            (413, "`payload_too_large`: over 5 MiB"),
        ],
    },
    Route {
        method: Get,
        path: "/api/imports/{id}",
        op: Op::Org(FileImport),
        summary: "A large CSV file's import as it stands",
        params: &[path("id", "the import's id (`imp_...`)")],
        body: None,
        ok: OK,
        answer: One(doc::<s::FileImport>),
        errors: &[(404, "`not_found`: no such import in this organisation")],
    },
    Route {
        method: Post,
        path: "/api/integrations/{id}/import",
        op: Op::Org(StartImport),
        summary: "Import a monobank statement now (the schedule does every 5 minutes)",
        params: &[path("id", "the monobank bank integration's id")],
        body: None,
        ok: &[(202, "`started: true`, or `started: false, reason: running` while a run holds the window")],
        answer: Performed,
        errors: &[
            (404, "`not_found`: no such bank integration in this organisation"),
            (409, "`not_a_monobank_integration`"),
            (503, "`imports_unavailable`: the request could not be queued; retry"),
        ],
    },
    Route {
        method: Get,
        path: "/api/assistant/tools",
        op: Op::Org(AssistantTools),
        summary: "The write actions an assistant may take, with JSON-schema inputs",
        params: &[],
        body: None,
        ok: OK,
        answer: One(doc::<s::AssistantTools>),
        errors: &[],
    },
    Route {
        method: Post,
        path: "/api/assistant/calls",
        op: Op::Org(AssistantCall),
        summary: "Perform one tool call, once per (organisation, `call_id`)",
        params: &[],
        body: Some(doc::<crate::assistant::CallBody>),
        ok: &[(
            200,
            "performed, or the stored result of this `call_id` (`duplicate: true`)",
        )],
        answer: One(doc::<s::AssistantCallAnswer>),
        errors: &[
            (
                400,
                "`malformed`, `unknown_tool`, `invalid_field` (`call_id`), `invalid_input` (not \
                 the tool's input), and the tool's own 400s",
            ),
            (404, "`not_found`: the invoice, conversation or review item the input names"),
            (
                409,
                "`idempotency_key_reused` (the `call_id` with another tool or input), \
                 and the tool's own 409s (`credit_exceeds_invoice`, \
                 `reply_unsupported`, ...)",
            ),
            (503, "`unavailable`: the table could not be written now; retry"),
        ],
    },
    Route {
        method: Get,
        path: "/api/deals",
        op: Op::Org(ListDeals),
        summary: "The board: one stage's cards, newest first, a page at a time",
        params: &[
            Param {
                name: "stage",
                at: In::Query,
                required: false,
                doc: "`new` (default), `qualified`, `won` or `lost`",
            },
            Param {
                name: "limit",
                at: In::Query,
                required: false,
                doc: "1 to 200, default 50",
            },
            Param {
                name: "cursor",
                at: In::Query,
                required: false,
                doc: "the previous page's `cursor`",
            },
        ],
        body: None,
        ok: OK,
        answer: Paged(doc::<s::Deal>),
        errors: &[(
            400,
            "`invalid_stage`, `invalid_limit`, `invalid_cursor` (not one this list gave)",
        )],
    },
    Route {
        method: Post,
        path: "/api/deals/{id}/stage",
        op: Op::Org(MoveDeal),
        summary: "Move a card to another stage, once per `Idempotency-Key`",
        params: &[path("id", "the deal's id (`dl_...`)"), IDEMPOTENCY_KEY],
        body: Some(doc::<NewStage>),
        ok: &[(
            200,
            "moved (`moved: true`, `from`), or on that stage already (`moved: false`); the same \
             key again gets the same answer",
        )],
        answer: Performed,
        errors: &[
            (
                400,
                "`missing_idempotency_key`, `malformed`, `invalid_stage`",
            ),
            (404, "`not_found`: no such deal in this organisation"),
            (409, "`idempotency_key_reused`"),
        ],
    },
    Route {
        method: Get,
        path: "/api/bank/transactions",
        op: Op::Org(BankTransactions),
        summary: "A bank integration's rows, newest first, a page at a time",
        params: &[
            Param {
                name: "integration_id",
                at: In::Query,
                required: true,
                doc: "the bank integration",
            },
            Param {
                name: "limit",
                at: In::Query,
                required: false,
                doc: "1 to 200, default 50",
            },
            Param {
                name: "cursor",
                at: In::Query,
                required: false,
                doc: "the `cursor` of the page before",
            },
        ],
        body: None,
        ok: OK,
        answer: Paged(doc::<s::BankTransaction>),
        errors: &[
            (400, "`missing_integration_id`, `invalid_limit`, `invalid_cursor`"),
            (404, "`not_found`: no such bank integration in this organisation"),
        ],
    },
    Route {
        method: Post,
        path: "/api/bank/transactions/{tx_id}/match",
        op: Op::Org(MatchBankTx),
        summary: "Match a credit row to an invoice (a re-match takes the money back from the old one first)",
        params: &[path("tx_id", "the row's `tx_id` (`btx_...`)")],
        body: Some(doc::<MatchBody>),
        ok: &[(200, "matched; `duplicate: true` when it was matched to this invoice already")],
        answer: One(doc::<s::BankMatched>),
        errors: &[
            MALFORMED,
            (404, "`not_found`: no such row or invoice in this organisation"),
            (409, "`not_a_credit`, `currency_mismatch`"),
            (503, "`contended`: the row kept changing; retry"),
        ],
    },
    Route {
        method: Delete,
        path: "/api/bank/transactions/{tx_id}/match",
        op: Op::Org(UnmatchBankTx),
        summary: "Unmatch a row: its money taken back from the invoice",
        params: &[path("tx_id", "the row's `tx_id` (`btx_...`)")],
        body: None,
        ok: OK,
        answer: One(doc::<s::BankUnmatched>),
        errors: &[
            (404, "`not_found`: no such row in this organisation"),
            (409, "`not_matched`"),
            (503, "`contended`: the row kept changing; retry"),
        ],
    },
    Route {
        method: Get,
        path: "/api/review",
        op: Op::Org(Review),
        summary: "Items waiting for a person, newest first",
        params: &[],
        body: None,
        ok: OK,
        answer: Items(doc::<s::ReviewItem>),
        errors: &[],
    },
    Route {
        method: Get,
        path: "/api/requests/{key}",
        op: Op::Org(AskRequest),
        summary: "What became of a write this API key sent under an `Idempotency-Key`, read without sending it again",
        params: &[path("key", "the request's `Idempotency-Key`")],
        body: None,
        ok: &[(200, "`running`, or `done` with the status and the answer it got (kept 24 h)")],
        answer: One(doc::<s::RequestOutcome>),
        errors: &[NEVER_ARRIVED],
    },
    Route {
        method: Get,
        path: "/api/assistant/calls/{call_id}",
        op: Op::Org(AskCall),
        summary: "What became of an assistant's tool call, read without calling again",
        params: &[path("call_id", "the tool call's `call_id`")],
        body: None,
        ok: &[(200, "`running`, or `done` with the status and the answer it got (kept 24 h)")],
        answer: One(doc::<s::RequestOutcome>),
        errors: &[NEVER_ARRIVED],
    },
];

const NEVER_ARRIVED: (u16, &str) = (
    404,
    "`never_arrived`: nothing arrived under this key (or it is older than 24 h); send it again \
     under the same key: nothing happens twice",
);
