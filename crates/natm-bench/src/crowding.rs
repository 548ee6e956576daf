//! Whether a run's placement can give a meaningful figure: the threads that poll (the
//! measured application's two ends in poll mode, lab daemons that never sleep) against the
//! CPUs this process may use.
//!
//! natm's pollers back off (natm-nic's `PollBackoff`, the daemons' `GiveWay`), so a
//! crowded machine slows a run down instead of stopping it; but then the figure measures
//! how the scheduler hands CPUs around, not natm, and a reader should be told. This layer
//! only counts and words the warnings; it refuses nothing and measures nothing. The
//! daemons' waits come from the running lab's own configuration files (the lab in the
//! runtime directory, as `natm stat` finds it); a host given as a socket path outside a
//! lab has none, and its daemon is not counted.

use std::path::Path;

use natm_core::IdleWait;

use crate::transport::{NatmTarget, NotifyMode, Placement};

/// A lab daemon as far as crowding goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonWait {
    /// Its node name.
    pub name: String,
    /// How its loop waits.
    pub wait: IdleWait,
    /// The CPU it pins itself to, if any.
    pub cpu: Option<usize>,
}

impl DaemonWait {
    /// Whether it keeps a CPU busy while idle.
    fn polls(&self) -> bool {
        matches!(self.wait, IdleWait::Poll | IdleWait::Yield)
    }
}

