//! Deals: the cards of the board. A deal is made once, in the transaction of the event that
//! creates it (a lead form's submission, `leads`), and a person moves it between stages. Each
//! stage is a list (`DEALS#{stage}`, newest first); a move changes the card's stage and its list
//! in one update conditioned on the version it read.

use crate::ids::{LocalId, OrgId};
use crate::store::item::{n, s, tag_name, Builder, Read};
use crate::store::{Cond, Decision, Item, Plan, Seen, Step, Store, StoreError, Update, Written};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The stored item's `kind`.
pub const KIND: &str = "deal";

/// Where a card stands on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    New,
    Qualified,
    Won,
    Lost,
}

impl Stage {
    pub const ALL: [Self; 4] = [Self::New, Self::Qualified, Self::Won, Self::Lost];

    pub fn parse(raw: &str) -> Option<Self> {
        crate::store::item::parse_tag(raw)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deal {
    pub org: OrgId,
    pub id: LocalId,
    pub title: String,
    pub contact_id: String,
    pub stage: Stage,
    /// The key of the event that made it (`lead:INTEGRATION:SUBMISSION`).
    pub source: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub version: u64,
}

pub fn deal_pk(org: &OrgId, id: &str) -> String {
    org.pk(&format!("DEAL#{id}"))
}

fn stage_list(org: &OrgId, stage: Stage) -> String {
    org.pk(&format!("DEALS#{}", tag_name(&stage)))
}

impl Deal {
    pub fn pk(&self) -> String {
        deal_pk(&self.org, self.id.as_str())
    }

    pub fn to_item(&self) -> Item {
        Builder::new(&self.pk(), KIND, self.org.as_str())
            .str("deal_id", self.id.as_str())
            .str("title", &self.title)
            .str("contact_id", &self.contact_id)
            .tag("stage", &self.stage)
            .str("source", &self.source)
            .time("created_at", self.created_at)
            .time("updated_at", self.updated_at)
            .num("version", self.version)
            .list(&stage_list(&self.org, self.stage), &self.position())
            .build()
    }

    /// Its place on its stage's list: when it was made, then its id.
    fn position(&self) -> String {
        format!("{}#{}", time::format(self.created_at), self.id)
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |e: crate::ids::IdError| crate::store::item::malformed(item, &e.to_string());
        Ok(Self {
            org: OrgId::parse(item.str_of("org")?).map_err(bad)?,
            id: LocalId::parse("deal_id", item.str_of("deal_id")?).map_err(bad)?,
            title: item.str_of("title")?.to_owned(),
            contact_id: item.str_of("contact_id")?.to_owned(),
            stage: item.tag_of("stage")?,
            source: item.str_of("source")?.to_owned(),
            created_at: item.time_of("created_at")?,
            updated_at: item.time_of("updated_at")?,
            version: item.u64_of("version")?,
        })
    }

    /// The card as every answer shows it (a move's answer adds `moved` and `from`).
    pub fn view(&self) -> DealView {
        DealView {
            deal_id: self.id.as_str().to_owned(),
            title: self.title.clone(),
            contact_id: self.contact_id.clone(),
            stage: self.stage,
            source: self.source.clone(),
            created_at: time::format(self.created_at),
            updated_at: time::format(self.updated_at),
            version: self.version,
            moved: None,
            from: None,
        }
    }
}

/// A deal card as every answer shows it: the type the answers are made of and the OpenAPI
/// document describes (`Deal`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Deal)]
pub struct DealView {
    #[schema(example = "dl_0123456789abcdef")]
    pub deal_id: String,
    /// The lead's name.
    pub title: String,
    pub contact_id: String,
    pub stage: Stage,
    /// The key of the event that made it (`lead:INTEGRATION_ID:SUBMISSION_ID`).
    pub source: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    pub version: u64,
    /// A move's answer only: whether it moved now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved: Option<bool>,
    /// A move's answer only: the stage it left (null when it did not move).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Option<Stage>>,
}

pub async fn get(store: &Store, org: &OrgId, id: &str) -> Result<Option<Deal>, StoreError> {
    store
        .get(&deal_pk(org, id))
        .await?
        .filter(|item| item.opt_str("kind") == Some(KIND))
        .map(|item| Deal::from_item(&item))
        .transpose()
}

/// A page of one stage's cards, newest first (the list is an index: a card moved a moment ago
/// may show on its old stage's page for that moment).
pub async fn page(
    store: &Store,
    org: &OrgId,
    stage: Stage,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<Deal>, Option<String>), StoreError> {
    let (items, next) = store
        .page(&stage_list(org, stage), true, limit, cursor)
        .await?;
    let deals = items
        .iter()
        .map(Deal::from_item)
        .collect::<Result<_, _>>()?;
    Ok((deals, next))
}

/// A card after a move, and the stage it left (its own, when it stood there already).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub deal: Deal,
    pub from: Stage,
}

#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no such deal")]
    NoDeal,
}

