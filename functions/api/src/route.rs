//! What a route is: its method, path, operation, parameters, body and answers, described once
//! for the dispatch (`routes`) and the document (`openapi`) alike. It imports neither.

use firmspace::commands::{crm, money, operate, records, setup, statements};
use firmspace::orgs::Scope;
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

/// The routes behind an organisation API key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrgOp {
    CreateIntegration,
    ReadIntegration,
    RotateSecrets,
    AddMember,
    ListMembers,
    CreateInvoice,
    ListInvoices,
    ReadInvoice,
    PayInvoice,
    DuplicateInvoice,
    CreditInvoice,
    VoidInvoice,
    Notifications,
    MarkRead,
    ActivityLog,
    CreateRule,
    ListRules,
    ReadRule,
    Tasks,
    CreateCall,
    ListCalls,
    CreateContact,
    ListContacts,
    ListDeals,
    MoveDeal,
    AssistantTools,
    AssistantCall,
    ListConversations,
    UploadCsv,
    FileImport,
    StartImport,
    MatchBankTx,
    UnmatchBankTx,
    BankTransactions,
    ConversationMessages,
    Review,
    AskRequest,
    AskCall,
    TopUp,
    Wallet,
    Ledger,
    LedgerCsv,
    RefundLine,
    Inbox,
    CreateKey,
    ListKeys,
    RevokeKey,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    Public,
    /// `Authorization: Bearer <admin token>`.
    Admin,
    /// `Authorization: Bearer <organisation API key>`.
    OrgKey,
}

/// The command each writing operation performs, one line each: the scopes a key needs for its
/// route (`Route::scopes`) are that command's `REQUIRES`, and a route of the first list answers
/// what its command answers (`Answer::Performed`, its schema from `answer_of`), so neither is
/// written beside the route. The second list's routes answer a shape of their own (a payment's
/// event as its invoice shows it; a match or its undoing, each its half of `BankMatch`).
macro_rules! performs {
    (
        answered { $($op:ident => $command:ty),* $(,)? }
        shaped { $($shaped:ident $(| $more:ident)* => $apart:ty),* $(,)? }
    ) => {
        impl OrgOp {
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
