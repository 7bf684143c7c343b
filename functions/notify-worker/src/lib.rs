#![forbid(unsafe_code)]
//! Notifications queue → one notification item per recipient, under a conditional key.

use anyhow::Context;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use firmspace::config::Config;
use firmspace::effects::worker::{self, WorkError};
use firmspace::effects::{notify, Consequence};
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
        worker::process(&self.store, "notify", self.max_receives, event, |c| {
            self.apply(c)
        })
        .await
    }

    async fn apply(&self, consequence: Consequence) -> Result<(), WorkError> {
        let Consequence::Notification {
            org,
            key,
            recipient,
            text,
            at,
        } = consequence
        else {
            return Err(WorkError::Permanent {
                reason: "wrong_queue",
                detail: "the notifications queue carries only notifications".into(),
            });
        };
        let org = OrgId::parse(&org).map_err(|e| WorkError::Permanent {
            reason: "malformed_message",
            detail: e.to_string(),
        })?;
        match notify::deliver(&self.store, &org, &key, recipient.as_deref(), &text, &at).await? {
            Some(created) => {
                tracing::info!(created, "notification delivered");
                Ok(())
            }
            None => Err(WorkError::Permanent {
                reason: "no_recipients",
                detail: "the invoice has no owner and the organisation has no members".into(),
            }),
        }
    }
}
