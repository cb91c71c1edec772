//! `list` on the blocking and async connections: a page read from a name's index is one
//! script call ([`IndexListing`]); a scanned page sends what [`Listing`] asks, one round
//! trip at a time, exactly as `Script` has `invoke` and `invoke_async`. The page logic
//! and decoding are shared; the kit traces the call.

use std::time::SystemTime;

use leader_core::{Error, ListPage, ListRequest};
use redis::{RedisResult, Value};

use super::index::IndexListing;
use super::page::{Listing, Step};
use super::pattern::Pattern;
use super::{ListFailure, OP};
use crate::backend::RedisBackend;
use crate::error::OpError;

impl RedisBackend {
    /// One page of `request` on the blocking connections.
    pub(crate) fn list_blocking(&self, request: &ListRequest) -> Result<ListPage, Error> {
        match IndexListing::new(self.key_prefix(), request, SystemTime::now()) {
            Ok(Some(listing)) => {
                let sent = self.sync_pool().run(&listing.invocation());
                let result = read_index(&listing, sent);
                return self.finish_list(request, result);
            }
            Ok(None) => {}
            Err(failure) => return self.finish_list(request, Err(failure.into())),
        }
        let listing = Listing::new(
            self.key_prefix(),
            request,
            self.is_cluster(),
            SystemTime::now(),
        );
        let result = listing.and_then(|mut listing| {
            loop {
                match listing.next() {
                    Step::Send(io) => {
                        let sent = self.sync_pool().send(&io);
                        if let Err(failed) = reply(sent).and_then(|value| listing.feed(value)) {
                            break Err(failed);
                        }
                    }
                    Step::Done(page) => break Ok(page),
                }
            }
        });
        self.finish_list(request, result)
    }

    /// One page of `request` on the async connection.
    #[cfg(any(feature = "tokio", feature = "smol"))]
    pub(crate) async fn list_async(&self, request: &ListRequest) -> Result<ListPage, Error> {
        match IndexListing::new(self.key_prefix(), request, SystemTime::now()) {
            Ok(Some(listing)) => {
                let sent = self.async_pool().run(&listing.invocation()).await;
                let result = read_index(&listing, sent);
                return self.finish_list(request, result);
            }
            Ok(None) => {}
            Err(failure) => return self.finish_list(request, Err(failure.into())),
        }
        let result = match Listing::new(
            self.key_prefix(),
            request,
            self.is_cluster(),
            SystemTime::now(),
        ) {
            Ok(mut listing) => loop {
                match listing.next() {
                    Step::Send(io) => {
                        let sent = self.async_pool().send(&io).await;
                        if let Err(failed) = reply(sent).and_then(|value| listing.feed(value)) {
                            break Err(failed);
                        }
                    }
                    Step::Done(page) => break Ok(page),
                }
            },
            Err(failed) => Err(failed),
        };
        self.finish_list(request, result)
    }

    /// Names the listing (or the record at fault) in any error.
    fn finish_list(
        &self,
        request: &ListRequest,
        result: Result<ListPage, ListFailure>,
    ) -> Result<ListPage, Error> {
        result.map_err(|failed| {
            let key = failed
                .key
                .unwrap_or_else(|| Pattern::new(self.key_prefix(), &request.prefix).display());
            failed.failure.into_core(&key)
        })
    }
}

/// The page in the reply to an index read; a failure of the call names the index.
fn read_index(listing: &IndexListing, sent: RedisResult<Value>) -> Result<ListPage, ListFailure> {
    match sent {
        Ok(value) => listing.decode(&value),
        Err(err) => Err(ListFailure::at(
            OpError::from_redis(OP, err),
            listing.index().to_owned(),
        )),
    }
}

/// A round trip's reply, or its failure classified.
fn reply(sent: RedisResult<Value>) -> Result<Value, ListFailure> {
    sent.map_err(|err| OpError::from_redis(OP, err).into())
}