/// A card's move, as a decision: its one read, and one update of its stage and list held to
/// the version read (a card another move changed meanwhile is read again). A card on that
/// stage already is a repeat: nothing written.
struct Move<'a> {
    org: &'a OrgId,
    id: &'a str,
    stage: Stage,
}

impl Decision for Move<'_> {
    type Out = Moved;
    type Error = MoveError;

    fn keys(&self) -> Vec<String> {
        vec![deal_pk(self.org, self.id)]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Moved>, MoveError> {
        let deal = match seen.stored() {
            Some(item) if item.opt_str("kind") == Some(KIND) => Deal::from_item(item)?,
            _ => return Err(MoveError::NoDeal),
        };
        let from = deal.stage;
        if from == self.stage {
            return Ok(Plan::Done(Written::Repeat {
                stored: Moved { deal, from },
            }));
        }
        let update = Update::new()
            .set("stage", s(tag_name(&self.stage)))
            .set("gsi1pk", s(stage_list(self.org, self.stage)))
            .set("updated_at", s(time::format(now)))
            .set("version", n(deal.version + 1))
            .when(Cond::Equals("version".into(), n(deal.version)));
        let steps = vec![Step::Update {
            pk: deal.pk(),
            update,
        }];
        let deal = Deal {
            stage: self.stage,
            updated_at: now,
            version: deal.version + 1,
            ..deal
        };
        Ok(Plan::Write {
            steps,
            out: Moved { deal, from },
        })
    }
}

/// Moves a card to `stage`: new, or a repeat when it stood there already.
pub async fn move_to(
    store: &Store,
    org: &OrgId,
    id: &str,
    stage: Stage,
    now: DateTime<Utc>,
) -> Result<Written<Moved>, MoveError> {
    store.write(&mut moving(org, id, stage), now).await
}

/// A move's decision, for a caller that writes it with more (a request's record).
pub fn moving<'a>(
    org: &'a OrgId,
    id: &'a str,
    stage: Stage,
) -> impl Decision<Out = Moved, Error = MoveError> + 'a {
    Move { org, id, stage }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deal_reads_back_as_itself_and_sits_on_its_stages_list() {
        let at = chrono::DateTime::UNIX_EPOCH;
        let deal = Deal {
            org: OrgId::parse("o0123456789ab").unwrap(),
            id: LocalId::parse("deal_id", "dl_1").unwrap(),
            title: "Olena Koval".into(),
            contact_id: "ct_1".into(),
            stage: Stage::Qualified,
            source: "lead:i:s1".into(),
            created_at: at,
            updated_at: at,
            version: 2,
        };
        let item = deal.to_item();
        assert_eq!(Deal::from_item(&item).unwrap(), deal);
        assert_eq!(
            item.str_of("gsi1pk").unwrap(),
            stage_list(&deal.org, Stage::Qualified)
        );
        assert_eq!(Stage::parse("won"), Some(Stage::Won));
        assert_eq!(Stage::parse("archived"), None);
    }
}
