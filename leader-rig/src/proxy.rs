//! [`FaultProxy`]: a TCP proxy between clients and a server that cuts, delays and resets
//! the traffic on demand, for partition tests without killing the server.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

/// A TCP proxy on a free loopback port, forwarding to one upstream server.
///
/// | call | what the clients see |
/// |---|---|
/// | [`blackhole`](Self::blackhole) | connections are accepted, every byte either way is dropped: requests never answered (a partition) |
/// | [`blackhole_from`](Self::blackhole_from) | the same, only for the connections whose client sent a marker in its first bytes (one client of several: an etcd member names itself in a header) |
/// | [`reset`](Self::reset) | every open connection is reset (RST) |
/// | [`set_latency`](Self::set_latency) | each chunk is delivered that much later |
/// | [`heal`](Self::heal) | traffic flows again, without added latency (bytes dropped meanwhile stay lost) |
///
/// It runs on a tokio runtime of its own, so blocking tests can use it; dropping it stops
/// it and closes every connection.
///
/// # Examples
///
/// ```no_run
/// use leader_rig::FaultProxy;
///
/// let proxy = FaultProxy::start("127.0.0.1:6379".parse()?)?;
/// let url = format!("redis://{}/", proxy.addr()); // point the client here
/// proxy.blackhole(); // a partition
/// proxy.heal();
/// # let _ = url;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    faults: Arc<Faults>,
    runtime: Option<Runtime>,
}

#[derive(Debug, Default)]
struct Faults {
    blackhole: AtomicBool,
    /// Connections whose first bytes from the client hold one of these are blackholed.
    cut_markers: Mutex<Vec<Vec<u8>>>,
    latency_micros: AtomicU64,
    reset: Notify,
}

impl Faults {
    /// Whether the bytes of a connection whose client's first bytes were `first` are
    /// dropped now.
    fn drops(&self, first: &OnceLock<Vec<u8>>) -> bool {
        if self.blackhole.load(Ordering::SeqCst) {
            return true;
        }
        let Some(first) = first.get() else {
            return false;
        };
        let markers = self
            .cut_markers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        markers.iter().any(|marker| {
            !marker.is_empty()
                && first
                    .windows(marker.len())
                    .any(|window| window == &marker[..])
        })
    }
}

impl FaultProxy {
    /// Starts a proxy to `upstream` on a free port of 127.0.0.1.
    ///
    /// # Errors
    ///
    /// When the runtime cannot start or no port can be bound.
    pub fn start(upstream: SocketAddr) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fault-proxy")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))?;
        let addr = listener.local_addr()?;
        let faults = Arc::new(Faults::default());
        runtime.spawn(accept(listener, upstream, Arc::clone(&faults)));
        Ok(FaultProxy {
            addr,
            faults,
            runtime: Some(runtime),
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Drops every byte either way, on open connections and new ones.
    pub fn blackhole(&self) {
        self.faults.blackhole.store(true, Ordering::SeqCst);
    }

    /// Drops every byte either way on the connections, open ones and new ones, whose
    /// client's first bytes (its first read, up to 16 KiB) contain `marker`: a partition
    /// of one client from the server while others still pass. Markers add up until
    /// [`heal`](Self::heal).
    pub fn blackhole_from(&self, marker: &[u8]) {
        self.faults
            .cut_markers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(marker.to_vec());
    }

    /// Resets every open connection.
    pub fn reset(&self) {
        self.faults.reset.notify_waiters();
    }

    /// Delays every chunk by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.faults.latency_micros.store(micros, Ordering::SeqCst);
    }

    /// Forwards normally again: no blackhole (of any marker), no latency.
    pub fn heal(&self) {
        self.faults.blackhole.store(false, Ordering::SeqCst);
        self.faults
            .cut_markers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.faults.latency_micros.store(0, Ordering::SeqCst);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, faults: Arc<Faults>) {
    while let Ok((client, _)) = listener.accept().await {
        tokio::spawn(serve(client, upstream, Arc::clone(&faults)));
    }
}

/// Relays one connection both ways until either side closes or a reset is asked for.
async fn serve(mut client: TcpStream, upstream: SocketAddr, faults: Arc<Faults>) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let reset = faults.reset.notified();
    tokio::pin!(reset);
    reset.as_mut().enable();
    // The client's first bytes, for the markers of `blackhole_from`.
    let first = OnceLock::new();
    let was_reset = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        tokio::select! {
            () = pump(client_read, server_write, &faults, &first, true) => false,
            () = pump(server_read, client_write, &faults, &first, false) => false,
            () = reset => true,
        }
    };
    if was_reset {
        // Closed with linger zero, the sockets send RST instead of FIN.
        let _ = client.set_zero_linger();
        let _ = server.set_zero_linger();
    }
}

/// Copies `from` to `to`, honouring the faults, until `from` closes or `to` fails; the
/// first bytes read go to `first` when `from_client`.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    faults: &Faults,
    first: &OnceLock<Vec<u8>>,
    from_client: bool,
) {
    let mut buffer = vec![0_u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let latency = faults.latency_micros.load(Ordering::SeqCst);
        if latency > 0 {
            tokio::time::sleep(Duration::from_micros(latency)).await;
        }
        if from_client {
            let _ = first.set(buffer[..read].to_vec());
        }
        if faults.drops(first) {
            continue;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}
