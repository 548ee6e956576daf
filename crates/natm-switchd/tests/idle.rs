//! An idle daemon sleeps: with hosts attached and no traffic it uses a small fraction of a
//! CPU, and with `wait = "poll"` it spins (which shows the measurement can tell). Its own
//! test binary, so no other test's threads share the process's CPU time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use natm_link::endpoint::LinkConfig;
use natm_switchd::{SwitchdConfig, client};
use serde_json::json;

const T: Duration = Duration::from_secs(10);

/// This process's user + system CPU time, from /proc/self/stat (clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// The CPU share of the process over `window` while a daemon with two idle hosts runs.
fn idle_share(wait: &str, name: &str) -> f64 {
    let dir = std::env::temp_dir().join(format!("natm-switchd-idle-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let link = |n: u32| {
        format!(
            "kind = \"shm\"\npath = {:?}",
            dir.join(format!("p{n}.sock"))
        )
    };
    let text = format!(
        "name = \"idle\"\nmanagement = {:?}\nwait = \"{wait}\"\n\n[[port]]\nid = 1\n{}\n\n\
         [[port]]\nid = 2\n{}\n\n[[xc]]\na = \"1:0.100\"\nb = \"2:0.100\"\nqos = \"ubr\"\n",
        dir.join("m.sock"),
        link(1),
        link(2)
    );
    let config = SwitchdConfig::from_toml(&text).unwrap();
    let mgmt = config.management.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let daemon = std::thread::spawn(move || natm_switchd::run(config, s));
    let h1 = LinkConfig::from_toml(&link(1)).unwrap().connect(T).unwrap();
    let h2 = LinkConfig::from_toml(&link(2)).unwrap().connect(T).unwrap();
    let deadline = Instant::now() + T;
    loop {
        let s = client::request(&mgmt, &json!({"op": "status"}), T).unwrap();
        if s["ports"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["up"] == true)
        {
            break;
        }
        assert!(Instant::now() < deadline, "hosts never attached");
        std::thread::sleep(Duration::from_millis(5));
    }
    let window = Duration::from_millis(800);
    let (c0, t0) = (cpu_time(), Instant::now());
    std::thread::sleep(window);
    let share = (cpu_time() - c0).as_secs_f64() / t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Release);
    daemon.join().unwrap().unwrap();
    drop((h1, h2));
    let _ = std::fs::remove_dir_all(&dir);
    share
}

#[test]
fn an_idle_daemon_sleeps_and_a_polling_one_spins() {
    let idle = idle_share("adaptive", "adaptive");
    assert!(
        idle < 0.10,
        "idle daemon used {:.0}% of a CPU",
        idle * 100.0
    );
    let spinning = idle_share("poll", "poll");
    assert!(
        spinning > 0.5,
        "wait = \"poll\" used only {:.0}% of a CPU",
        spinning * 100.0
    );
}
