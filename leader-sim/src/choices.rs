//! The choice seam: every choice the world makes beyond the plan's faults goes through
//! [`Choices`]. [`Seeded`] makes them from the plan's seed (what [`crate::run`] plays);
//! [`Scripted`] makes them from a choice vector, the default (nothing goes wrong) past its
//! end, and records every choice point it met: what the exhaustive explorer
//! ([`crate::explore`]) enumerates and replays.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::plan::Network;

/// A message between a node and the store, about to be sent through the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The node at the other end.
    pub node: u32,
    /// A request (to the store) rather than a reply (to the node).
    pub request: bool,
    /// When it is sent, µs of true time.
    pub sent_us: u64,
}

/// What the network does to one [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fate {
    /// It is lost.
    pub lost: bool,
    /// Its one-way delay, µs (a slow link's extra delay is added to it).
    pub delay_us: u64,
    /// It is held back this long on top of its delay (and so reordered), µs.
    pub held_back_us: Option<u64>,
    /// A request is delivered a second time, this long after the first, µs.
    pub duplicate_after_us: Option<u64>,
}

/// A choice point of a run: where [`Scripted`] chose, and among how many options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChoicePoint {
    /// When, µs of true time.
    pub at_us: u64,
    /// The node it concerns.
    pub node: u32,
    /// What was chosen about.
    pub kind: PointKind,
    /// How many options there were.
    pub options: u32,
    /// The option taken (0: the default, nothing goes wrong).
    pub chosen: u32,
}

/// What a [`ChoicePoint`] chose about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// A request's fate: 0 on time, 1 delayed, 2 held back, 3 lost (see [`Scripted`]).
    Request,
    /// A reply's fate: 0 on time, 1 delayed, 2 held back, 3 lost (see [`Scripted`]).
    Reply,
    /// A leader about to renew its term: 0 goes on, 1 is paused first.
    Pause,
}

/// Every choice the world makes beyond the plan's faults.
pub trait Choices {
    /// The fate of `message`, on `network`, in a run whose lease is `lease_us`.
    fn fate(&mut self, message: Message, network: &Network, lease_us: u64) -> Fate;

    /// Whether node `node`, a leader about to renew its term at true time `at_us`, is
    /// paused first, and for how long (µs). Random runs draw their pauses from the plan's
    /// faults instead: [`Seeded`] never pauses here, and draws nothing.
    fn pause_before_renewal(&mut self, node: u32, at_us: u64, lease_us: u64) -> Option<u64>;

    /// The round trip between a store client and the store, µs, for a group's acquire
    /// on a store that tries its slots one call each, between two slots.
    fn hop_us(&mut self, network: &Network) -> u64;
}

/// The choices of a random run, drawn from its seed: each message's delay, and the few
/// that are lost, held back or duplicated (the rates of the plan's [`Network`]).
#[derive(Debug, Clone)]
pub struct Seeded {
    rng: StdRng,
}

impl Seeded {
    /// The choices of the run of a plan with `seed`.
    pub fn new(seed: u64) -> Seeded {
        Seeded {
            rng: StdRng::seed_from_u64(seed),
        }
    }
}

impl Choices for Seeded {
    fn fate(&mut self, message: Message, net: &Network, lease_us: u64) -> Fate {
        // The draws, in this order, are what every seed has always played: keep them.
        if net.lost_one_in > 0 && self.rng.random_ratio(1, net.lost_one_in) {
            return Fate {
                lost: true,
                ..Fate::default()
            };
        }
        let delay_us = self
            .rng
            .random_range(net.min_us..=net.max_us.max(net.min_us));
        let held_back_us = (net.held_back_one_in > 0
            && self.rng.random_ratio(1, net.held_back_one_in))
        .then(|| self.rng.random_range(0..=lease_us));
        let duplicate_after_us = (message.request
            && net.duplicated_one_in > 0
            && self.rng.random_ratio(1, net.duplicated_one_in))
        .then(|| {
            self.rng
                .random_range(net.min_us..=net.max_us.max(net.min_us) * 4)
        });
        Fate {
            lost: false,
            delay_us,
            held_back_us,
            duplicate_after_us,
        }
    }

    fn pause_before_renewal(&mut self, _node: u32, _at_us: u64, _lease_us: u64) -> Option<u64> {
        None
    }

    fn hop_us(&mut self, net: &Network) -> u64 {
        self.rng
            .random_range(net.min_us..=net.max_us.max(net.min_us))
            * 2
    }
}

/// Choices taken from a choice vector: the `i`-th choice point takes option
/// `vector[i]`, and every point past its end the default (option 0: a message on time at
/// the network's shortest delay, no pause). Only the first `depth` points have more than
/// one option; past that, every point has the default alone.
///
/// The options of a message: on time; delayed (two fifths of a lease: a term's renewal,
/// due a fifth of a lease after the last, is still answered before its renew deadline, two
/// thirds of a lease after the last); held back (two thirds of a lease: past that
/// deadline); lost.
/// The options of a leader about to renew its term: go on; be paused for two leases first.
#[derive(Debug, Clone)]
pub struct Scripted {
    vector: Vec<u32>,
    depth: usize,
    points: Vec<ChoicePoint>,
}

impl Scripted {
    /// The choices of `vector`, choosing among options at the first `depth` points only.
    pub fn new(vector: Vec<u32>, depth: usize) -> Scripted {
        Scripted {
            vector,
            depth,
            points: Vec::new(),
        }
    }

    /// Every choice point met so far, in order.
    pub fn points(&self) -> &[ChoicePoint] {
        &self.points
    }

    /// The options taken so far: the choice vector that replays them.
    pub fn taken(&self) -> Vec<u32> {
        self.points.iter().map(|p| p.chosen).collect()
    }

    fn choose(&mut self, at_us: u64, node: u32, kind: PointKind, options: u32) -> u32 {
        let i = self.points.len();
        let options = if i < self.depth { options } else { 1 };
        let chosen = self
            .vector
            .get(i)
            .copied()
            .unwrap_or(0)
            .min(options.saturating_sub(1));
        self.points.push(ChoicePoint {
            at_us,
            node,
            kind,
            options,
            chosen,
        });
        chosen
    }
}

impl Choices for Scripted {
    fn fate(&mut self, message: Message, net: &Network, lease_us: u64) -> Fate {
        let kind = if message.request {
            PointKind::Request
        } else {
            PointKind::Reply
        };
        let on_time = Fate {
            delay_us: net.min_us,
            ..Fate::default()
        };
        match self.choose(message.sent_us, message.node, kind, 4) {
            0 => on_time,
            1 => Fate {
                held_back_us: Some(lease_us * 2 / 5),
                ..on_time
            },
            2 => Fate {
                held_back_us: Some(lease_us * 2 / 3),
                ..on_time
            },
            _ => Fate {
                lost: true,
                ..Fate::default()
            },
        }
    }

    fn pause_before_renewal(&mut self, node: u32, at_us: u64, lease_us: u64) -> Option<u64> {
        (self.choose(at_us, node, PointKind::Pause, 2) == 1).then_some(lease_us * 2)
    }

    /// Not a choice point: the network's shortest round trip.
    fn hop_us(&mut self, net: &Network) -> u64 {
        net.min_us * 2
    }
}