/// The daemons of the lab in `dir` and how each waits; empty when no lab is up there (or
/// its files cannot be read: then nothing is known to warn about).
pub fn lab_daemons(dir: &Path) -> Vec<DaemonWait> {
    let Ok(state) = natm_lab::load_state(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in state.daemons {
        let Ok(text) = std::fs::read_to_string(&d.config) else {
            continue;
        };
        let (wait, cpu) = if d.role == "switch" {
            match natm_switchd::config::SwitchdConfig::from_toml(&text) {
                Ok(c) => (c.wait, c.cpu),
                Err(_) => continue,
            }
        } else {
            match natm_host::hostd::HostdConfig::from_toml(&text) {
                Ok(c) => (c.wait, None),
                Err(_) => continue,
            }
        };
        out.push(DaemonWait {
            name: d.name,
            wait,
            cpu,
        });
    }
    out
}

/// The warnings for a natm run placed as `placement` on `cpus` (the CPUs this process may
/// use), the application waiting as `natm` says, beside `daemons`. Empty when the pollers
/// have CPUs enough.
pub fn warnings(
    cpus: &[usize],
    placement: &Placement,
    natm: &NatmTarget,
    daemons: &[DaemonWait],
) -> Vec<String> {
    let mut out = Vec::new();
    let app_polls = natm.mode == NotifyMode::Poll;
    let mut pollers: Vec<String> = Vec::new();
    if app_polls {
        pollers.push("client".into());
        pollers.push("server".into());
    }
    pollers.extend(
        daemons
            .iter()
            .filter(|d| d.polls())
            .map(|d| format!("{} (wait = \"{}\")", d.name, d.wait)),
    );
    if !cpus.is_empty() && pollers.len() > cpus.len() {
        out.push(format!(
            "{} polling threads ({}) on {} CPU{}: figures measure the scheduler, not natm",
            pollers.len(),
            pollers.join(", "),
            cpus.len(),
            if cpus.len() == 1 { "" } else { "s" }
        ));
    }
    if app_polls
        && let (Some(c), Some(s)) = (placement.client, placement.server)
        && c == s
    {
        out.push(format!(
            "the client and the server both poll on CPU {c}: they take turns by yielding, so \
             figures include the scheduler's hand-overs"
        ));
    }
    let pinned_apps = [("client", placement.client), ("server", placement.server)];
    for d in daemons.iter().filter(|d| d.polls()) {
        let Some(dc) = d.cpu else { continue };
        for (who, cpu) in pinned_apps {
            if app_polls && cpu == Some(dc) {
                out.push(format!(
                    "{} polls pinned to CPU {dc}, where the {who} polls too",
                    d.name
                ));
            }
        }
    }
    out
}

/// The warnings for a run of `natm` placed as `placement`, beside the lab in the runtime
/// directory; printed on stderr by the caller and kept in the report.
pub fn for_run(placement: &Placement, natm: Option<&NatmTarget>) -> Vec<String> {
    let Some(natm) = natm else {
        return Vec::new();
    };
    let cpus = natm_nic::sched::allowed_cpus().unwrap_or_default();
    let daemons = lab_daemons(&natm_lab::runtime_dir(None));
    warnings(&cpus, placement, natm, &daemons)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::DataPath;

    fn target(mode: NotifyMode) -> NatmTarget {
        NatmTarget {
            vc: "0.100".parse().unwrap(),
            qos: "ubr".parse().unwrap(),
            mode,
            path: DataPath::Direct,
            client_host: "h1".into(),
            server_host: "h2".into(),
            svc: false,
        }
    }

    fn daemon(name: &str, wait: IdleWait, cpu: Option<usize>) -> DaemonWait {
        DaemonWait {
            name: name.into(),
            wait,
            cpu,
        }
    }

    const APART: Placement = Placement {
        client: Some(0),
        server: Some(1),
    };
    const TOGETHER: Placement = Placement {
        client: Some(0),
        server: Some(0),
    };

    #[test]
    fn pollers_with_a_cpu_each_get_no_warning() {
        let adaptive = [
            daemon("s1", IdleWait::Adaptive, None),
            daemon("h1", IdleWait::Adaptive, None),
        ];
        assert!(warnings(&[0, 1], &APART, &target(NotifyMode::Poll), &adaptive).is_empty());
        // Nobody polls: any placement is fine.
        let w = warnings(&[0], &TOGETHER, &target(NotifyMode::Adaptive), &adaptive);
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn more_pollers_than_cpus_are_named() {
        let daemons = [
            daemon("s1", IdleWait::Poll, None),
            daemon("h1", IdleWait::Adaptive, None),
            daemon("h2", IdleWait::Yield, None),
        ];
        let w = warnings(&[0, 1], &APART, &target(NotifyMode::Poll), &daemons);
        assert_eq!(
            w,
            [
                "4 polling threads (client, server, s1 (wait = \"poll\"), h2 (wait = \"yield\")) \
                 on 2 CPUs: figures measure the scheduler, not natm"
            ]
        );
        // Daemons alone can crowd an adaptive application's machine too.
        let w = warnings(&[0], &APART, &target(NotifyMode::Adaptive), &daemons);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("2 polling threads (s1"), "{w:?}");
    }

    #[test]
    fn two_polling_ends_on_one_cpu_are_told() {
        let w = warnings(&[0, 1], &TOGETHER, &target(NotifyMode::Poll), &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("both poll on CPU 0"), "{w:?}");
    }

    #[test]
    fn a_polling_daemon_pinned_under_a_polling_end_is_told() {
        let daemons = [daemon("s1", IdleWait::Poll, Some(1))];
        let w = warnings(&[0, 1, 2, 3], &APART, &target(NotifyMode::Poll), &daemons);
        assert_eq!(w, ["s1 polls pinned to CPU 1, where the server polls too"]);
        let w = warnings(
            &[0, 1, 2, 3],
            &APART,
            &target(NotifyMode::Adaptive),
            &daemons,
        );
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn a_lab_s_daemon_waits_are_read_from_its_files() {
        let dir = std::env::temp_dir().join(format!("natm-crowding-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(lab_daemons(&dir).is_empty(), "no lab");
        let host = dir.join("h1.toml");
        std::fs::write(
            &host,
            "name = \"h1\"\nwait = \"poll\"\n\n[link]\nkind = \"shm\"\npath = \"/x.sock\"\n",
        )
        .unwrap();
        let state = natm_lab::LabState {
            dir: dir.clone(),
            daemons: vec![natm_lab::Daemon {
                name: "h1".into(),
                role: "host".into(),
                pid: 1,
                socket: dir.join("h1.sock"),
                config: host,
                log: dir.join("h1.log"),
                address: None,
                prefix: None,
            }],
            topology: String::new(),
            rate: None,
        };
        std::fs::write(dir.join("lab.json"), serde_json::to_string(&state).unwrap()).unwrap();
        let found = lab_daemons(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [daemon("h1", IdleWait::Poll, None)]);
    }
}
