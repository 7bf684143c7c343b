//! SMS carrier integrations: our own contract, Standard Webhooks signed.

super::signed::standard_signed!(
    /// An SMS carrier's settings.
    SmsSettings,
    SmsProvider,
    "sms"
);
