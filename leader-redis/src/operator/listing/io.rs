//! The round trips of a listing, as data: the blocking and async connections each send
//! them in their own way (`sync_conn`, `async_conn`), everything else is shared.

use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline};

/// One round trip.
#[derive(Debug, Clone)]
pub(crate) enum Io {
    /// One command, on the master that serves `slot` (`None`: any node). One server
    /// ignores the slot.
    Command {
        /// The command.
        cmd: Cmd,
        /// A slot of the master to run it on.
        slot: Option<u16>,
    },
    /// Commands pipelined in one round trip to the master that serves `slot`, which holds
    /// all their keys; the reply is the array of their replies.
    Pipeline {
        /// The commands.
        cmds: Vec<Cmd>,
        /// A slot of the master that holds their keys (the blocking cluster connection
        /// routes by key instead).
        #[cfg_attr(not(any(feature = "tokio", feature = "smol")), allow(dead_code))]
        slot: Option<u16>,
    },
}

/// The node a command for `slot` goes to: the slot's master, or any node.
pub(crate) fn node(slot: Option<u16>) -> SingleNodeRoutingInfo {
    match slot {
        Some(slot) => SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master)),
        None => SingleNodeRoutingInfo::Random,
    }
}

/// [`node`] as the routing of a cluster connection's `route_command`.
pub(crate) fn routing(slot: Option<u16>) -> RoutingInfo {
    RoutingInfo::SingleNode(node(slot))
}

/// `cmds` as a plain pipeline.
pub(crate) fn pipeline(cmds: &[Cmd]) -> Pipeline {
    let mut pipe = Pipeline::with_capacity(cmds.len());
    for cmd in cmds {
        pipe.add_command(cmd.clone());
    }
    pipe
}
