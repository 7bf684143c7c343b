//! Where a statement import stands, and where it goes next: pure steps over the cursor and the
//! time, so every window and every move is decided without a clock or a store.

use super::super::monobank::RANGE_MAX_SECS;
use crate::store::item::{Builder, Read};
use crate::store::Item;

/// How far back each later run reads again, for rows monobank adds late.
pub const OVERLAP_SECS: i64 = 600;

/// Where the import stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// Every row before this time is stored.
    pub synced_until: Option<i64>,
    /// The window being read page by page.
    pub window: Option<Window>,
}

/// One statement window, read newest first a page at a time: its `from`, its `to`, and the
/// next page's `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub from: i64,
    pub to: i64,
    pub page_to: i64,
}

/// What one page held: whether it was full, and its oldest row's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub full: bool,
    pub oldest: Option<i64>,
}

impl Cursor {
    pub fn read(item: Option<&Item>) -> Self {
        let Some(item) = item else {
            return Self::default();
        };
        let num = |name: &str| item.u64_of(name).ok().map(|v| v as i64);
        Self {
            synced_until: num("synced_until"),
            window: match (num("window_from"), num("window_to"), num("page_to")) {
                (Some(from), Some(to), Some(page_to)) => Some(Window { from, to, page_to }),
                _ => None,
            },
        }
    }

    /// The cursor as an item under `pk`.
    pub fn to_item(&self, pk: &str, org: &str) -> Item {
        let mut builder =
            Builder::new(pk, "bank_cursor", org).opt_num("synced_until", self.synced_until);
        if let Some(w) = self.window {
            builder = builder
                .num("window_from", w.from)
                .num("window_to", w.to)
                .num("page_to", w.page_to);
        }
        builder.build()
    }

    /// The window to read at `now`: the one under way, or the next. The first import reads back
    /// 31 days; a later one walks on from where it stopped (less an overlap), at most 31 days
    /// + 1 hour at a time, so a long outage leaves no gap.
    pub fn window(&self, now: i64) -> Window {
        if let Some(window) = self.window {
            return window;
        }
        let from = self
            .synced_until
            .map_or(now - RANGE_MAX_SECS + 3600, |synced| synced - OVERLAP_SECS);
        let to = (from + RANGE_MAX_SECS).min(now);
        Window {
            from,
            to,
            page_to: to,
        }
    }

    /// The cursor after `window`'s page is stored. A full page goes on to the page before its
    /// oldest row (read again, harmless); a full page all in one second moves one second on, or
    /// the window would never advance. A page that is not full ends the window.
    pub fn after(&self, window: Window, page: Page) -> Self {
        match (page.full, page.oldest) {
            (true, Some(oldest)) => Self {
                synced_until: self.synced_until,
                window: Some(Window {
                    page_to: if oldest >= window.page_to {
                        window.page_to - 1
                    } else {
                        oldest
                    },
                    ..window
                }),
            },
            _ => Self {
                synced_until: Some(window.to),
                window: None,
            },
        }
    }

    /// Caught up: no window under way, and the last one ends within the overlap the next run
    /// reads again.
    pub fn caught_up(&self, now: i64) -> bool {
        self.window.is_none()
            && self
                .synced_until
                .is_some_and(|synced| now - synced < OVERLAP_SECS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_760_000_000;

    #[test]
    fn a_first_import_reads_back_thirty_one_days_to_now() {
        let w = Cursor::default().window(NOW);
        assert_eq!((w.to, w.page_to), (NOW, NOW));
        assert_eq!(w.to - w.from, RANGE_MAX_SECS - 3600);
    }

    #[test]
    fn a_later_run_rereads_the_overlap_and_walks_on_without_a_gap() {
        let synced = NOW - 90 * 24 * 3600;
        let cursor = Cursor {
            synced_until: Some(synced),
            window: None,
        };
        let w = cursor.window(NOW);
        assert_eq!(w.from, synced - OVERLAP_SECS);
        assert_eq!(
            w.to,
            w.from + RANGE_MAX_SECS,
            "a long outage: one full window"
        );
        let next = cursor.after(
            w,
            Page {
                full: false,
                oldest: Some(w.from),
            },
        );
        assert_eq!(
            next.window(NOW).from,
            w.to - OVERLAP_SECS,
            "the next starts where it ended"
        );
    }

    #[test]
    fn a_full_page_goes_on_before_its_oldest_row_and_keeps_synced_until() {
        let cursor = Cursor {
            synced_until: Some(NOW - 3600),
            window: None,
        };
        let w = cursor.window(NOW);
        let next = cursor.after(
            w,
            Page {
                full: true,
                oldest: Some(NOW - 100),
            },
        );
        assert_eq!(next.synced_until, cursor.synced_until);
        assert_eq!(
            next.window,
            Some(Window {
                page_to: NOW - 100,
                ..w
            })
        );
    }

    #[test]
    fn a_full_page_all_in_one_second_moves_one_second_on() {
        let w = Window {
            from: NOW - 60,
            to: NOW,
            page_to: NOW,
        };
        let next = Cursor::default().after(
            w,
            Page {
                full: true,
                oldest: Some(NOW),
            },
        );
        assert_eq!(next.window.map(|w| w.page_to), Some(NOW - 1));
    }

    #[test]
    fn a_page_that_is_not_full_ends_the_window_and_is_caught_up_within_the_overlap() {
        let w = Window {
            from: NOW - 60,
            to: NOW,
            page_to: NOW,
        };
        let next = Cursor::default().after(
            w,
            Page {
                full: false,
                oldest: None,
            },
        );
        assert_eq!(
            next,
            Cursor {
                synced_until: Some(NOW),
                window: None
            }
        );
        assert!(next.caught_up(NOW + OVERLAP_SECS - 1));
        assert!(!next.caught_up(NOW + OVERLAP_SECS));
    }

    #[test]
    fn a_cursor_reads_back_as_it_was_written() {
        let cursor = Cursor {
            synced_until: Some(NOW - 3600),
            window: Some(Window {
                from: NOW - 7200,
                to: NOW,
                page_to: NOW - 10,
            }),
        };
        let item = cursor.to_item("ORG#o#BANK_CURSOR#i", "o");
        assert_eq!(Cursor::read(Some(&item)), cursor);
        assert_eq!(Cursor::read(None), Cursor::default());
    }
}
