//! A recovery's answer as the import function sends it back (an HTTP status and a body, its
//! wire between two functions), read into the command's answer or refusal: the status by the
//! one table of outcomes (`outcome_of`), the code by the recovery's own list.

use super::outcome_of;
use crate::commands::operate::Recovers;
use crate::commands::{Outcome, Refused};
use crate::ops::recover::{Ask, Recovery, CODES};
use crate::payments::recover::Recovered;
use futures::future::BoxFuture;
use serde_json::Value;

impl Recovers for Recovery {
    fn recover<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Result<Recovered, Refused>> {
        Box::pin(async move {
            let (status, body) = self.ask(ask).await;
            let integration = crate::ids::IntegrationId::parse(&ask.integration_id)
                .map(|id| id.digest())
                .unwrap_or_default();
            tracing::info!(%integration, status, "recovery asked");
            ended(status, body)
        })
    }
}

/// How a recovery ended, from the import function's status and body: what was booked, or
/// refused as it says (its code, detail and what else it names; a code it does not list is
/// `recovery_refused`).
fn ended(status: u16, body: Value) -> Result<Recovered, Refused> {
    let unanswered = || Refused::unavailable("unavailable", "the recovery did not answer");
    let why = match outcome_of(status) {
        Outcome::Made(_) => return serde_json::from_value(body).map_err(|_| unanswered()),
        Outcome::Refused(why) => why,
    };
    let Value::Object(mut more) = body else {
        return Err(Refused {
            why,
            ..unanswered()
        });
    };
    let named = more.remove("error");
    let code = CODES
        .into_iter()
        .find(|c| named.as_ref().and_then(Value::as_str) == Some(*c))
        .unwrap_or("recovery_refused");
    let detail = match more.remove("detail") {
        Some(Value::String(detail)) => detail,
        _ => String::new(),
    };
    Err(Refused {
        more,
        ..Refused::new(why, code, detail)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::Why;
    use serde_json::json;

    #[test]
    fn a_recoverys_answer_ends_as_its_status_says() {
        let done = json!({"asked": 2, "new": 1, "duplicates": 1, "ignored": 0, "more": false, "cursor": null});
        let recovered = ended(200, done).expect("done");
        assert_eq!((recovered.asked, recovered.new), (2, 1));
        let refused =
            ended(409, json!({"error": "no_api_key", "detail": "set one"})).expect_err("refused");
        assert_eq!((refused.why, refused.code), (Why::Conflict, "no_api_key"));
        assert_eq!(
            refused.body(),
            json!({"error": "no_api_key", "detail": "set one"})
        );
        let busy = ended(
            503,
            json!({"error": "statement_busy", "detail": "a minute"}),
        )
        .expect_err("refused");
        assert!(busy.passing(), "a retry may get past it");
        let odd = ended(422, json!({"error": "whatever", "detail": "d", "rows": 3}))
            .expect_err("refused");
        assert_eq!((odd.why, odd.code), (Why::Conflict, "recovery_refused"));
        assert_eq!(odd.body()["rows"], 3);
        let garbled = ended(200, json!({"asked": "two"})).expect_err("unanswered");
        assert_eq!(
            (garbled.why, garbled.code),
            (Why::Unavailable, "unavailable")
        );
    }
}
