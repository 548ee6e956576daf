//! Only the daemon's own uid (or root) may use the management socket. Run as root, the
//! test asks as user `nobody` (65534) from a child process (this test binary, re-run with
//! an environment variable) and must be refused; as any other user it cannot change uid,
//! and checks that its own uid is served.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use common::{Daemon, TempDir};

const CHILD_ENV: &str = "NATM_SWITCHD_PEERCRED_CHILD";

/// Sends a status request and prints the reply line.
fn ask(path: &Path) -> String {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A refused peer may find the socket closed before it writes (the daemon answers and
    // hangs up at accept): the refusal is still there to read.
    let _ = s.write_all(b"{\"op\":\"status\"}\n");
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    line
}

#[test]
fn another_users_requests_are_refused() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        print!("{}", ask(Path::new(&path)));
        return;
    }
    let dir = TempDir::new("cred");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mgmt = dir.0.join("m.sock");
    let daemon = Daemon::start(&format!("name = \"s\"\nmanagement = {mgmt:?}\n"));
    // The daemon's own user is served.
    assert!(ask(&mgmt).contains("\"ok\":true"));
    if rustix::process::getuid().is_root() {
        // Let the file system allow anyone, so only the daemon's own check can refuse.
        std::fs::set_permissions(&mgmt, std::fs::Permissions::from_mode(0o777)).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "another_users_requests_are_refused",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &mgmt)
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("\"ok\":false") && text.contains("permission denied"),
            "as nobody: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    daemon.stop();
}
