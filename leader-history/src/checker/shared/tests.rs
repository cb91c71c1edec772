//! The read/write lock rules, on made-up histories (the checker's shared helpers are in
//! `checker/tests.rs`; the compact form's `start` takes `role=read|write`, and `read`
//! lines are a reader's `resource-read`, with `seen=`).

use crate::checker::ViolationKind;
use crate::checker::tests::{fault, life, run};
use crate::event::FaultKind;
use crate::{Settings, check_trace};

fn kinds(report: &crate::Report) -> Vec<ViolationKind> {
    report.violations.iter().map(|v| v.kind).collect()
}

#[test]
fn readers_share_and_a_writer_overlaps_nobody() {
    // Three readers at once (tokens 5, 6, 7), then a writer after they left (8).
    let readers = || {
        vec![
            life(
                1,
                "10\tstart\ttoken=5\treq=9\trole=read\n50\tend\ttoken=5\n",
            ),
            life(
                2,
                "20\tstart\ttoken=6\treq=19\trole=read\n40\tend\ttoken=6\n",
            ),
            life(
                3,
                "30\tstart\ttoken=7\treq=29\trole=read\n45\tend\ttoken=7\n",
            ),
        ]
    };
    let mut logs = readers();
    logs.push(life(
        4,
        "60\tstart\ttoken=8\treq=35\trole=write\n70\tend\ttoken=8\n",
    ));
    let report = run(logs, vec![], &[]);
    assert!(report.passed(), "{report}");
    assert_eq!(report.unexplained_overlaps + report.explained_overlaps, 0);
    assert_eq!(
        (report.tallies.read_sections, report.tallies.write_sections),
        (3, 1)
    );
    // A writer in among the readers: it overlaps each of the two still there.
    let mut logs = readers();
    logs.push(life(
        4,
        "42\tstart\ttoken=8\treq=35\trole=write\n48\tend\ttoken=8\n",
    ));
    let report = run(logs, vec![], &[]);
    assert_eq!(report.unexplained_overlaps, 2, "{report}");
    assert!(!report.passed());
    // A writer over another writer: an overlap too.
    let report = run(
        vec![
            life(
                1,
                "10\tstart\ttoken=5\treq=9\trole=write\n30\tend\ttoken=5\n",
            ),
            life(
                2,
                "20\tstart\ttoken=6\treq=19\trole=write\n40\tend\ttoken=6\n",
            ),
        ],
        vec![],
        &[],
    );
    assert_eq!(kinds(&report), [ViolationKind::UnexplainedOverlap]);
}

#[test]
fn a_writer_over_a_reader_is_excused_only_as_an_exclusive_overlap_is() {
    // Reader 1 holds from 10 (asked at 9), lost at 60; writer 2 starts at 40 (asked 35).
    let holders = || {
        vec![
            life(
                1,
                "10\tstart\ttoken=5\treq=9\trole=read\n60\tlost\ttoken=5\n61\tend\ttoken=5\n",
            ),
            life(
                2,
                "40\tstart\ttoken=6\treq=35\trole=write\n70\tend\ttoken=6\n",
            ),
        ]
    };
    // The reader stopped 20..59: explained, as is a data-losing fault before the writer.
    for explaining in [
        fault(FaultKind::Pause { worker: 1 }, 20, 59),
        fault(FaultKind::Wipe { rows: 1 }, 20, 20),
    ] {
        let report = run(holders(), vec![explaining], &[]);
        assert_eq!(
            (report.explained_overlaps, report.unexplained_overlaps),
            (1, 0),
            "{explaining:?}"
        );
    }
    // A partition, a pause of a bystander, a loss after the writer began: unexplained.
    for not in [
        fault(FaultKind::Blackhole, 20, 59),
        fault(FaultKind::Pause { worker: 3 }, 20, 59),
        fault(FaultKind::Wipe { rows: 1 }, 45, 45),
    ] {
        let report = run(holders(), vec![not], &[]);
        assert_eq!(report.unexplained_overlaps, 1, "{not:?}");
    }
}

