//! An SDK interceptor that records every DynamoDB request a handler sends (retries included).

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, Default)]
pub struct CallLog(Arc<Mutex<Vec<String>>>);

impl CallLog {
    pub fn clear(&self) {
        self.0.lock().expect("not poisoned").clear();
    }

    /// Operation names since the last `clear`, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("not poisoned"))
    }
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        "CallLog"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown")
            .to_owned();
        self.0.lock().expect("not poisoned").push(target);
        Ok(())
    }
}
