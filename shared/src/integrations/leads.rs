//! Lead-form integrations: a website form or a form service, Standard Webhooks signed.

super::signed::standard_signed!(
    /// A lead form's settings.
    LeadSettings,
    LeadProvider,
    "leads"
);