#[test]
fn a_writer_gets_a_token_above_every_section_begun_before_it_asked() {
    // Reader 9 began at 10 and is still reading when writer 7 asks at 15 (it queues):
    // writer 7 is granted at 40 after the reader left, with a smaller token.
    let report = run(
        vec![
            life(
                1,
                "10\tstart\ttoken=9\treq=9\trole=read\n30\tend\ttoken=9\n",
            ),
            life(
                2,
                "40\tstart\ttoken=7\treq=15\trole=write\n50\tend\ttoken=7\n",
            ),
        ],
        vec![],
        &[],
    );
    assert_eq!(kinds(&report), [ViolationKind::SharedTokenOrder]);
    assert_eq!(report.shared_token_order_violations, 1);
    assert!(!report.passed());
    // The violation shows the writer's section, then the reader's.
    let tokens: Vec<u64> = report.violations[0]
        .events
        .iter()
        .filter_map(|e| match e.what {
            crate::What::ActionStarted { token, .. } => Some(token),
            _ => None,
        })
        .collect();
    assert_eq!(tokens, [7, 9]);
    // The exclusive rule (an acquire after the other section *ended*) misses it: the
    // same sections without roles pass.
    let exclusive = run(
        vec![
            life(1, "10\tstart\ttoken=9\treq=9\n30\tend\ttoken=9\n"),
            life(2, "40\tstart\ttoken=7\treq=15\n50\tend\ttoken=7\n"),
        ],
        vec![],
        &[],
    );
    assert!(exclusive.passed(), "{exclusive}");
    // No fault excuses it, a data-losing one included.
    let report = run(
        vec![
            life(
                1,
                "10\tstart\ttoken=9\treq=9\trole=read\n30\tend\ttoken=9\n",
            ),
            life(
                2,
                "40\tstart\ttoken=7\treq=15\trole=write\n50\tend\ttoken=7\n",
            ),
        ],
        vec![fault(FaultKind::Restart { data_lost: true }, 12, 14)],
        &[],
    );
    assert_eq!(report.shared_token_order_violations, 1);
    // A writer that asked before the reader began may have the smaller token (granted
    // first, then paused before its start line).
    let report = run(
        vec![
            life(
                1,
                "10\tstart\ttoken=9\treq=9\trole=read\n30\tend\ttoken=9\n",
            ),
            life(
                2,
                "40\tstart\ttoken=7\treq=5\trole=write\n50\tend\ttoken=7\n",
            ),
        ],
        vec![fault(FaultKind::Pause { worker: 2 }, 6, 39)],
        &[],
    );
    assert_eq!(report.shared_token_order_violations, 0, "{report}");
}

#[test]
fn a_reader_gets_a_token_above_every_earlier_writer_but_not_every_reader() {
    // Writer 9 (10..20), then reader 8 (asked at 25): a violation.
    let report = run(
        vec![
            life(
                1,
                "10\tstart\ttoken=9\treq=9\trole=write\n20\tend\ttoken=9\n",
            ),
            life(
                2,
                "30\tstart\ttoken=8\treq=25\trole=read\n40\tend\ttoken=8\n",
            ),
        ],
        vec![],
        &[],
    );
    assert_eq!(kinds(&report), [ViolationKind::SharedTokenOrder]);
    // Reader 9, then reader 8: readers are not ordered among themselves.
    let report = run(
        vec![
            life(
                1,
                "10\tstart\ttoken=9\treq=9\trole=read\n20\tend\ttoken=9\n",
            ),
            life(
                2,
                "30\tstart\ttoken=8\treq=25\trole=read\n40\tend\ttoken=8\n",
            ),
        ],
        vec![],
        &[],
    );
    assert!(report.passed(), "{report}");
    // An exclusive section on a read/write lock's index counts as a write.
    let report = run(
        vec![
            life(1, "10\tstart\ttoken=9\treq=9\n20\tend\ttoken=9\n"),
            life(
                2,
                "30\tstart\ttoken=8\treq=25\trole=read\n40\tend\ttoken=8\n",
            ),
        ],
        vec![],
        &[],
    );
    assert_eq!(report.shared_token_order_violations, 1);
}

