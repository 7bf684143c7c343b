//! What a route is: its method, path, operation, parameters, body and answers, described once
//! for the dispatch (`routes`) and the document (`openapi`) alike. It imports neither.

use firmspace::commands::{crm, money, operate, records, setup, statements, Command};
use firmspace::http::ApiError;
use firmspace::ids::OrgId;
use firmspace::orgs::Scope;
use firmspace::store::lists::EventKind;
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use std::future::Future;
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

/// The named schemas the document's components collect.
pub type Schemas = Vec<(String, RefOr<Schema>)>;

/// A documented body type: adds its schema (and those it refers to) and returns its name.
pub type Doc = fn(&mut Schemas) -> String;

/// The answer of a command, from the command's own type (`performs!` gives each route its
/// operation's; the operator's routes name theirs).
pub const fn answer_of<C: firmspace::commands::Command>() -> Doc
where
    C::Answer: ToSchema,
{
    doc::<C::Answer>
}

/// The `Doc` of a `ToSchema` type, for the route table.
pub fn doc<T: ToSchema>(schemas: &mut Schemas) -> String {
    let name = T::name().into_owned();
    schemas.push((name.clone(), T::schema()));
    T::schemas(schemas);
    name
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Delete => "DELETE",
        }
    }
}

/// What a route does. Who may call it follows from it (`Op::auth`), so the dispatch and the
/// document cannot disagree about authentication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    OpenApi,
    CreateOrg,
    Org(OrgOp),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    Public,
    /// `Authorization: Bearer <admin token>`.
    Admin,
    /// `Authorization: Bearer <organisation API key>`.
    OrgKey,
}

/// A command an operation performs, read out of its request: the one part of a command that is
/// the route's own. Its key (an `Idempotency-Key` when the command needs one), its scopes and its
/// answer's schema come from the command's type, and `performs!` ties the operation to the
/// type, so a route performs, requires and documents one command, and a wrong link does not
/// compile.
pub trait FromRoute: Command {
    /// Its routes (one; a match and its undoing two), as the document describes them.
    const ROUTES: &'static [Route];

    fn from_route(asked: &Asked<'_>) -> impl Future<Output = Result<Self, ApiError>> + Send;

    /// The kind of event its request stores, whose cost the request's is (`store::spent`);
    /// `None` for a command that stores no event.
    const SPENDS: Option<EventKind> = None;

    /// Whether its answer, given now and no repeat, tells of an event stored now (not a file's
    /// rows all met before, not a call that has not ended).
    fn stored_now(_answer: &Self::Answer) -> bool {
        false
    }
}

/// What a request that stores events spent on, carried on its answer for the function's meter:
/// its organisation, the kind of its events, and whether it stored one now.
#[derive(Clone, Debug)]
pub struct Spending {
    pub org: OrgId,
    pub kind: EventKind,
    pub stored: bool,
}

/// What a route's command is read from: its request, its path's placeholders, and the
/// organisation of the key that asks (with the store, for a command that names a stored item).
pub struct Asked<'a> {
    /// The operation its route is of (a match or its undoing, of one command).
    pub op: OrgOp,
    pub req: &'a Request,
    pub store: &'a Store,
    pub org: &'a OrgId,
    pub params: &'a [(&'static str, &'a str)],
}

/// The segment in place of `{name}` among a matched path's `params`; empty when the template
/// has no such placeholder.
pub fn param<'a>(params: &[(&'static str, &'a str)], name: &str) -> &'a str {
    params
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, v)| v)
}

impl Asked<'_> {
    /// The segment in place of `{name}`; empty when the template has none.
    pub fn param(&self, name: &str) -> &str {
        param(self.params, name)
    }

    /// The body, as the JSON `T` reads (400 `malformed` when it is not).
    pub fn body<T: serde::de::DeserializeOwned>(&self) -> Result<T, ApiError> {
        firmspace::http::parse_json(firmspace::http::body_bytes(self.req))
    }
}

/// Performs an operation's command (the api's request context does), apart from this file so
/// that it imports no dispatch.
pub trait Performs: Sync {
    fn perform<C: FromRoute>(
        &self,
    ) -> impl Future<Output = Result<Response<Body>, ApiError>> + Send;
}

