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

use mongodb::bson::Document;
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection};
use parking_lot::Mutex;
use tokio::runtime::Handle;

use crate::config::MongoConfig;
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
    database: String,
    config: MongoConfig,
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
    /// Clients for a backend that built `client` from `options` itself (on `background`),
    /// and may build it again.
    pub(crate) fn owned(
        client: &Client,
        options: ClientOptions,
        database: String,
        config: MongoConfig,
        background: Handle,
    ) -> Self {
        let current = Mutex::new(store(client, &database, &config));
        Clients {
            current,
            wedged: AtomicBool::new(false),
            rebuild: Some(Rebuild {
                options,
                database,
                config,
                background,
            }),
        }
    }

    /// Clients for a caller's client, which is never replaced.
    pub(crate) fn borrowed(client: &Client, database: &str, config: &MongoConfig) -> Self {
        Clients {
            current: Mutex::new(store(client, database, config)),
            wedged: AtomicBool::new(false),
            rebuild: None,
        }
    }

    /// The store for the next operation, on a fresh client if the current one is wedged.
    pub(crate) fn store(&self) -> Store {
        if self.wedged.swap(false, Ordering::AcqRel) {
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
        let fresh = store(&client, &rebuild.database, &rebuild.config);
        let old = std::mem::replace(&mut *self.current.lock(), fresh);
        tracing::info!(
            "MongoDB gave no answer in time: replaced the client and closed its connections"
        );
        let old_client = old.collection.client().clone();
        drop(old);
        rebuild
            .background
            .spawn(async move { old_client.shutdown().immediate(true).await });
    }
}

fn store(client: &Client, database: &str, config: &MongoConfig) -> Store {
    let collection: Collection<Document> =
        client.database(database).collection(config.collection());
    Store {
        collection,
        write_concern: config.write_concern().clone(),
        max_time: config.max_time(),
    }
}
