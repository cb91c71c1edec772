//! Read/write locks: the order of their tokens and what their readers saw (definitions in
//! the crate README, "Read/write token order" and "Stale read"). Their overlaps are the
//! exclusive rule's, but for two read sections ([`super::overlaps`]).

use super::{Report, Section, ViolationKind, both, explanation};
use crate::event::{Event, What};
use crate::history::FaultSpan;

/// Counts the read/write token order violations of one lock (`all`: its sections, some
/// with a role; one without a role counts as a write): a writer whose token is not above
/// that of a section of the lock (read or write) that began before its acquire call did,
/// and a reader whose token is not above that of a write section that began before its
/// call did. A section that began (its `action-started`, written after its grant) before
/// another's acquire call began was granted first, and the store takes every grant of a
/// name from one counter, so no fault excuses one. An equal token is a duplicate, counted
/// as such, not here.
pub(super) fn token_order(all: &[Section], report: &mut Report) {
    let mut by_start: Vec<&Section> = all.iter().collect();
    by_start.sort_by_key(|s| s.start);
    let mut by_request: Vec<&Section> = all.iter().collect();
    by_request.sort_by_key(|s| s.requested);
    let mut started = by_start.iter().peekable();
    let mut highest: Option<&Section> = None;
    let mut highest_write: Option<&Section> = None;
    for later in by_request {
        while let Some(earlier) = started.next_if(|s| s.start < later.requested) {
            if highest.is_none_or(|h| earlier.token > h.token) {
                highest = Some(earlier);
            }
            if !earlier.is_read() && highest_write.is_none_or(|h| earlier.token > h.token) {
                highest_write = Some(earlier);
            }
        }
        let above = if later.is_read() {
            highest_write
        } else {
            highest
        };
        if let Some(earlier) = above.filter(|h| later.token < h.token) {
            report.shared_token_order_violations += 1;
            let detail = format!(
                "read/write token order: {later:?} asked after {earlier:?} began, with a \
                 smaller token"
            );
            report.violation(
                ViolationKind::SharedTokenOrder,
                detail,
                both(later, earlier),
            );
        }
    }
}

/// Counts the reads of the fenced resource, made inside a read section of one lock
/// (`all`), that saw a write with a token above the reader's. Only a writer granted after
/// the reader (whose section then overlaps the reader's) or an earlier writer with a
/// larger token (a token order violation) can have made that write, so a stale read is
/// explained only as such an overlap is ([`explanation`]: a pause of the reader or of
/// that writer, or a data-losing fault between them); when the trace has no section with
/// that token, a pause of the reader or a data-losing fault from its acquire call to the
/// read.
pub(super) fn stale_reads(all: &[Section], faults: &[FaultSpan], report: &mut Report) {
    for reader in all.iter().filter(|s| s.is_read()) {
        for read in &reader.reads {
            let What::ResourceRead {
                seen: Some(seen), ..
            } = read.what
            else {
                continue;
            };
            if seen <= reader.token {
                continue;
            }
            let writer = all.iter().find(|s| s.token == seen && !s.is_read());
            let explained = match writer {
                Some(writer) => explanation(reader, writer, faults).is_some(),
                None => faults.iter().any(|f| {
                    f.start <= read.at
                        && f.end >= reader.requested
                        && match f.kind {
                            crate::event::FaultKind::Pause { worker } => worker == reader.worker,
                            kind => kind.loses_data(),
                        }
                }),
            };
            if explained {
                report.explained_stale_reads += 1;
                continue;
            }
            report.stale_reads += 1;
            let mut events: Vec<Event> = reader.events.clone();
            events.push(read.clone());
            if let Some(writer) = writer {
                events.extend(writer.events.iter().cloned());
            }
            let detail = format!(
                "stale read: {reader:?} read the resource at {} and saw token {seen}, above \
                 its own; writer: {writer:?}",
                read.at
            );
            report.violation(ViolationKind::StaleRead, detail, events);
        }
    }
}

#[cfg(test)]
mod tests;
