//! The fault proxy does what it says: forwards, drops, delays and resets.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use leader_rig::FaultProxy;

/// An echo server on a free port, one thread per connection.
fn echo_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buffer = [0_u8; 1024];
                while let Ok(read) = stream.read(&mut buffer) {
                    if read == 0 || stream.write_all(&buffer[..read]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn connect(proxy: &FaultProxy) -> TcpStream {
    let stream = TcpStream::connect(proxy.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    stream
}

/// Sends `ping` and reads the echo; `Err` with the read error's kind on failure.
fn ping(stream: &mut TcpStream) -> Result<(), ErrorKind> {
    stream.write_all(b"ping").map_err(|e| e.kind())?;
    let mut answer = [0_u8; 4];
    stream.read_exact(&mut answer).map_err(|e| e.kind())?;
    assert_eq!(&answer, b"ping");
    Ok(())
}

#[test]
fn forwards_blackholes_delays_heals_and_resets() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut stream = connect(&proxy);
    assert_eq!(ping(&mut stream), Ok(()));

    proxy.blackhole();
    let blackholed = ping(&mut stream).unwrap_err();
    assert!(
        matches!(blackholed, ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{blackholed:?}"
    );
    let mut during = connect(&proxy);
    assert!(ping(&mut during).is_err(), "new connections are cut too");

    proxy.heal();
    let mut after = connect(&proxy);
    assert_eq!(ping(&mut after), Ok(()));

    proxy.set_latency(Duration::from_millis(100));
    let started = Instant::now();
    assert_eq!(ping(&mut after), Ok(()));
    assert!(started.elapsed() >= Duration::from_millis(100));
    proxy.heal();

    proxy.reset();
    let mut buffer = [0_u8; 4];
    let reset = after.read(&mut buffer);
    assert!(
        matches!(&reset, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "{reset:?}"
    );
    let mut fresh = connect(&proxy);
    assert_eq!(ping(&mut fresh), Ok(()));
}

/// Sends `message` and reads its echo; `Err` with the read error's kind on failure.
fn say(stream: &mut TcpStream, message: &[u8]) -> Result<(), ErrorKind> {
    stream.write_all(message).map_err(|e| e.kind())?;
    let mut answer = vec![0_u8; message.len()];
    stream.read_exact(&mut answer).map_err(|e| e.kind())?;
    assert_eq!(answer, message);
    Ok(())
}

#[test]
fn blackholes_only_the_connections_whose_client_sent_a_marker_first() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let (mut a, mut b) = (connect(&proxy), connect(&proxy));
    assert_eq!(say(&mut a, b"hello, From: a"), Ok(()));
    assert_eq!(say(&mut b, b"hello, From: b"), Ok(()));

    proxy.blackhole_from(b"From: a");
    assert!(
        say(&mut a, b"again").is_err(),
        "an open connection of a's is cut"
    );
    assert_eq!(say(&mut b, b"again"), Ok(()), "b's passes");
    let mut new_a = connect(&proxy);
    assert!(
        say(&mut new_a, b"hi, From: a").is_err(),
        "a new one of a's too"
    );
    let mut new_b = connect(&proxy);
    assert_eq!(say(&mut new_b, b"hi, From: b"), Ok(()));

    proxy.heal();
    let mut healed = connect(&proxy);
    assert_eq!(say(&mut healed, b"hi, From: a"), Ok(()));
}
