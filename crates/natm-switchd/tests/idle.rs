//! An idle daemon sleeps: with hosts attached and no traffic it uses a small fraction of a
//! CPU, and so it does once traffic has come and gone; with `wait = "poll"` it never sleeps
//! (it blocks in no system call, counted as voluntary context switches, while the adaptive
//! one does many times: which shows the measurement can tell). A polling daemon gives way
//! (`sched_yield`) after every idle pass, so its CPU share is whatever the machine's other
//! work leaves it: under a full test run, 1 %. Its own test binary, so no other test's
//! threads share the process's CPU time.

mod common;

use std::time::{Duration, Instant};

use natm_link::CELL_LEN;
use natm_link::endpoint::LinkConfig;

use common::{Daemon, T, TempDir, cell};

/// This process's user + system CPU time, from /proc/self/stat (clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Times this process's threads blocked (slept in a system call) so far: the sum of their
/// `voluntary_ctxt_switches`. A yield is not one (the thread stays runnable).
fn sleeps() -> u64 {
    let mut n = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue; // a thread that ended meanwhile
        };
        n += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    n
}

/// The CPU share of the process over `window` while a daemon with two idle hosts runs,
/// after `cells` cells went from the first host to the second, and how many times its
/// threads slept meanwhile (the test's own sleep is one).
fn idle_share(wait: &str, name: &str, cells: usize) -> (f64, u64) {
    let dir = TempDir::new(&format!("idle-{name}"));
    let link = |n: u32| {
        format!(
            "kind = \"shm\"\npath = {:?}",
            dir.0.join(format!("p{n}.sock"))
        )
    };
    let text = format!(
        "name = \"idle\"\nmanagement = {:?}\nwait = \"{wait}\"\n\n[[port]]\nid = 1\n{}\n\n\
         [[port]]\nid = 2\n{}\n\n[[xc]]\na = \"1:0.100\"\nb = \"2:0.100\"\nqos = \"ubr\"\n",
        dir.0.join("m.sock"),
        link(1),
        link(2)
    );
    let daemon = Daemon::start(&text);
    let mut h1 = LinkConfig::from_toml(&link(1)).unwrap().connect(T).unwrap();
    let mut h2 = LinkConfig::from_toml(&link(2)).unwrap().connect(T).unwrap();
    daemon.wait_all_up();
    // One cell at a time, each after the daemon fell asleep: each wakes it through the
    // eventfd, which it must drain before it can sleep again.
    let mut buf = [[0u8; CELL_LEN]; 4];
    for i in 0..cells {
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(
            h1.send_cells_timeout(&[cell(i as u64)], Some(T)).unwrap(),
            1
        );
        let n = h2.recv_cells_timeout(&mut buf, Some(T)).unwrap();
        assert_eq!(n, 1, "cell {i} within {T:?}");
    }
    let window = Duration::from_millis(800);
    let s0 = sleeps();
    let (c0, t0) = (cpu_time(), Instant::now());
    std::thread::sleep(window);
    let share = (cpu_time() - c0).as_secs_f64() / t0.elapsed().as_secs_f64();
    let slept = sleeps() - s0;
    daemon.stop();
    drop((h1, h2));
    (share, slept)
}

// One test, so that no other daemon runs in this process while one is measured.
#[test]
fn an_idle_daemon_sleeps_before_and_after_traffic_and_a_polling_one_spins() {
    let (idle, idle_sleeps) = idle_share("adaptive", "adaptive", 0);
    assert!(
        idle < 0.10,
        "idle daemon used {:.0}% of a CPU",
        idle * 100.0
    );
    // A daemon whose links stopped announcing its sleep (the arming step's
    // `set_spinning(false)` left out) leaves the first kick in the eventfd, and every
    // `poll(2)` after it returns at once: it spins.
    let (after, _) = idle_share("adaptive", "after-cells", 20);
    assert!(
        after < 0.10,
        "the daemon used {:.0}% of a CPU once traffic stopped",
        after * 100.0
    );
    // The adaptive daemon sleeps at most MAX_SLEEP (20 ms) at a time: 40 sleeps in the
    // window, and the polling one none (the test's own sleep and a thread or two ending
    // are the few allowed).
    assert!(
        idle_sleeps >= 20,
        "the idle adaptive daemon slept only {idle_sleeps} times in 800 ms"
    );
    let (_, poll_sleeps) = idle_share("poll", "poll", 0);
    assert!(
        poll_sleeps <= 4,
        "wait = \"poll\" slept {poll_sleeps} times in 800 ms"
    );
}