#[test]
fn a_reader_that_saw_a_later_writers_write_read_stale() {
    // Reader 10 reads at 12 (seeing writer 8's write) and at 48; writer 12 took the lock
    // at 40 while the reader held it and wrote.
    let logs = |second_read: &str| {
        vec![
            life(
                1,
                &format!(
                    "10\tstart\ttoken=10\treq=9\trole=read\n\
                     12\tread\ttoken=10\tphase=start\tseen=8\n\
                     48\tread\ttoken=10\tphase=end\t{second_read}\n50\tend\ttoken=10\n"
                ),
            ),
            life(
                2,
                "40\tstart\ttoken=12\treq=35\trole=write\n\
                 41\twrite\ttoken=12\tphase=start\toutcome=accepted\n45\tend\ttoken=12\n",
            ),
        ]
    };
    let report = run(logs("seen=12"), vec![], &["0:2:12:start"]);
    assert_eq!(
        kinds(&report),
        [ViolationKind::UnexplainedOverlap, ViolationKind::StaleRead],
        "{report}"
    );
    assert_eq!(report.stale_reads, 1);
    // The stale read shows the reader's section, its read and the writer's section.
    let stale = &report.violations[1];
    assert_eq!(
        stale.events.iter().map(|e| e.at).collect::<Vec<_>>(),
        [10, 50, 48, 40, 45]
    );
    // A pause of the reader across the writer's grant explains both.
    let paused = run(
        logs("seen=12"),
        vec![fault(FaultKind::Pause { worker: 1 }, 15, 47)],
        &[],
    );
    assert!(paused.passed(), "{paused}");
    assert_eq!(
        (paused.explained_stale_reads, paused.explained_overlaps),
        (1, 1)
    );
    // Seeing a token below its own, nothing, or a failed read: fine (the overlap stays).
    for read in ["seen=8", "", "failed=1"] {
        let report = run(logs(read), vec![], &[]);
        assert_eq!(report.stale_reads, 0, "{read}");
        assert_eq!(report.unexplained_overlaps, 1, "{read}");
    }
}

#[test]
fn a_stale_read_of_a_writer_missing_from_the_trace_is_excused_only_by_the_readers_pause() {
    let reader = || {
        vec![life(
            1,
            "10\tstart\ttoken=10\treq=9\trole=read\n48\tread\ttoken=10\tseen=12\n\
             50\tend\ttoken=10\n",
        )]
    };
    assert_eq!(run(reader(), vec![], &[]).stale_reads, 1);
    let paused = run(
        reader(),
        vec![fault(FaultKind::Pause { worker: 1 }, 20, 30)],
        &[],
    );
    assert_eq!(
        (paused.stale_reads, paused.explained_stale_reads),
        (0, 1),
        "{paused}"
    );
    // A read after the section ended (a stale holder's, after its loss) is not judged.
    let after = run(
        vec![life(
            1,
            "10\tstart\ttoken=10\treq=9\trole=read\n30\tlost\ttoken=10\n\
             48\tread\ttoken=10\tseen=12\n50\tend\ttoken=10\n",
        )],
        vec![fault(FaultKind::Reset, 20, 25)],
        &[],
    );
    assert!(after.passed(), "{after}");
}

#[test]
fn writers_writes_are_fenced_as_exclusive_ones() {
    // The resource accepted writer 7's write after writer 9's: a stale write.
    let report = run(
        vec![
            life(
                1,
                "10\tstart\ttoken=7\treq=9\trole=write\n20\tend\ttoken=7\n",
            ),
            life(
                2,
                "30\tstart\ttoken=9\treq=25\trole=write\n40\tend\ttoken=9\n",
            ),
        ],
        vec![],
        &["1:7:start", "2:9:start", "1:7:end"],
    );
    assert_eq!(kinds(&report), [ViolationKind::StaleWriteAccepted]);
}

#[test]
fn a_trace_without_roles_reads_as_exclusive_sections() {
    let trace = |role: &str| {
        format!(
            "{{\"at\":100,\"node\":1,\"event\":\"action-started\",\"token\":7{role}}}\n\
             {{\"at\":300,\"node\":1,\"event\":\"action-ended\",\"token\":7}}\n\
             {{\"at\":200,\"node\":2,\"event\":\"action-started\",\"token\":8{role}}}\n\
             {{\"at\":250,\"node\":2,\"event\":\"action-ended\",\"token\":8}}\n"
        )
    };
    let settings = || Settings {
        lease_us: 1_000_000,
        ..Settings::default()
    };
    let exclusive = check_trace(trace("").as_bytes(), settings()).unwrap();
    assert_eq!(exclusive.unexplained_overlaps, 1);
    let readers = check_trace(trace(",\"role\":\"read\"").as_bytes(), settings()).unwrap();
    assert!(readers.passed(), "{readers}");
    assert_eq!(readers.tallies.read_sections, 2);
    let writers = check_trace(trace(",\"role\":\"write\"").as_bytes(), settings()).unwrap();
    assert_eq!(writers.unexplained_overlaps, 1);
}
