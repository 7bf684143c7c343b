//! What bounds automation whoever asks: at most [`REPLIES_MAX`] automated replies per
//! conversation in any rolling [`REPLY_WINDOW`] (a rule's reply, the AI step's, the
//! assistant's: two bots answering each other stop), and a budget of AI runs per organisation
//! and hour. Each is one item changed by a conditional write, exact under concurrency (the
//! window's a decision for `Store::write`, the budget's one conditional update).

use crate::ids::OrgId;
use crate::store::item::{n, s, Read};
use crate::store::{Cond, Decision, Plan, Seen, Step, Store, StoreError, Update, Written};
use crate::time;
use chrono::{DateTime, Duration, Utc};

/// Automated replies a conversation takes in any rolling window.
pub const REPLIES_MAX: usize = 5;
pub const REPLY_WINDOW: Duration = Duration::minutes(60);

fn cap_pk(org: &OrgId, conversation_id: &str) -> String {
    org.pk(&format!(
        "REPLY_CAP#{}",
        crate::ids::key_part(conversation_id)
    ))
}

/// The replies kept on the cap item that are still within the window: `(at, run)`.
fn within(stored: Option<&str>, now: DateTime<Utc>) -> Vec<(String, String)> {
    let since = time::format(now - REPLY_WINDOW);
    stored
        .unwrap_or_default()
        .split('\n')
        .filter_map(|line| line.split_once('|'))
        .filter(|(at, _)| *at >= since.as_str())
        .map(|(at, run)| (at.to_owned(), run.to_owned()))
        .collect()
}

/// How many automated replies `conversation_id` took in the window before `now`.
pub async fn replies_in_window(
    store: &Store,
    org: &OrgId,
    conversation_id: &str,
    now: DateTime<Utc>,
) -> Result<usize, StoreError> {
    let item = store.get(&cap_pk(org, conversation_id)).await?;
    Ok(within(item.as_ref().and_then(|i| i.opt_str("sent")), now).len())
}

/// The conversation's window is full: no place for one more automated reply.
#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the conversation took its automated replies of the window")]
    Full,
}

/// A place for `run`'s reply taken, as a decision: the cap item's one read, and one update of
/// its window held to the version read (another reply's place taken meanwhile is read again).
/// A place this run took before is a repeat: nothing written.
struct Admit<'a> {
    pk: String,
    org: &'a OrgId,
    run: &'a str,
}

impl Decision for Admit<'_> {
    type Out = ();
    type Error = AdmitError;

    fn keys(&self) -> Vec<String> {
        vec![self.pk.clone()]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<()>, AdmitError> {
        let item = seen.stored();
        let version = item.and_then(|i| i.u64_of("version").ok());
        let mut sent = within(item.and_then(|i| i.opt_str("sent")), now);
        if sent.iter().any(|(_, r)| r == self.run) {
            return Ok(Plan::Done(Written::Repeat { stored: () }));
        }
        if sent.len() >= REPLIES_MAX {
            return Err(AdmitError::Full);
        }
        sent.push((time::format(now), self.run.to_owned()));
        let lines: Vec<String> = sent.iter().map(|(at, r)| format!("{at}|{r}")).collect();
        let update = Update::new()
            .set("kind", s("reply_cap"))
            .set("org", s(self.org.as_str()))
            .set("sent", s(lines.join("\n")))
            .set("version", n(version.unwrap_or(0) + 1))
            .when(match version {
                Some(v) => Cond::Equals("version".into(), n(v)),
                None => Cond::Missing,
            });
        Ok(Plan::Write {
            steps: vec![Step::Update {
                pk: self.pk.clone(),
                update,
            }],
            out: (),
        })
    }
}

/// Takes a place for `run`'s reply in `conversation_id`'s window: `true` when it may send
/// (a place taken now, or by this run before), `false` at the cap.
pub async fn admit_reply(
    store: &Store,
    org: &OrgId,
    conversation_id: &str,
    run: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let pk = cap_pk(org, conversation_id);
    match store.write(&mut Admit { pk, org, run }, now).await {
        Ok(_) => Ok(true),
        Err(AdmitError::Full) => Ok(false),
        Err(AdmitError::Store(e)) => Err(e),
    }
}

/// Counts one AI run against the organisation's budget for the hour of `now`: `false` when
/// the hour's `per_hour` runs are spent.
pub async fn spend_ai_run(
    store: &Store,
    org: &OrgId,
    per_hour: u64,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let hour = now.format("%Y-%m-%dT%H").to_string();
    let update = Update::new()
        .set("kind", s("ai_budget"))
        .set("org", s(org.as_str()))
        .add("runs", n(1))
        .set("expires_at", n((now + Duration::days(2)).timestamp()))
        .when(Cond::Any(vec![
            Cond::Missing,
            Cond::Before("runs".into(), n(per_hour)),
        ]));
    store
        .update_if(&org.pk(&format!("AI_BUDGET#{hour}")), &update)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_replies_within_the_window_count() {
        let now = time::parse("2026-12-06T12:00:00.000Z").unwrap();
        let stored = "2026-12-06T10:59:00.000Z|old\n2026-12-06T11:30:00.000Z|new";
        let kept = within(Some(stored), now);
        assert_eq!(
            kept,
            vec![("2026-12-06T11:30:00.000Z".into(), "new".into())]
        );
    }

    #[test]
    fn a_place_is_taken_once_per_run_and_none_past_the_cap() {
        let now = time::parse("2026-12-06T12:00:00.000Z").unwrap();
        let org = OrgId::parse("o0123456789ab").unwrap();
        let cap = |runs: &[&str]| {
            let sent: Vec<String> = runs
                .iter()
                .map(|r| format!("2026-12-06T11:30:00.000Z|{r}"))
                .collect();
            let mut item = crate::store::Item::new();
            item.insert("sent".into(), s(sent.join("\n")));
            item.insert("version".into(), n(3));
            Seen::of(vec![Some(item)])
        };
        let admit = |run| Admit {
            pk: "PK".into(),
            org: &org,
            run,
        };
        let plan = admit("r9").decide(&cap(&["r1", "r2"]), now).unwrap();
        assert!(matches!(plan, Plan::Write { ref steps, .. } if steps.len() == 1));
        let again = admit("r2").decide(&cap(&["r1", "r2"]), now).unwrap();
        assert!(matches!(again, Plan::Done(Written::Repeat { .. })));
        let full = admit("r9").decide(&cap(&["r1", "r2", "r3", "r4", "r5"]), now);
        assert!(matches!(full, Err(AdmitError::Full)));
        let first = admit("r1").decide(&Seen::of(vec![None]), now).unwrap();
        assert!(matches!(first, Plan::Write { .. }));
    }
}