/// Every operation behind an organisation key (`OrgOp`, declared here), and the command each
/// writing operation performs, one line each: the operation's dispatch (`OrgOp::perform`), the
/// scopes a key needs for its route (`Route::scopes`: the command's `REQUIRES`) and its key come
/// from that one type, and a route of the first list answers what its command answers
/// (`Answer::Performed`, its schema from `answer_of`), so none is written beside the route. The
/// second list's routes answer a shape of their own (a payment's event as its invoice shows it;
/// a match or its undoing, each its half of `BankMatch`); the third list's perform no command
/// (reads, and the assistant's call, whose tool names its own).
macro_rules! performs {
    (
        answered { $($op:ident => $command:ty),* $(,)? }
        shaped { $($shaped:ident $(| $more:ident)* => $apart:ty),* $(,)? }
        performing_none { $($other:ident),* $(,)? }
    ) => {
        /// The routes behind an organisation API key.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum OrgOp {
            $($op,)*
            $($shaped, $($more,)*)*
            $($other,)*
        }

        /// The routes of every command an operation performs (`FromRoute::ROUTES`), each with
        /// its command's name and how a repeat of it is known.
        pub static PERFORMED: &[(&str, firmspace::commands::Once, &[Route])] = &[
            $((
                <$command as Command>::NAME,
                <$command as Command>::ONCE,
                <$command as FromRoute>::ROUTES,
            ),)*
            $((
                <$apart as Command>::NAME,
                <$apart as Command>::ONCE,
                <$apart as FromRoute>::ROUTES,
            ),)*
        ];

        impl OrgOp {
            /// The name of the command the operation performs, when it performs one.
            pub fn performed(self) -> Option<&'static str> {
                Some(match self {
                    $(Self::$op => <$command as Command>::NAME,)*
                    $(Self::$shaped $(| Self::$more)* => <$apart as Command>::NAME,)*
                    _ => return None,
                })
            }

            /// The scopes of the command the operation performs, when it performs one.
            fn requires(self) -> Option<&'static [Scope]> {
                use firmspace::commands::Command;
                Some(match self {
                    $(Self::$op => <$command>::REQUIRES,)*
                    $(Self::$shaped $(| Self::$more)* => <$apart>::REQUIRES,)*
                    _ => return None,
                })
            }

            /// The answer of the command the operation performs, from the command's own type,
            /// when its route answers it as it is.
            pub fn answer(self) -> Option<Doc> {
                Some(match self {
                    $(Self::$op => answer_of::<$command>(),)*
                    _ => return None,
                })
            }

            /// The operation's command performed by `by`, when it performs one: the same type
            /// whose scopes and answer the route takes.
            pub async fn perform<P: Performs>(
                self,
                by: &P,
            ) -> Option<Result<Response<Body>, ApiError>> {
                Some(match self {
                    $(Self::$op => Box::pin(by.perform::<$command>()).await,)*
                    $(Self::$shaped $(| Self::$more)* => Box::pin(by.perform::<$apart>()).await,)*
                    _ => return None,
                })
            }
        }
    };
}

performs! {
    answered {
        CreateIntegration => setup::CreateIntegration,
        RotateSecrets => operate::RotateSecrets,
        AddMember => records::AddMember,
        CreateInvoice => money::CreateInvoice,
        DuplicateInvoice => money::DuplicateInvoice,
        CreditInvoice => money::CreateCreditNote,
        VoidInvoice => money::VoidInvoice,
        MarkRead => records::MarkRead,
        CreateRule => records::CreateRule,
        CreateCall => records::RecordCall,
        CreateContact => records::CreateContact,
        MoveDeal => crm::MoveDeal,
        UploadCsv => statements::UploadStatement,
        StartImport => statements::StartImport,
        TopUp => money::TopUp,
        RefundLine => crm::RefundLedgerLine,
        CreateKey => records::CreateKey,
        RevokeKey => records::RevokeKey,
    }
    shaped {
        PayInvoice => money::RegisterPayment,
        MatchBankTx | UnmatchBankTx => money::MatchBankRow,
    }
    performing_none {
        ReadIntegration,
        ListMembers,
        ListInvoices,
        ReadInvoice,
        Notifications,
        ActivityLog,
        ListRules,
        ReadRule,
        Tasks,
        ListCalls,
        ListContacts,
        ListDeals,
        AssistantTools,
        AssistantCall,
        ListConversations,
        FileImport,
        BankTransactions,
        ConversationMessages,
        Review,
        AskRequest,
        AskCall,
        Wallet,
        Ledger,
        LedgerCsv,
        Inbox,
        ListKeys,
    }
}

impl Op {
    pub fn auth(self) -> Auth {
        match self {
            Self::OpenApi => Auth::Public,
            Self::CreateOrg => Auth::Admin,
            Self::Org(_) => Auth::OrgKey,
        }
    }

