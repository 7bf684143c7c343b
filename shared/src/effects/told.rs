//! What tells people of an event, written: its notifications and activity lines, each under its
//! own key. The fan-out writes an event's at once as it reads it; the notify worker writes
//! those that came by queue (a team's notification, a replay's, a resumption's).

use super::job::Applied;
use super::worker::WorkError;
use super::Told;
use crate::ids::OrgId;
use crate::review::Reason;
use crate::store::{Store, StoreError};

/// The most members a team's notification is written for at once, as the fan-out reads its
/// event: a larger team's goes to the notify worker, which writes a hundred copies at a time.
pub const TEAM_AT_ONCE: usize = 10;

/// The members of `org` when they are few enough for a team's notification to be written at
/// once (one read, of at most one more than `TEAM_AT_ONCE`); `None` when there are more.
pub async fn small_team(store: &Store, org: &OrgId) -> Result<Option<Vec<String>>, StoreError> {
    let members = crate::orgs::members_up_to(store, org, TEAM_AT_ONCE as i32 + 1).await?;
    Ok((members.len() <= TEAM_AT_ONCE).then(|| members.into_iter().map(|m| m.user_id).collect()))
}

/// What tells people, written: a notification to its recipients (a team's to `team` when it
/// was read already), or a line in its log. A team notification that finds no team cannot be
/// written by any retry.
pub async fn tell(
    store: &Store,
    told: Told,
    team: Option<&[String]>,
) -> Result<Applied, WorkError> {
    match told {
        Told::Notification(n) => super::notify::deliver(store, &n, team)
            .await?
            .ok_or_else(|| {
                WorkError::permanent(
                    Reason::NoRecipients,
                    "the invoice has no owner and the organisation has no members",
                )
            }),
        Told::Line(line) => Ok(Applied::one(super::activity::append(store, &line).await?)),
    }
}

/// Every record of `told`, each once, in order: a failure that retrying can help fails the
/// whole (what was written is absorbed by its key the next time); one that cannot is answered
/// with its consequence's key, after the others are written, so a notification nobody can
/// receive keeps no activity line from its log.
pub async fn tell_all(
    store: &Store,
    told: Vec<Told>,
    team: Option<&[String]>,
) -> Result<(Applied, Vec<(String, WorkError)>), WorkError> {
    let mut applied = Applied::default();
    let mut refused = Vec::new();
    for one in told {
        let key = super::Consequence::from(one.clone()).key();
        match tell(store, one, team).await {
            Ok(done) => applied = applied.and(done),
            Err(e @ WorkError::Transient(_)) => return Err(e),
            Err(e) => refused.push((key, e)),
        }
    }
    Ok((applied, refused))
}
