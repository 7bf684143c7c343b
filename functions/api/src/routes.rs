//! The one route table: `App::respond` dispatches by it and `openapi::document` describes it, so
//! no route is served undocumented or documented unserved.

mod keys;
mod ledger;
mod table;

/// Every route: the core table, then the ledger's and the keys'. The first match wins.
pub fn all() -> impl Iterator<Item = &'static Route> {
    table::ROUTES
        .iter()
        .chain(ledger::ROUTES)
        .chain(keys::ROUTES)
}

use crate::openapi::Doc;
use firmspace::orgs::Scope;

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
pub enum Answer {
    One(Doc),
    /// One of these, by what the request met (the route's `ok` statuses say when).
    OneOf(&'static [Doc]),
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
    /// The scopes an organisation key needs for this route: setting an integration's secrets
    /// needs `write` and `ops` (a key with either alone could sign its own "provider"
    /// payments otherwise); every other route needs its `scope`.
    pub fn scopes(&self) -> Vec<Scope> {
        match self.op {
            Op::Org(OrgOp::RotateSecrets) => vec![Scope::Write, Scope::Ops],
            _ => self.scope().into_iter().collect(),
        }
    }

    /// The scope an organisation key needs for this route: managing keys and rotating secrets
    /// needs `ops`, a read
    /// `read`, anything else `write`. `None` for a route without an organisation key.
    pub fn scope(&self) -> Option<Scope> {
        match self.op {
            Op::Org(
                OrgOp::CreateKey | OrgOp::ListKeys | OrgOp::RevokeKey | OrgOp::RotateSecrets,
            ) => Some(Scope::Ops),
            Op::Org(_) if self.method == Method::Get => Some(Scope::Read),
            Op::Org(_) => Some(Scope::Write),
            Op::OpenApi | Op::CreateOrg => None,
        }
    }

    fn matches<'a>(&self, segments: &[&'a str]) -> Option<Vec<(&'static str, &'a str)>> {
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

fn placeholder(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}

/// A matched route and the values of its placeholders.
pub struct Found<'a> {
    pub route: &'static Route,
    params: Vec<(&'static str, &'a str)>,
}

impl<'a> Found<'a> {
    /// The segment in place of `{name}`; empty when the template has no such placeholder.
    pub fn param(&self, name: &str) -> &'a str {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v)
    }
}

/// The first route of the table with this method whose template fits the path's segments.
pub fn find<'a>(method: &str, segments: &[&'a str]) -> Option<Found<'a>> {
    all()
        .filter(|r| r.method.as_str() == method)
        .find_map(|route| {
            Some(Found {
                route,
                params: route.matches(segments)?,
            })
        })
}

/// The methods the table serves on this path: for a 405's `Allow`, when `find` found none.
pub fn allowed(segments: &[&str]) -> Vec<&'static str> {
    let mut methods: Vec<&'static str> = all()
        .filter(|r| r.matches(segments).is_some())
        .map(|r| r.method.as_str())
        .collect();
    methods.sort_unstable();
    methods.dedup();
    methods
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_path_with_another_method_names_the_methods_it_takes() {
        assert_eq!(allowed(&["api", "invoices"]), ["GET", "POST"]);
        assert_eq!(allowed(&["api", "invoices", "inv_1", "payments"]), ["POST"]);
        assert!(allowed(&["api", "nothing"]).is_empty());
    }

    #[test]
    fn every_route_matches_its_own_template_and_yields_its_parameters() {
        for route in all() {
            let path = route.path.replace('{', "v_").replace('}', "");
            let segments: Vec<&str> = path.split('/').skip(1).collect();
            let found = find(route.method.as_str(), &segments).expect(route.path);
            assert!(std::ptr::eq(found.route, route), "{}", route.path);
            for name in route.path.split('/').filter_map(placeholder) {
                assert_eq!(found.param(name), format!("v_{name}"));
            }
        }
    }

    #[test]
    fn an_unknown_path_or_method_matches_nothing() {
        assert!(find("GET", &["api", "orgs"]).is_none());
        assert!(find("DELETE", &["api", "invoices", "inv_1"]).is_none());
        assert!(find("GET", &["api", "invoices", "inv_1", "extra", "x"]).is_none());
    }

    #[test]
    fn an_invoice_id_is_read_from_its_segment() {
        let found = find("POST", &["api", "invoices", "inv_1", "payments"]).expect("route");
        assert_eq!(found.route.op, Op::Org(OrgOp::PayInvoice));
        assert_eq!(found.param("id"), "inv_1");
    }
}
