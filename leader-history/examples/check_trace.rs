//! Checks a small hand-written trace with one overlap and one token going back, and prints
//! both violations with their events.
//!
//! `cargo run -p leader-history --example check_trace`

use leader_history::{Settings, check_trace};

/// Node 1 holds lock 0 with token 7 from 100 to 300 µs; node 2 starts with token 8 at 200
/// (an overlap: nothing explains it), then node 3 asks at 400, after both ended, and gets
/// token 6 (a token going back).
const TRACE: &str = r#"
{"at":90,"node":1,"event":"acquire-requested","lock":0}
{"at":100,"node":1,"event":"action-started","lock":0,"token":7}
{"at":300,"node":1,"event":"action-ended","token":7}
{"at":190,"node":2,"event":"acquire-requested","lock":0}
{"at":200,"node":2,"event":"action-started","lock":0,"token":8}
{"at":250,"node":2,"event":"action-ended","token":8}
{"at":400,"node":3,"event":"acquire-requested","lock":0}
{"at":410,"node":3,"event":"acquire-answered","lock":0,"requested":400,"answer":{"answer":"lease","token":6}}
{"at":420,"node":3,"event":"action-started","lock":0,"token":6}
{"at":500,"node":3,"event":"action-ended","token":6}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let settings = Settings {
        backend: "example".into(),
        lease_us: 1_000_000,
        ..Settings::default()
    };
    let report = check_trace(TRACE.as_bytes(), settings)?;
    println!("passed: {}", report.passed());
    for violation in &report.violations {
        println!("{:?}:", violation.kind);
        for event in &violation.events {
            println!("  {}", serde_json::to_string(event)?);
        }
    }
    Ok(())
}
