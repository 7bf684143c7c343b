#![forbid(unsafe_code)]
//! Activity queue → an entry in a contact, deal or company log, appended once per key.

use anyhow::Context;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use firmspace::config::Config;
use firmspace::effects::activity::{self, Entry};
use firmspace::effects::worker::{self, WorkError};
use firmspace::effects::{Consequence, ENTITY_KINDS};
use firmspace::ids::OrgId;
use firmspace::store::Store;
use lambda_runtime::LambdaEvent;

pub struct App {
    store: Store,
    max_receives: u32,
}

impl App {
    pub fn new(store: Store, max_receives: u32) -> Self {
        Self {
            store,
            max_receives,
        }
    }

    pub async fn from_env() -> anyhow::Result<Self> {
        let config = Config::from_env().context("loading configuration")?;
        Ok(Self::new(
            Store::from_config(&config).await,
            config.max_receive_count,
        ))
    }

    pub async fn handle(
        &self,
        event: LambdaEvent<SqsEvent>,
    ) -> Result<SqsBatchResponse, lambda_runtime::Error> {
        Ok(self.process(event.payload).await)
    }

    pub async fn process(&self, event: SqsEvent) -> SqsBatchResponse {
        worker::process(&self.store, "activity", self.max_receives, event, |c| {
            self.apply(c)
        })
        .await
    }

    async fn apply(&self, consequence: Consequence) -> Result<(), WorkError> {
        let Consequence::Activity {
            org,
            entity_kind,
            entity_id,
            key,
            kind,
            text,
            at,
        } = consequence
        else {
            return Err(WorkError::Permanent {
                reason: "wrong_queue",
                detail: "the activity queue carries only activity entries".into(),
            });
        };
        let org = OrgId::parse(&org).map_err(|e| WorkError::Permanent {
            reason: "malformed_message",
            detail: e.to_string(),
        })?;
        if !ENTITY_KINDS.contains(&entity_kind.as_str()) {
            return Err(WorkError::Permanent {
                reason: "malformed_message",
                detail: format!("unknown entity kind {entity_kind:?}"),
            });
        }
        let entry = Entry {
            entity_kind: &entity_kind,
            entity_id: &entity_id,
            key: &key,
            kind: &kind,
            text: &text,
            at: &at,
        };
        let appended = activity::append(&self.store, &org, &entry).await?;
        tracing::info!(appended, "activity entry");
        Ok(())
    }
}