    /// The operation's `operationId`: the operation's own name in lower camel case
    /// (`PayInvoice` → `payInvoice`), what a client generator names its method.
    pub fn name(self) -> String {
        let upper = match self {
            Self::OpenApi => "GetOpenApi".to_owned(),
            Self::CreateOrg => "CreateOrg".to_owned(),
            Self::Org(op) => format!("{op:?}"),
        };
        let mut chars = upper.chars();
        chars
            .next()
            .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
            .unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum In {
    Path,
    Query,
    Header,
}

/// A documented request parameter; every `{placeholder}` of a path is one (`In::Path`).
pub struct Param {
    pub name: &'static str,
    pub at: In,
    pub required: bool,
    pub doc: &'static str,
}

/// A write done once per key: the same key and body again get the stored answer (marked
/// `Idempotent-Replayed: true`), the same key with another body is 409.
pub const IDEMPOTENCY_KEY: Param = Param {
    name: "Idempotency-Key",
    at: In::Header,
    required: true,
    doc: "1 to 255 visible ASCII characters, one per intended write: the same key and body get \
          the stored answer (with `Idempotent-Replayed: true`); another body is 409 \
          `idempotency_key_reused`",
};

/// A path parameter.
pub const fn path(name: &'static str, doc: &'static str) -> Param {
    Param {
        name,
        at: In::Path,
        required: true,
        doc,
    }
}

pub const INVOICE_ID: &[Param] = &[path("id", "the invoice's id (`inv_...`)")];
pub const OK: &[(u16, &str)] = &[(200, "OK")];
pub const CREATED: &[(u16, &str)] = &[(201, "created")];
pub const MALFORMED: (u16, &str) = (400, "`malformed`: the body is not the JSON described");
pub const NO_INVOICE: (u16, &str) = (404, "`not_found`: no such invoice in this organisation");

/// The body of a success answer.
#[derive(Clone, Copy)]
pub enum Answer {
    /// What the command the route's operation performs answers (`performs!`).
    Performed,
    One(Doc),
    /// `{"items": [...]}`.
    Items(Doc),
    /// A page: `{"items": [...], "cursor"}`, `cursor` while more remain (at the end: absent
    /// under `/api`, null under `/ops`).
    Paged(Doc),
    /// An HTML page, described.
    Html(&'static str),
    /// The OpenAPI document itself.
    Document,
    /// `text/csv` with a header row of these columns.
    Csv(&'static [&'static str]),
}

pub struct Route {
    pub method: Method,
    /// The path template, `{name}` for a parameter segment.
    pub path: &'static str,
    pub op: Op,
    pub summary: &'static str,
    pub params: &'static [Param],
    pub body: Option<Doc>,
    /// Success statuses, each with `answer`, and when each is given.
    pub ok: &'static [(u16, &'static str)],
    pub answer: Answer,
    /// The 4xx of this route and their error codes; auth's 401 and the 5xx come from `op`.
    pub errors: &'static [(u16, &'static str)],
}

impl Route {
    /// The scopes an organisation key needs for this route: a route that performs a command
    /// needs what the command requires (`Command::REQUIRES`, the one place authority is
    /// written); listing keys needs `ops`, another read `read`, an assistant's call none of its
    /// own (the tool it names asks its own: a read tool `read`, a writing one its command's
    /// scopes when it is performed). None for a route without a key.
    pub fn scopes(&self) -> &'static [Scope] {
        match self.op {
            Op::Org(op) => op.requires().unwrap_or(match op {
                OrgOp::ListKeys => &[Scope::Ops],
                // The tool it names asks its own: a read tool `read`, a writing one what its
                // command requires.
                OrgOp::AssistantCall => &[],
                _ if self.method == Method::Get => &[Scope::Read],
                _ => &[Scope::Write],
            }),
            Op::OpenApi | Op::CreateOrg => &[],
        }
    }

    /// Whether a key's request here reads (counted against the reads' limit).
    pub fn reads(&self) -> bool {
        self.method == Method::Get
    }

    pub(crate) fn matches<'a>(&self, segments: &[&'a str]) -> Option<Vec<(&'static str, &'a str)>> {
        let path: &'static str = self.path;
        let template: Vec<&'static str> = path.split('/').skip(1).collect();
        if template.len() != segments.len() {
            return None;
        }
        let mut params = Vec::new();
        for (t, s) in template.iter().zip(segments) {
            match placeholder(t) {
                Some(name) => params.push((name, *s)),
                None if t == s => {}
                None => return None,
            }
        }
        Some(params)
    }
}

pub(crate) fn placeholder(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}
