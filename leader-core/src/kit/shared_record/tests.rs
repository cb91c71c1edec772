use super::*;

const LEASE: Duration = Duration::from_secs(10);

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn ask_at(role: Role, owner: u128, now: SystemTime) -> SharedAsk<'static, SystemTime> {
    SharedAsk {
        role,
        owner: OwnerToken::from_u128(owner),
        node: "n",
        expires: now + LEASE,
        max_readers: 64,
        token_floor: 0,
    }
}

fn acquire(
    record: &mut SharedRecord<SystemTime>,
    role: Role,
    owner: u128,
    secs: u64,
) -> SharedAnswer<SystemTime> {
    record.acquire(ask_at(role, owner, at(secs)), at(secs))
}

fn token(answer: SharedAnswer<SystemTime>) -> u64 {
    match answer {
        SharedAnswer::Acquired(holder) => holder.token,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn owner(bits: u128) -> OwnerToken {
    OwnerToken::from_u128(bits)
}

#[test]
fn readers_share_and_a_writer_waits_for_them_with_new_readers_held_out() {
    let mut record = SharedRecord::default();
    let r1 = token(acquire(&mut record, Role::Read, 1, 0));
    let r2 = token(acquire(&mut record, Role::Read, 2, 1));
    assert_eq!((r1, r2), (1, 2));
    // A writer records its intent; a new reader is held out behind it.
    assert_eq!(
        acquire(&mut record, Role::Write, 9, 2),
        SharedAnswer::Queued
    );
    assert_eq!(acquire(&mut record, Role::Read, 3, 2), SharedAnswer::Held);
    // A reader already in renews (it is not new).
    assert_eq!(token(acquire(&mut record, Role::Read, 1, 3)), 1);
    assert!(record.release(Role::Read, owner(1), Duration::ZERO, at(4)));
    assert!(record.release(Role::Read, owner(2), Duration::ZERO, at(4)));
    // The writer gets in with a token above every reader's, and its intent is gone.
    let w = token(acquire(&mut record, Role::Write, 9, 5));
    assert!(w > r2);
    assert!(record.intent.is_none());
    assert_eq!(acquire(&mut record, Role::Read, 3, 6), SharedAnswer::Held);
    assert_eq!(acquire(&mut record, Role::Write, 8, 6), SharedAnswer::Held);
    assert!(record.release(Role::Write, owner(9), Duration::ZERO, at(7)));
    // A reader after the writer has a greater token.
    assert!(token(acquire(&mut record, Role::Read, 3, 8)) > w);
}

#[test]
fn holds_and_intents_run_out_on_the_store_clock() {
    let mut record = SharedRecord::default();
    token(acquire(&mut record, Role::Read, 1, 0));
    assert_eq!(
        acquire(&mut record, Role::Write, 9, 1),
        SharedAnswer::Queued
    );
    // The writer died waiting: its intent lapses a lease later, and readers come in.
    assert_eq!(acquire(&mut record, Role::Read, 2, 10), SharedAnswer::Held);
    token(acquire(&mut record, Role::Read, 2, 11));
    // The crashed readers run out; a writer gets in without waiting for them.
    token(acquire(&mut record, Role::Write, 8, 21));
    assert!(
        record
            .extend(Role::Read, owner(2), at(31), at(21))
            .is_none()
    );
    assert!(
        record
            .extend(Role::Write, owner(8), at(35), at(25))
            .is_some()
    );
    assert_eq!(acquire(&mut record, Role::Read, 3, 34), SharedAnswer::Held);
    token(acquire(&mut record, Role::Read, 3, 35));
}

#[test]
fn the_first_waiting_writer_goes_first_and_gives_up_by_releasing_its_intent() {
    let mut record = SharedRecord::default();
    token(acquire(&mut record, Role::Read, 1, 0));
    assert_eq!(
        acquire(&mut record, Role::Write, 8, 1),
        SharedAnswer::Queued
    );
    assert_eq!(acquire(&mut record, Role::Write, 9, 1), SharedAnswer::Held);
    assert!(record.release(Role::Read, owner(1), Duration::ZERO, at(2)));
    // The lock is free, but writer 8's intent is first.
    assert_eq!(acquire(&mut record, Role::Write, 9, 2), SharedAnswer::Held);
    assert!(record.release(Role::Write, owner(8), Duration::ZERO, at(3)));
    token(acquire(&mut record, Role::Write, 9, 3));
    assert!(!record.release(Role::Write, owner(8), Duration::ZERO, at(4)));
}

#[test]
fn readers_beyond_the_requests_limit_are_held() {
    let mut record = SharedRecord::default();
    let two = |owner: u128| SharedAsk {
        max_readers: 2,
        ..ask_at(Role::Read, owner, at(0))
    };
    token(record.acquire(two(1), at(0)));
    token(record.acquire(two(2), at(0)));
    assert_eq!(record.acquire(two(3), at(0)), SharedAnswer::Held);
    // The ones in still renew.
    assert_eq!(token(record.acquire(two(2), at(0))), 2);
}

#[test]
fn a_release_keeps_a_hold_for_its_minimum_lease_and_it_is_no_longer_the_owners() {
    let mut record = SharedRecord::default();
    token(acquire(&mut record, Role::Write, 1, 0));
    assert!(record.release(Role::Write, owner(1), Duration::from_secs(5), at(2)));
    // Kept until 5 s after it was taken: others are held out, the owner cannot renew it,
    // release it again or take it back as its own.
    assert_eq!(acquire(&mut record, Role::Read, 2, 4), SharedAnswer::Held);
    assert!(
        record
            .extend(Role::Write, owner(1), at(20), at(4))
            .is_none()
    );
    assert!(!record.release(Role::Write, owner(1), Duration::ZERO, at(4)));
    assert_eq!(acquire(&mut record, Role::Write, 1, 4), SharedAnswer::Held);
    token(acquire(&mut record, Role::Read, 2, 5));
    // A minimum lease already over frees at once.
    assert!(record.release(Role::Read, owner(2), Duration::from_secs(1), at(7)));
    assert!(record.readers.is_empty());
}

#[test]
fn a_token_floor_keeps_tokens_ahead_of_a_lost_counter() {
    let mut record = SharedRecord::default();
    let floor = SharedAsk {
        token_floor: 1_000,
        ..ask_at(Role::Read, 1, at(0))
    };
    assert_eq!(token(record.acquire(floor, at(0))), 1_000);
    assert_eq!(token(acquire(&mut record, Role::Read, 2, 0)), 1_001);
    // An owner's retried write while holding it renews with the same token.
    record.readers.clear();
    let w = token(acquire(&mut record, Role::Write, 3, 1));
    assert_eq!(token(acquire(&mut record, Role::Write, 3, 2)), w);
    assert!(record.writer.as_ref().is_some_and(|h| h.expires == at(12)));
}

/// Random operations of five owners on one record, at random times: the record never
/// has a writer beside a reader, and every grant's token is above every earlier one.
#[test]
fn random_histories_keep_writers_alone_and_tokens_rising() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(54);
    for _ in 0..200 {
        let mut record = SharedRecord::default();
        let mut now = at(0);
        let mut last_token = 0;
        for _ in 0..200 {
            now += Duration::from_millis(rng.random_range(0..4_000));
            let role = if rng.random_bool(0.3) {
                Role::Write
            } else {
                Role::Read
            };
            let who = OwnerToken::from_u128(rng.random_range(1..=5));
            match rng.random_range(0..4) {
                0 | 1 => {
                    let request = SharedAsk {
                        owner: who,
                        ..ask_at(role, 0, now)
                    };
                    let queued_before = record.intent.clone();
                    let renewing = match role {
                        Role::Read => record
                            .readers
                            .iter()
                            .any(|r| r.owner == who && !r.released && r.expires > now),
                        Role::Write => record
                            .writer
                            .as_ref()
                            .is_some_and(|w| w.owner == who && !w.released && w.expires > now),
                    };
                    if let SharedAnswer::Acquired(holder) = record.acquire(request, now)
                        && !renewing
                    {
                        assert!(holder.token > last_token, "{record:?}");
                        last_token = holder.token;
                        // A new reader never passes another owner's live intent.
                        if role == Role::Read {
                            assert!(
                                !queued_before.is_some_and(|i| i.owner != who && i.expires > now)
                            );
                        }
                    }
                }
                2 => {
                    record.extend(role, who, now + LEASE, now);
                }
                _ => {
                    let min = Duration::from_millis(rng.random_range(0..3_000));
                    record.release(role, who, min, now);
                }
            }
            let mut live = record.clone();
            live.prune(now);
            assert!(live.writer.is_none() || live.readers.is_empty(), "{live:?}");
            assert!(live.readers.iter().all(|r| r.token <= record.counter));
        }
    }
}
