//! The answers' types under the names the OpenAPI document gives them. Each is the type its
//! handler (or the `firmspace` function behind it) serialises, deriving its schema, so the
//! document and the answers cannot drift.

pub use crate::assistant::{AssistantCallAnswer, AssistantTools};
pub use crate::setup::IntegrationInfo;
pub use firmspace::bank::files::FileImportView as FileImport;
pub use firmspace::bank::BankTxView as BankTransaction;
pub use firmspace::calls::{CallAnswer, CallView as Call};
pub use firmspace::commands::answers::{Member, OrgCreated};
pub use firmspace::contacts::ContactView as Contact;
pub use firmspace::deals::DealView as Deal;
pub use firmspace::effects::activity::ActivityView as ActivityLine;
pub use firmspace::effects::automation::{RuleView as Rule, TaskView as Task};
pub use firmspace::effects::notify::NotificationView as Notification;
pub use firmspace::http::Problem as ErrorBody;
pub use firmspace::http::RequestOutcome;
pub use firmspace::messages::conversation::ConversationView as Conversation;
pub use firmspace::messages::item::MessageView as Message;
pub use firmspace::payments::detail::InvoiceDetail;
pub use firmspace::payments::event::PaymentAnswer;
pub use firmspace::payments::invoice::InvoiceView as Invoice;
pub use firmspace::review::ReviewView as ReviewItem;
