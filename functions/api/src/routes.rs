//! The one route table: `App::respond` dispatches by it and `openapi::document` describes it, so
//! no route is served undocumented or documented unserved.

mod keys;
mod ledger;
mod table;

/// Every route: the core table, the routes of the commands the operations perform (each beside
/// the command's reading, `FromRoute::ROUTES`), then the ledger's and the keys' reads. No two
/// take one method and path (a test holds it).
pub fn all() -> impl Iterator<Item = &'static Route> {
    table::ROUTES
        .iter()
        .chain(PERFORMED.iter().flat_map(|(_, _, routes)| routes.iter()))
        .chain(ledger::ROUTES)
        .chain(keys::ROUTES)
}

pub use crate::route::*;

/// A matched route and the values of its placeholders.
pub struct Found<'a> {
    pub route: &'static Route,
    params: Vec<(&'static str, &'a str)>,
}

impl<'a> Found<'a> {
    /// Every placeholder with its segment.
    pub fn params(&self) -> &[(&'static str, &'a str)] {
        &self.params
    }

    /// The segment in place of `{name}`; empty when the template has no such placeholder.
    pub fn param(&self, name: &str) -> &'a str {
        param(&self.params, name)
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

    /// A route whose operation performs a command of `performs!`'s first list answers what the
    /// command answers, and names no schema of its own; no other route says `Performed`.
    #[test]
    fn every_performing_route_answers_what_its_command_does() {
        let mut performing = 0;
        for route in all() {
            let command = match route.op {
                Op::Org(op) => op.answer(),
                _ => None,
            };
            let performed = matches!(route.answer, Answer::Performed);
            assert_eq!(
                command.is_some(),
                performed,
                "{} {}",
                route.method.as_str(),
                route.path
            );
            performing += usize::from(performed);
        }
        assert_eq!(performing, 18, "the routes of `performs!`'s first list");
    }

    /// A command's own routes name operations that perform that command, and document an
    /// `Idempotency-Key` exactly when the command takes one (`Once::needs_key`: the dispatch
    /// asks for it then, `lib::Performing`).
    #[test]
    fn every_commands_route_is_of_an_operation_that_performs_it_keyed_as_the_command_says() {
        for (name, once, routes) in PERFORMED {
            for route in *routes {
                let what = format!("{} {}", route.method.as_str(), route.path);
                let performed = match route.op {
                    Op::Org(op) => op.performed(),
                    _ => None,
                };
                assert_eq!(performed, Some(*name), "{what}");
                let keyed = route.params.iter().any(|p| p.name == IDEMPOTENCY_KEY.name);
                assert_eq!(keyed, once.needs_key(), "{what}");
            }
        }
        assert_eq!(PERFORMED.iter().map(|(_, _, r)| r.len()).sum::<usize>(), 21);
    }

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
