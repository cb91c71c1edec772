//! The driver client a backend works through, and its replacement when it stops answering.
//!
//! The driver has no socket timeout and no handshake timeout: after a partition that lost
//! bytes, its pooled connections and half-made ones wait for answers that never come, and
//! new operations queue behind them. A partition that heals therefore left every call
//! failing (for 14 s, or for good when the pool's connection slots were all stuck). So when
//! an operation gets no answer within `operation_timeout`, the client is taken as wedged:
//! the next operation builds a fresh client from the same options, on a network that may
//! have healed by then, and the old one is shut down, closing its stuck connections.
//!
//! A backend built on a caller's client (`from_client`) cannot rebuild it and relies on the
//! driver's own monitoring instead.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use mongodb::Client;
use mongodb::options::ClientOptions;
use parking_lot::Mutex;
use tokio::runtime::Handle;

use crate::ops::Store;

/// The current [`Store`], and how to make a new one.
pub(crate) struct Clients {
    current: Mutex<Store>,
    wedged: AtomicBool,
    rebuild: Option<Rebuild>,
}

/// What a fresh client is built from.
struct Rebuild {
    options: ClientOptions,
    background: Handle,
}

impl fmt::Debug for Clients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clients")
            .field("wedged", &self.wedged.load(Ordering::Relaxed))
            .field("rebuilds", &self.rebuild.is_some())
            .finish_non_exhaustive()
    }
}

impl Clients {
    /// Clients for a backend that built the client of `store` from `options` itself (on
    /// `background`), and may build it again.
    pub(crate) fn owned(store: Store, options: ClientOptions, background: Handle) -> Self {
        Clients {
            current: Mutex::new(store),
            wedged: AtomicBool::new(false),
            rebuild: Some(Rebuild {
                options,
                background,
            }),
        }
    }

    /// Clients for a caller's client, which is never replaced.
    pub(crate) fn borrowed(store: Store) -> Self {
        Clients {
            current: Mutex::new(store),
            wedged: AtomicBool::new(false),
            rebuild: None,
        }
    }

    /// The store for the next operation, on a fresh client if the current one is wedged.
    pub(crate) fn store(&self) -> Store {
        // A load first: the common case writes nothing to the shared flag.
        if self.wedged.load(Ordering::Acquire) && self.wedged.swap(false, Ordering::AcqRel) {
            self.replace();
        }
        self.current.lock().clone()
    }

    /// An operation got no answer in time: the client is taken as wedged.
    pub(crate) fn no_answer(&self) {
        if self.rebuild.is_some() {
            self.wedged.store(true, Ordering::Release);
        }
    }

    fn replace(&self) {
        let Some(rebuild) = &self.rebuild else { return };
        // The driver starts its monitoring tasks on the runtime it is built in.
        let _entered = rebuild.background.enter();
        let client = match Client::with_options(rebuild.options.clone()) {
            Ok(client) => client,
            Err(err) => {
                tracing::warn!(error = %err, "could not build a new MongoDB client; keeping the old one");
                return;
            }
        };
        let old_client = {
            let mut current = self.current.lock();
            let namespace = current.collection.namespace();
            let database = client.database(&namespace.db);
            let fresh = Store {
                collection: database.collection(&namespace.coll),
                records: database.collection(current.records.name()),
                ..current.clone()
            };
            std::mem::replace(&mut *current, fresh)
                .collection
                .client()
                .clone()
        };
        tracing::info!(
            "MongoDB gave no answer in time: replaced the client and closed its connections"
        );
        rebuild
            .background
            .spawn(async move { old_client.shutdown().immediate(true).await });
    }
}
