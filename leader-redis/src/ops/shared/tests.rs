use std::time::Duration;

use leader_core::{AcquireRequest, MaxReaders, OwnerToken};

use super::*;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn hold(node: &str, token: &str) -> Value {
    Value::Array(vec![
        bulk(node),
        bulk(token),
        bulk("1000000"),
        bulk("2000000"),
    ])
}

/// The words of `op`'s command, keys and arguments as text.
fn words<O: Op>(op: &O) -> Vec<String> {
    op.invocation(LockKeys::new("leader", op.name()), "leader:released")
        .eval_cmd()
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            _ => String::new(),
        })
        .collect()
}

#[test]
fn an_acquire_sends_the_locks_own_keys_and_the_request() {
    let key = LockName::new("reports").unwrap();
    let owner = OwnerToken::random();
    let request = AcquireRequest::new(&key, owner, "node-a", Duration::from_millis(1500));
    let events = ReleaseEvents::new();
    let now = SystemTime::UNIX_EPOCH + Duration::from_micros(42);
    let read = AcquireShared::new(
        SharedRequest::read(request, MaxReaders::new(3).unwrap()),
        &events,
        now,
    );
    assert_eq!(
        words(&read)[2..],
        [
            "2",
            "leader:rw{reports}",
            "leader:rw{reports}:fence",
            "42",
            &owner.to_string(),
            "node-a",
            "1500",
            "0",
            "0",
            "read",
            "3",
        ]
    );
    let write = AcquireShared::new(SharedRequest::write(request), &events, now);
    assert_eq!(words(&write)[11], "write");
}

#[test]
fn acquire_decodes_a_grant_a_refusal_and_an_intent_and_rejects_garbage() {
    let key = LockName::new("reports").unwrap();
    let owner = OwnerToken::random();
    let request = AcquireRequest::new(&key, owner, "node-a", Duration::from_secs(1));
    let events = ReleaseEvents::new();
    let op = AcquireShared::new(SharedRequest::write(request), &events, SystemTime::now());
    let granted = Value::Array(vec![
        Value::Int(1),
        bulk("42"),
        bulk("1000000"),
        bulk("2000000"),
        bulk("node-a"),
    ]);
    let Ok(SharedOutcome::Acquired(lease)) = op.decode(granted).unwrap() else {
        panic!("a grant")
    };
    assert_eq!((lease.fencing_token, lease.owner), (42, owner));
    assert_eq!(lease.key, key);

    let held = Value::Array(vec![
        Value::Int(0),
        Value::Array(vec![]),
        Value::Array(vec![hold("r1", "7"), hold("r2", "8")]),
        Value::Array(vec![bulk("w"), bulk("3000000")]),
    ]);
    let Ok(SharedOutcome::Held(state)) = op.decode(held).unwrap() else {
        panic!("held")
    };
    assert_eq!(state.lock_name, "reports");
    assert!(state.writer.is_none());
    let readers: Vec<_> = state
        .readers
        .iter()
        .map(|r| (r.leader_id.as_str(), r.fencing_token))
        .collect();
    assert_eq!(readers, [("r1", 7), ("r2", 8)]);
    assert_eq!(state.intent.unwrap().leader_id, "w");

    let queued = Value::Array(vec![
        Value::Int(2),
        Value::Array(vec![]),
        Value::Array(vec![hold("r1", "7")]),
        Value::Array(vec![bulk("node-a"), bulk("3000000")]),
    ]);
    assert!(matches!(
        op.decode(queued).unwrap(),
        Ok(SharedOutcome::Queued(_))
    ));

    let corrupt = Value::Array(vec![
        Value::Int(-1),
        bulk("corrupt"),
        bulk("the value is not a JSON object"),
    ]);
    assert!(
        matches!(op.decode(corrupt), Err(OpError::CorruptShared { what }) if what == "the value is not a JSON object")
    );
    for garbage in [
        Value::Okay,
        Value::Array(vec![Value::Int(0), Value::Array(vec![])]),
        Value::Array(vec![
            Value::Int(0),
            Value::Array(vec![bulk("w")]),
            Value::Array(vec![]),
            Value::Array(vec![]),
        ]),
        Value::Array(vec![Value::Int(-1), bulk("other"), bulk("x")]),
    ] {
        assert!(
            matches!(op.decode(garbage.clone()), Err(OpError::BadReply { .. })),
            "{garbage:?}"
        );
    }
}

