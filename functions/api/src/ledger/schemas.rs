//! The ledger's answers (and the carrier's event) under the names the OpenAPI document gives
//! them: the types `firmspace::ledger` serialises (and reads), deriving their schemas.

pub use firmspace::ledger::decide::SmsAnswer;
pub use firmspace::ledger::inbox::InboxView as InboxItem;
pub use firmspace::ledger::line::LedgerLineView as LedgerItem;
pub use firmspace::ledger::parse::Body as SmsPayload;
pub use firmspace::ledger::wallet::WalletView as Wallet;
