//! The `--metrics ADDR` endpoint of `softswitch` and `sgnn-hostd`: a thread on a
//! `std::net::TcpListener` answering one request per connection. `GET /metrics` (or `HEAD`)
//! gets `render()`'s text in the OpenMetrics exposition format; any other path is 404, any
//! other method 405. The binaries build their text with `prometheus-client`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Content type of the exposition (`prometheus-client` writes OpenMetrics text, which
/// Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `addr` from a thread named `metrics`, answering `GET /metrics` with `render()`.
/// Returns the bound address (port 0 picks a free one).
pub fn serve(
    addr: SocketAddr,
    render: impl Fn() -> String + Send + 'static,
) -> io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            // A scraper that misbehaves costs one connection, never the thread.
            for s in listener.incoming().flatten() {
                let _ = answer(s, &render);
            }
        })?;
    Ok(local)
}

/// Reads one request's head and writes the answer (the connection is then closed).
fn answer(mut s: TcpStream, render: &dyn Fn() -> String) -> io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 << 10 {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", CONTENT_TYPE, render()),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: the metrics are on /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_string(),
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(body.as_bytes());
    }
    s.write_all(&out)?;
    s.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, req: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn metrics_404_and_405() {
        let addr = serve("127.0.0.1:0".parse().unwrap(), || "x_total 1\n".into()).unwrap();
        let ok = get(addr, "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
        assert!(
            ok.starts_with("HTTP/1.1 200 OK") && ok.ends_with("x_total 1\n"),
            "{ok}"
        );
        assert!(ok.contains(CONTENT_TYPE));
        let head = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200 OK") && !head.contains("x_total"));
        assert!(get(addr, "GET /other HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    }
}