#[test]
fn an_unacknowledged_grant_is_an_error_released_in_its_role() {
    let key = LockName::new("reports").unwrap();
    let request = AcquireRequest::new(&key, OwnerToken::random(), "n", Duration::from_secs(1));
    let events = ReleaseEvents::new();
    let op = AcquireShared::new(
        SharedRequest::read(request, MaxReaders::DEFAULT),
        &events,
        SystemTime::now(),
    );
    let now = SystemTime::now();
    let lease = Lease::new(key.clone(), request.owner, "n", 7, now, now);
    let failure = || OpError::CorruptShared {
        what: String::new(),
    };
    let (answer, granted) =
        AcquireShared::unacknowledged(Ok(SharedOutcome::Acquired(lease)), &failure);
    assert!(answer.is_err());
    let requests: Vec<_> = granted
        .iter()
        .map(|lease| ReleaseRequest::new(lease, Duration::ZERO))
        .collect();
    let Some(Undo::Shared(release)) = op.undo(&requests, "leader") else {
        panic!("a read/write lock's release")
    };
    let sent = words(&release);
    assert_eq!(sent[3], "leader:rw{reports}");
    assert_eq!(sent[7], "read");
    let queued = Ok(SharedOutcome::Queued(SharedState::empty("reports")));
    let (answer, granted) = AcquireShared::unacknowledged(queued, &failure);
    assert!(matches!(answer, Ok(SharedOutcome::Queued(_))) && granted.is_empty());
}

#[test]
fn extend_release_and_state_decode_their_answers() {
    let key = LockName::new("reports").unwrap();
    let now = SystemTime::now();
    let lease = Lease::new(key.clone(), OwnerToken::random(), "n", 7, now, now);
    let extend = ExtendShared::new(
        Renewal::new(&lease, Duration::from_secs(1)),
        Role::Read,
        now,
    );
    assert!(matches!(
        extend.decode(Value::Int(0)).unwrap(),
        Ok(ExtendOutcome::NotHeld)
    ));
    assert!(matches!(
        extend.decode(bulk("2000000")).unwrap(),
        Ok(ExtendOutcome::Extended { .. })
    ));
    let corrupt = Value::Array(vec![Value::Int(-1), bulk("corrupt"), bulk("bad")]);
    assert!(matches!(
        extend.decode(corrupt.clone()),
        Err(OpError::CorruptShared { .. })
    ));

    let release = ReleaseShared::new(ReleaseRequest::new(&lease, Duration::ZERO), Role::Write);
    assert_eq!(release.decode(Value::Int(1)).unwrap(), Released::Freed);
    assert_eq!(release.decode(Value::Int(2)).unwrap(), Released::Kept);
    assert_eq!(release.decode(Value::Int(0)).unwrap(), Released::NotHeld);
    assert!(matches!(
        release.decode(Value::Int(3)),
        Err(OpError::BadReply { .. })
    ));
    let sent = words(&release);
    assert_eq!(
        sent[4..],
        [
            "leader:released".to_owned(),
            lease.owner.to_string(),
            "0".to_owned(),
            "write".to_owned(),
            // The name alone: no token (a read/write lock's are no exclusive holder's).
            "reports".to_owned(),
        ]
    );

    let state = StateShared::new(&key, true);
    assert_eq!(words(&state)[3..], ["leader:rw{reports}", "1"]);
    let free = Value::Array(vec![
        Value::Int(1),
        Value::Array(vec![]),
        Value::Array(vec![]),
        Value::Array(vec![]),
    ]);
    assert!(state.decode(free).unwrap().is_free());
    let written = Value::Array(vec![
        Value::Int(1),
        hold("w", "9"),
        Value::Array(vec![]),
        Value::Array(vec![]),
    ]);
    assert_eq!(
        state.decode(written).unwrap().writer.unwrap().fencing_token,
        9
    );
    assert!(matches!(
        state.decode(corrupt),
        Err(OpError::CorruptShared { .. })
    ));
}
